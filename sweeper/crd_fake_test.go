package sweeper

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// TestCRDDeleteTakesItsCustomResourcesAsKept drives Engine.Run through the delete of a
// CustomResourceDefinition, which takes its custom resources with it (Applier.take): the CRD is
// read in full right before (a CRD that changed since it was observed has won a race: re-planned,
// or left if re-created), its custom resources are listed into its pre-image, listed again right
// before the delete, and the delete is sent only if they are the same ones (count, then UIDs and
// resourceVersions), with the UID and resourceVersion of the CRD as read as Preconditions. As
// test/integration's TestRestoreUndoesEverySweepAction and
// TestCRDDeleteStopsWhenItsCustomResourcesChange show on a real API server; here, every way it
// ends, in milliseconds.
func TestCRDDeleteTakesItsCustomResourcesAsKept(t *testing.T) {
	const ns = "shop"
	crdName := widgets.Resource + "." + widgets.Group
	annotate := func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"touched": "yes"}) }
	tests := []struct {
		name string
		crd  *unstructured.Unstructured
		// customResources are the widgets, in namespace shop.
		customResources []string
		// onList sees each list of the custom resources through the dynamic client (the engine's:
		// to keep them, then to count them again), numbered from 1, before the server answers it.
		onList func(c *fakeCluster, n int) error
		// onRead sees each read of the CRD in full (the one right before the delete), numbered
		// from 1, before the server answers it.
		onRead func(c *fakeCluster, n int) error
		// onDelete sees each delete of the CRD, numbered from 1, before the server does.
		onDelete func(c *fakeCluster, n int) error

		wantOutcome   report.Outcome
		wantReason    report.Reason
		wantDetail    string
		wantEvidence  string
		wantReplanned bool
		// wantKept is how many custom resources the CRD's pre-image holds; nil if none was kept.
		wantKept *int
		// wantLists are the engine's lists of the custom resources; wantDeletes, the deletes sent.
		wantLists, wantDeletes int
		wantGone               bool
	}{{
		name:            "with custom resources: kept with its pre-image, counted again, the delete sent with the UID and resourceVersion read",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a", "b"},
		wantOutcome:     report.OutcomeApplied,
		wantEvidence:    "its 2 custom resources, kept with its pre-image and counted again right before the delete, are deleted with it",
		wantKept:        ptr.To(2), wantLists: 2, wantDeletes: 1, wantGone: true,
	}, {
		name:         "without custom resources: counted again, the delete sent",
		crd:          widgetsCRD(withLabels("delete", "yes")),
		wantOutcome:  report.OutcomeApplied,
		wantEvidence: "it has no custom resources (counted again right before the delete)",
		wantKept:     ptr.To(0), wantLists: 2, wantDeletes: 1, wantGone: true,
	}, {
		name:            "a custom resource created while they were kept: stale, the delete not sent",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a", "b"},
		onList: func(c *fakeCluster, n int) error {
			if n != 2 {
				return nil
			}
			return c.create(fakeObject(widgets, ns, "c"))
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonStale,
		wantDetail: "its custom resources changed while they were kept (2, then 3 right before the delete)",
		wantKept:   ptr.To(2), wantLists: 2,
	}, {
		name:            "one deleted and another created while they were kept, the count the same: stale, the delete not sent",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a", "b"},
		onList: func(c *fakeCluster, n int) error {
			if n != 2 {
				return nil
			}
			if err := c.remove(widgets, ns, "b"); err != nil {
				return err
			}
			return c.create(fakeObject(widgets, ns, "c"))
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonStale,
		wantDetail: "its custom resources changed while they were kept (2, one replaced or updated since",
		wantKept:   ptr.To(2), wantLists: 2,
	}, {
		name:            "one updated while they were kept: stale, the delete not sent",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a", "b"},
		onList: func(c *fakeCluster, n int) error {
			if n != 2 {
				return nil
			}
			return c.change(widgets, ns, "a", annotate)
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonStale,
		wantDetail: "its custom resources changed while they were kept (2, one replaced or updated since",
		wantKept:   ptr.To(2), wantLists: 2,
	}, {
		name:            "the CRD changed after it was observed, found so by the read right before: nothing sent for the old, re-planned, kept, deleted",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a"},
		onRead: func(c *fakeCluster, n int) error {
			if n != 1 {
				return nil
			}
			return c.change(rules.CustomResourceDefinitions, "", crdName, annotate)
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true,
		wantKept: ptr.To(1), wantLists: 2, wantDeletes: 1, wantGone: true,
	}, {
		name:            "the CRD changed so that the rule no longer deletes it: nothing sent",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a"},
		onRead: func(c *fakeCluster, n int) error {
			if n != 1 {
				return nil
			}
			return c.change(rules.CustomResourceDefinitions, "", crdName, withLabels("delete", "no"))
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved, wantReplanned: true,
		wantDetail: "the rule no longer plans an action for it",
	}, {
		name:            "the CRD deleted and re-created after it was observed: the new one is the next run's",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a"},
		onRead: func(c *fakeCluster, n int) error {
			if n != 1 {
				return nil
			}
			return c.replace(rules.CustomResourceDefinitions, "", crdName)
		},
		wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved, wantReplanned: true,
		wantDetail: "deleted and re-created",
	}, {
		name:            "the delete loses the race on the server (409 of its resourceVersion): re-planned, kept and counted again, sent again",
		crd:             widgetsCRD(withLabels("delete", "yes")),
		customResources: []string{"a"},
		onDelete: func(c *fakeCluster, n int) error {
			if n != 1 {
				return nil
			}
			return c.change(rules.CustomResourceDefinitions, "", crdName, annotate)
		},
		wantOutcome: report.OutcomeApplied, wantReplanned: true,
		wantKept: ptr.To(1), wantLists: 4, wantDeletes: 2, wantGone: true,
	}, {
		name: "a CRD that serves no version: its custom resources cannot be kept, the delete not sent",
		crd: widgetsCRD(withLabels("delete", "yes"), func(u *unstructured.Unstructured) {
			u.Object["spec"].(map[string]any)["versions"] = []any{map[string]any{"name": "v1", "served": false, "storage": true}}
		}),
		customResources: []string{"a"},
		wantOutcome:     report.OutcomeFailed, wantReason: report.ReasonBackup,
		wantDetail: "CustomResourceDefinition widgets.example.com serves no version: its custom resources cannot be read",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []*unstructured.Unstructured{tt.crd, fakeObject(rules.Namespaces, "", ns)}
			for _, name := range tt.customResources {
				objects = append(objects, fakeObject(widgets, ns, name))
			}
			c := newFakeCluster(t, objects...)
			hooks := []struct {
				fake     *clienttesting.Fake
				verb     string
				resource string
				hook     func(*fakeCluster, int) error
			}{
				{&c.dynamic.Fake, "list", widgets.Resource, tt.onList},
				{&c.dynamic.Fake, "get", rules.CustomResourceDefinitions.Resource, tt.onRead},
				{&c.metadata.Fake, "delete", rules.CustomResourceDefinitions.Resource, tt.onDelete},
			}
			// live are the CRD's UID and resourceVersion when each delete reaches the server.
			var live []*metav1.Preconditions
			for _, h := range hooks {
				n := 0 // each fake serves one request at a time
				h.fake.PrependReactor(h.verb, h.resource, func(clienttesting.Action) (bool, runtime.Object, error) {
					n++
					if h.verb == "delete" {
						var now *metav1.Preconditions // nil if there is no CRD
						if obj, err := c.store.Get(rules.CustomResourceDefinitions.GroupVersionResource, "", crdName); err == nil {
							u := obj.(*unstructured.Unstructured)
							now = &metav1.Preconditions{UID: ptr.To(u.GetUID()), ResourceVersion: ptr.To(u.GetResourceVersion())}
						}
						live = append(live, now)
					}
					if h.hook == nil {
						return false, nil, nil
					}
					return false, nil, h.hook(c, n)
				})
			}

			e := c.engine(t, nil, deleteRuleOf(rules.CustomResourceDefinitions))
			r := runFor(t, e)
			require.Empty(t, r.Errors)
			f := findingOf(t, r, crdName)
			assertResult(t, f, tt.wantOutcome, tt.wantReason, tt.wantDetail, tt.wantReplanned, tt.wantEvidence)
			if tt.wantKept == nil {
				assert.Nil(t, f.Before, "nothing kept")
			} else if assert.NotNil(t, f.Before) {
				assert.Equal(t, *tt.wantKept, f.Before.CustomResources, "custom resources kept with the pre-image")
				// The body kept is the CRD, then the custom resources as they were listed to keep.
				want := []string{"CustomResourceDefinition /" + crdName}
				for _, name := range tt.customResources {
					want = append(want, "Widget "+ns+"/"+name)
				}
				assert.Equal(t, want, keptBody(t, e.Config.BackupDir, f.Before))
			}
			lists := 0
			for _, a := range c.dynamic.Actions() {
				if a.GetVerb() == "list" && a.GetResource() == widgets.GroupVersionResource {
					lists++
				}
			}
			assert.Equal(t, tt.wantLists, lists, "lists of the custom resources")

			// Each delete carries, as Preconditions, the CRD's UID and resourceVersion as it was
			// read right before: the object on the server when it arrived, unless it lost a race.
			var deletes []*metav1.Preconditions
			for _, w := range c.sentWrites() {
				require.Equal(t, "delete", w.verb)
				require.Equal(t, rules.CustomResourceDefinitions.GroupVersionResource, w.resource)
				deletes = append(deletes, w.preconditions)
			}
			require.Len(t, deletes, tt.wantDeletes)
			assert.Equal(t, live, deletes, "the UID and resourceVersion read right before each delete")
			now := c.get(t, rules.CustomResourceDefinitions, "", crdName)
			if tt.wantGone {
				assert.Nil(t, now, "the CRD is deleted")
				return
			}
			assert.NotNil(t, now, "the CRD stays")
		})
	}
}

// keptBody are the objects of a pre-image's body kept in the files of dir (--backup-dir), as
// "kind namespace/name", in order.
func keptBody(t *testing.T, dir string, pre *report.PreImage) []string {
	t.Helper()
	file, ok := strings.CutPrefix(pre.Kept, "file:")
	require.True(t, ok, "kept in a file: %s", pre.Kept)
	paths, err := filepath.Glob(filepath.Join(dir, backup.RunDirPrefix+"*", file))
	require.NoError(t, err)
	require.Len(t, paths, 1, "%s in %s", file, dir)
	data, err := os.Open(paths[0])
	require.NoError(t, err)
	defer data.Close()
	body, err := report.NewBodyReader(data, pre.SHA256)
	require.NoError(t, err)
	var out []string
	for {
		obj, err := body.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
	}
}
