package sweeper

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// deleteRuleOf deletes every object of resource labelled delete=yes.
func deleteRuleOf(resource rules.Resource) testRule {
	return testRule{name: "delete-" + resource.Resource, plan: func(view *rules.View) []rules.Finding {
		var out []rules.Finding
		for _, obj := range view.List(resource.GroupResource()) {
			if obj.Labels["delete"] == "yes" {
				out = append(out, rules.Finding{Severity: rules.SeverityWarning, Object: obj.Ref(), Reason: "left behind", Action: rules.Delete{}})
			}
		}
		return out
	}}
}

// disownRule drops, from every widget, its ownerReference to owner.
func disownRule(owner types.UID) testRule {
	return testRule{name: "disown", plan: func(view *rules.View) []rules.Finding {
		var out []rules.Finding
		for _, obj := range view.List(widgets.GroupResource()) {
			if slices.ContainsFunc(obj.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == owner }) {
				out = append(out, rules.Finding{Severity: rules.SeverityWarning, Object: obj.Ref(), Reason: "its owner is gone",
					Action: rules.SetOwnerReferences{Remove: []types.UID{owner}}})
			}
		}
		return out
	}}
}

// widgetsCRD is the CustomResourceDefinition of the widgets, serving and storing v1, changed by
// mutate.
func widgetsCRD(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	spec := func(u *unstructured.Unstructured) {
		u.Object["spec"] = map[string]any{"group": widgets.Group, "scope": "Namespaced",
			"names":    map[string]any{"plural": widgets.Resource, "kind": widgets.Kind},
			"versions": []any{map[string]any{"name": widgets.Version, "served": true, "storage": true}}}
	}
	return fakeObject(rules.CustomResourceDefinitions, "", widgets.Resource+"."+widgets.Group, append([]func(*unstructured.Unstructured){spec}, mutate...)...)
}

// stored is everything the fake cluster holds, by resource, namespace and name.
func (c *fakeCluster) stored(t *testing.T) map[string]unstructured.Unstructured {
	t.Helper()
	out := map[string]unstructured.Unstructured{}
	for _, r := range fakeResources {
		list, err := c.list(r.GroupVersionResource, "", nil)
		require.NoError(t, err)
		for _, item := range list.Items {
			out[r.Resource+" "+item.GetNamespace()+"/"+item.GetName()] = item
		}
	}
	return out
}

