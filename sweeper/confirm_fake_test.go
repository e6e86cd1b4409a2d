package sweeper

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// shopTerminating is the lasting fact that namespace shop is being deleted: once it held, it
// holds for good.
func shopTerminating(*rules.Object) []rules.Fact {
	return []rules.Fact{rules.ObjectTerminating{Resource: rules.Namespaces, Name: "shop", UID: fakeUID(rules.Namespaces, "", "shop")}}
}

// TestFactsReadAgainBeforeEachBatch drives Engine.Run over five releases, which go in batches of
// one, two and two: a fact that can change back is read again, live, before each batch (once
// for the batch), and one that stops holding skips what is left (stale); a lasting fact is read
// once for the run.
func TestFactsReadAgainBeforeEachBatch(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name  string
		facts func(*rules.Object) []rules.Fact
		// appears, if set, is created when the first write reaches the server.
		appears     *unstructured.Unstructured
		wantApplied []string
		wantStale   []string
		// wantReads are the live reads of the Deployment operator and of the Namespace shop.
		wantDeploymentReads, wantNamespaceReads int
	}{{
		name:                "a fact that holds is read again before each batch, once for the batch",
		facts:               operatorAbsent,
		wantApplied:         names,
		wantDeploymentReads: 3,
	}, {
		name:                "a fact that stops holding between batches: the batches after it are stale",
		facts:               operatorAbsent,
		appears:             fakeObject(rules.Deployments, "shop", "operator"),
		wantApplied:         names[:1],
		wantStale:           names[1:],
		wantDeploymentReads: 3,
	}, {
		name:               "a lasting fact is read once for the run",
		facts:              shopTerminating,
		wantApplied:        names,
		wantNamespaceReads: 1,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []*unstructured.Unstructured{fakeObject(rules.Namespaces, "", "shop", withFinalizers("kubernetes"), terminating)}
			for _, name := range names {
				objects = append(objects, fakeObject(widgets, "shop", name, withFinalizers(gone)))
			}
			c := newFakeCluster(t, objects...)
			if tt.appears != nil {
				first := true
				c.metadata.PrependReactor("patch", widgets.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
					if first {
						first = false
						return false, nil, c.create(tt.appears)
					}
					return false, nil, nil
				})
			}

			r := runFor(t, c.engine(t, nil, releaseRule(tt.facts)))
			require.Empty(t, r.Errors)
			var applied, stale []string
			for _, f := range r.Findings {
				switch {
				case f.Outcome == report.OutcomeApplied:
					applied = append(applied, f.Object.Name)
				case f.SkipReason == report.ReasonStale:
					stale = append(stale, f.Object.Name)
					assert.True(t, evidence(f, "re-checked live: Deployment shop/operator exists now"), "%s: %q", f.Object.Name, f.Evidence)
				default:
					t.Errorf("%s: %s %s%s: %s", f.Object.Name, f.Outcome, f.SkipReason, f.FailReason, f.Error)
				}
			}
			assert.Equal(t, tt.wantApplied, applied)
			assert.Equal(t, tt.wantStale, stale)
			assert.Len(t, c.writes(t, widgets), len(tt.wantApplied), "a stale action is not sent")
			assert.Equal(t, tt.wantDeploymentReads, c.reads(rules.Deployments, "operator"), "live reads of Deployment shop/operator")
			assert.Equal(t, tt.wantNamespaceReads, c.reads(rules.Namespaces, "shop"), "live reads of Namespace shop")
		})
	}
}

// newFakeConfirmer is a Confirmer of the fake cluster, as the engine makes one after walking
// every resource it serves.
func newFakeConfirmer(c *fakeCluster) *Confirmer {
	return &Confirmer{Observed: rules.NewView(fakeNow, fakeResources, rules.Coverage{}, nil), Clients: c.clients(),
		Clock: clocktesting.NewFakePassiveClock(fakeNow), PageSize: 100}
}

// TestConfirmBatchSharesReads: a batch's check sends each read once, whichever facts of whichever
// actions need it, and an action's check stops at its first fact that does not hold.
func TestConfirmBatchSharesReads(t *testing.T) {
	operator := rules.ObjectAbsent{Resource: rules.Deployments, Namespace: "shop", Name: "operator"}
	// Another fact of the same read: the operator's Deployment of a UID gone, or being deleted.
	operatorTerminating := rules.ObjectTerminating{Resource: rules.Deployments, Namespace: "shop", Name: "operator", UID: "old"}
	webhook := rules.ObjectAbsent{Resource: rules.Deployments, Namespace: "shop", Name: "webhook"}
	catalog := rules.ObjectAbsent{Resource: rules.Deployments, Namespace: "shop", Name: "catalog"}
	deployment := fakeObject(rules.Deployments, "shop", "operator")
	tests := []struct {
		name      string
		objects   []*unstructured.Unstructured
		react     clienttesting.ReactionFunc
		facts     [][]rules.Fact
		wantHolds []bool
		// wantReads are the live reads of each Deployment, by name.
		wantReads    map[string]int
		wantEvidence string
	}{{
		name:      "a fact a batch shares is read once",
		facts:     [][]rules.Fact{{operator}, {operator}, {operator, webhook}, {webhook}},
		wantHolds: []bool{true, true, true, true},
		wantReads: map[string]int{"operator": 1, "webhook": 1},
	}, {
		name:      "two facts of one read share it",
		facts:     [][]rules.Fact{{operator}, {operatorTerminating}},
		wantHolds: []bool{true, true},
		wantReads: map[string]int{"operator": 1},
	}, {
		name:         "an action's check stops at a fact that does not hold; the others' go on",
		objects:      []*unstructured.Unstructured{deployment},
		facts:        [][]rules.Fact{{operator, webhook}, {operator}, {catalog}},
		wantHolds:    []bool{false, false, true},
		wantReads:    map[string]int{"operator": 1, "webhook": 0, "catalog": 1},
		wantEvidence: "re-checked live: Deployment shop/operator exists now",
	}, {
		name: "a read that times out: no action rests on it",
		react: func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewTimeoutError("request did not complete within 1m0s", 0)
		},
		facts:        [][]rules.Fact{{operator}, {operator}},
		wantHolds:    []bool{false, false},
		wantReads:    map[string]int{"operator": 1},
		wantEvidence: "could not re-check live [absent deployments.apps shop/operator]",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCluster(t, tt.objects...)
			if tt.react != nil {
				c.metadata.PrependReactor("list", rules.Deployments.Resource, tt.react)
			}
			got := newFakeConfirmer(c).ConfirmBatch(context.Background(), tt.facts)
			require.Len(t, got, len(tt.facts))
			for i, conf := range got {
				assert.Equal(t, tt.wantHolds[i], conf.Holds, "action %d: %q", i, conf.Evidence)
				if !conf.Holds {
					assert.Contains(t, conf.Evidence[len(conf.Evidence)-1], tt.wantEvidence, "action %d: the last line says why", i)
				}
			}
			for name, want := range tt.wantReads {
				assert.Equal(t, want, c.reads(rules.Deployments, name), "live reads of Deployment shop/%s", name)
			}
		})
	}
}

// TestConfirmerKeepsOnlyLastingFacts: checked three times, one after the other, a lasting fact
// that held is read once; a fact that can change back, or a lasting one that did not hold, is
// read each time.
func TestConfirmerKeepsOnlyLastingFacts(t *testing.T) {
	shop := fakeUID(rules.Namespaces, "", "shop")
	tests := []struct {
		name      string
		namespace *unstructured.Unstructured
		fact      rules.Fact
		wantHolds bool
		wantReads int
	}{{
		name:      "lasting, held: read once, then trusted",
		namespace: fakeObject(rules.Namespaces, "", "shop", withFinalizers("kubernetes"), terminating),
		fact:      rules.ObjectTerminating{Resource: rules.Namespaces, Name: "shop", UID: shop},
		wantHolds: true, wantReads: 1,
	}, {
		name:      "lasting, did not hold: read each time",
		namespace: fakeObject(rules.Namespaces, "", "shop"),
		fact:      rules.ObjectTerminating{Resource: rules.Namespaces, Name: "shop", UID: shop},
		wantHolds: false, wantReads: 3,
	}, {
		name:      "can change back: read each time",
		namespace: fakeObject(rules.Namespaces, "", "shop"),
		fact:      rules.ObjectAbsent{Resource: rules.Namespaces, Name: "shop-old"},
		wantHolds: true, wantReads: 3,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCluster(t, tt.namespace)
			confirmer := newFakeConfirmer(c)
			for i := range 3 {
				got := confirmer.ConfirmBatch(context.Background(), [][]rules.Fact{{tt.fact}})
				assert.Equal(t, tt.wantHolds, got[0].Holds, "check %d: %q", i, got[0].Evidence)
			}
			name := "shop"
			if absent, ok := tt.fact.(rules.ObjectAbsent); ok {
				name = absent.Name
			}
			assert.Equal(t, tt.wantReads, c.reads(rules.Namespaces, name), "live reads of Namespace %s", name)
		})
	}
}

// terminating marks an object as being deleted.
func terminating(u *unstructured.Unstructured) {
	at := metav1.NewTime(fakeNow.Add(-time.Hour))
	u.SetDeletionTimestamp(&at)
}