// TestEveryWriteCarriesDryRunAndPreconditions drives Engine.Run through each write a sweep sends
// (a release of finalizers, a change of ownerReferences, a delete, a CustomResourceDefinition's
// delete; a write sent again after its answer was lost), in both modes that send writes, and
// checks every request as the engine handed it to the client (recordingMetadata: the metadata
// fake itself drops a patch's options). --dry-run=server: each asks for dryRun=All, and the
// cluster is left exactly as it was; --dry-run=none: none does, and each is done. In both, each
// carries the precondition of its type (docs/safety.md), from the object as observed: a release
// tests the UID and the finalizers; an owner change, the resourceVersion; a delete has the UID and
// the resourceVersion as Preconditions. The API server checks them on a dry run too, so a
// server-side dry run says what the real run would.
func TestEveryWriteCarriesDryRunAndPreconditions(t *testing.T) {
	const ns = "shop"
	deadOwner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Gadget", Name: "gone", UID: "gadget--gone"}
	liveOwner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Gadget", Name: "g", UID: fakeUID(gadgets, "", "g")}
	crd := widgetsCRD(withLabels("delete", "yes"))
	tests := []struct {
		name     string
		rule     testRule
		object   *unstructured.Unstructured // the one written
		resource rules.Resource
		// others are objects besides it; react, if set, sees each write to it, numbered from 1,
		// before the server does.
		others []*unstructured.Unstructured
		react  onWrite
		verb   string
		// writes is how many requests are sent.
		writes int
		// wantTests are a patch's test operations, by path, for the object as observed; nil for a
		// delete, whose Preconditions are its UID and resourceVersion as observed.
		wantTests func(observed *unstructured.Unstructured) map[string]any
		// done checks the object after a real run.
		done func(t *testing.T, now *unstructured.Unstructured)
	}{{
		name:     "release of finalizers: a JSON patch testing the UID, the resourceVersion and the finalizers",
		rule:     releaseRule(operatorAbsent),
		object:   fakeObject(widgets, ns, "w", withFinalizers(gone, keep)),
		resource: widgets, verb: "patch", writes: 1,
		wantTests: func(o *unstructured.Unstructured) map[string]any {
			return map[string]any{"/metadata/uid": string(o.GetUID()), "/metadata/resourceVersion": o.GetResourceVersion(), "/metadata/finalizers": toAny(o.GetFinalizers())}
		},
		done: func(t *testing.T, now *unstructured.Unstructured) {
			require.NotNil(t, now)
			assert.Equal(t, []string{keep}, now.GetFinalizers())
		},
	}, {
		name:   "release whose first answer was lost (time-out): re-read, re-planned, sent again, each time as the first",
		rule:   releaseRule(operatorAbsent),
		object: fakeObject(widgets, ns, "w", withFinalizers(gone, keep)),
		react: func(_ *fakeCluster, n int, _ clienttesting.Action) (bool, runtime.Object, error) {
			if n > 1 {
				return false, nil, nil
			}
			return true, nil, apierrors.NewTimeoutError("request did not complete within 1m0s", 0)
		},
		resource: widgets, verb: "patch", writes: 2,
		wantTests: func(o *unstructured.Unstructured) map[string]any {
			return map[string]any{"/metadata/uid": string(o.GetUID()), "/metadata/resourceVersion": o.GetResourceVersion(), "/metadata/finalizers": toAny(o.GetFinalizers())}
		},
		done: func(t *testing.T, now *unstructured.Unstructured) {
			require.NotNil(t, now)
			assert.Equal(t, []string{keep}, now.GetFinalizers())
		},
	}, {
		name: "ownerReferences: a JSON patch testing the UID and the resourceVersion",
		rule: disownRule(deadOwner.UID),
		object: fakeObject(widgets, ns, "w", func(u *unstructured.Unstructured) {
			u.SetOwnerReferences([]metav1.OwnerReference{deadOwner, liveOwner})
		}),
		resource: widgets, verb: "patch", writes: 1,
		wantTests: func(o *unstructured.Unstructured) map[string]any {
			return map[string]any{"/metadata/uid": string(o.GetUID()), "/metadata/resourceVersion": o.GetResourceVersion()}
		},
		done: func(t *testing.T, now *unstructured.Unstructured) {
			require.NotNil(t, now)
			assert.Equal(t, []metav1.OwnerReference{liveOwner}, now.GetOwnerReferences())
		},
	}, {
		name:     "delete: with the UID and the resourceVersion as Preconditions",
		rule:     deleteRuleOf(widgets),
		object:   fakeObject(widgets, ns, "w", withLabels("delete", "yes")),
		resource: widgets, verb: "delete", writes: 1,
		done: func(t *testing.T, now *unstructured.Unstructured) { assert.Nil(t, now, "deleted") },
	}, {
		name:     "a CustomResourceDefinition's delete, its custom resources counted again first: the same",
		rule:     deleteRuleOf(rules.CustomResourceDefinitions),
		object:   crd,
		others:   []*unstructured.Unstructured{fakeObject(widgets, ns, "w")},
		resource: rules.CustomResourceDefinitions, verb: "delete", writes: 1,
		done: func(t *testing.T, now *unstructured.Unstructured) { assert.Nil(t, now, "deleted") },
	}}
	for _, tt := range tests {
		for _, mode := range []report.DryRunMode{report.DryRunServer, report.DryRunNone} {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				c := newFakeCluster(t, append(tt.others, tt.object, fakeObject(rules.Namespaces, "", ns))...)
				ref := tt.object
				observed := c.get(t, tt.resource, ref.GetNamespace(), ref.GetName())
				before := c.stored(t)
				if tt.react != nil {
					n := 0 // the metadata fake serves one request at a time
					c.metadata.PrependReactor(tt.verb, tt.resource.Resource, func(a clienttesting.Action) (bool, runtime.Object, error) {
						n++
						return tt.react(c, n, a)
					})
				}

				r := runFor(t, c.engine(t, func(cfg *Config) { cfg.DryRun = mode }, tt.rule))
				require.Empty(t, r.Errors)
				f := findingOf(t, r, ref.GetName())
				assert.Equal(t, mode.Done(), f.Outcome, f.Error)

				sent := c.sentWrites()
				require.Len(t, sent, tt.writes, "%+v", sent)
				for i, w := range sent {
					assert.Equal(t, tt.verb, w.verb, "write %d", i)
					assert.Equal(t, tt.resource.GroupVersionResource, w.resource, "write %d", i)
					assert.Equal(t, ref.GetNamespace()+"/"+ref.GetName(), w.namespace+"/"+w.name, "write %d", i)
					if mode == report.DryRunServer {
						assert.Equal(t, []string{metav1.DryRunAll}, w.dryRun, "write %d: a server-side dry run asks for dryRun=All", i)
					} else {
						assert.Empty(t, w.dryRun, "write %d: a real run asks for no dry run", i)
					}
					if tt.wantTests != nil {
						require.NoError(t, w.err, "write %d: a JSON patch", i)
						assert.Equal(t, tt.wantTests(observed), w.tests, "write %d: the patch tests what it rests on, as observed", i)
					} else {
						assert.Equal(t, &metav1.Preconditions{UID: ptr.To(observed.GetUID()), ResourceVersion: ptr.To(observed.GetResourceVersion())},
							w.preconditions, "write %d: the UID and resourceVersion observed", i)
					}
				}
				// Every write goes through the metadata client, the one recorded: none is sent
				// through the dynamic client, whose fake would persist it whatever its options.
				for _, a := range c.dynamic.Actions() {
					assert.NotContains(t, []string{"patch", "update", "delete", "delete-collection"}, a.GetVerb(), "%s %s through the dynamic client", a.GetVerb(), a.GetResource())
				}

				if mode == report.DryRunServer {
					assert.Equal(t, before, c.stored(t), "a server-side dry run changes nothing")
					return
				}
				tt.done(t, c.get(t, tt.resource, ref.GetNamespace(), ref.GetName()))
			})
		}
	}
}
