package sweeper

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// TestShardsSplitTheSweep runs Engine.Run once for each shard of a sweep split n ways, on one
// fake cluster: every widget (namespaced) and every gadget (cluster-scoped) is planned for by
// exactly one shard, and a shard's view holds, of them, only what it owns; while the resources
// rules draw cluster-wide facts from (Deployments, Namespaces) are whole in every shard's view,
// so that each decides as a single run would. Every shard lists the widgets and keeps its own
// namespaces'; only the gadgets' owner lists them.
func TestShardsSplitTheSweep(t *testing.T) {
	const namespaces, gadgetCount = 24, 4
	var objects []*unstructured.Unstructured
	var all []types.UID
	for i := range namespaces {
		ns := fmt.Sprintf("ns-%02d", i)
		objects = append(objects, fakeObject(rules.Namespaces, "", ns), fakeObject(rules.Deployments, ns, "operator"),
			fakeObject(widgets, ns, "w", withFinalizers(gone)))
		all = append(all, fakeUID(widgets, ns, "w"))
	}
	for i := range gadgetCount {
		name := fmt.Sprintf("g-%d", i)
		objects = append(objects, fakeObject(gadgets, "", name, withFinalizers(gone)))
		all = append(all, fakeUID(gadgets, "", name))
	}
	release := func(view *rules.View) []rules.Finding {
		var out []rules.Finding
		for _, r := range []rules.Resource{widgets, gadgets} {
			for _, obj := range view.List(r.GroupResource()) {
				out = append(out, rules.Finding{Severity: rules.SeverityWarning, Object: obj.Ref(), Reason: "its finalizer's controller is gone",
					Action: rules.RemoveFinalizers{Finalizers: []string{gone}}})
			}
		}
		return out
	}

	for _, count := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("%d shards", count), func(t *testing.T) {
			c := newFakeCluster(t, objects...)
			planners := map[types.UID][]int{} // the shards that planned an action for each object
			for index := range count {
				shard := Shard{Index: index, Count: count}
				var seen atomic.Pointer[rules.View]
				// It declares what it draws cluster-wide facts from, as the rules do (WholeReader).
				rule := testRule{name: "release", plan: func(view *rules.View) []rules.Finding {
					seen.Store(view)
					return release(view)
				}, whole: []schema.GroupResource{rules.Deployments.GroupResource(), rules.Namespaces.GroupResource()}}
				r := runFor(t, c.engine(t, func(cfg *Config) { cfg.DryRun, cfg.Shard = report.DryRunClient, shard }, rule))
				require.Empty(t, r.Errors)
				assert.Equal(t, shard.String(), r.Metadata.Shard)
				for _, f := range r.Findings {
					assert.Equal(t, report.OutcomePlanned, f.Outcome, "%s in shard %s", f.Object.Name, shard)
					planners[f.Object.UID] = append(planners[f.Object.UID], index)
				}

				view := seen.Load()
				require.NotNil(t, view)
				assert.Len(t, view.List(rules.Deployments.GroupResource()), namespaces, "shard %s: every Deployment, a fact", shard)
				assert.Len(t, view.List(rules.Namespaces.GroupResource()), namespaces+1, "shard %s: every Namespace, kube-system's too", shard)
				for _, w := range view.List(widgets.GroupResource()) {
					assert.True(t, shard.ownsNamespace(w.Namespace), "shard %s holds widget %s/%s of another's namespace", shard, w.Namespace, w.Name)
				}
				for _, g := range view.List(gadgets.GroupResource()) {
					assert.True(t, shard.ownsResource(gadgets.GroupResource()), "shard %s holds gadget %s of another's resource", shard, g.Name)
				}
			}
			assert.Len(t, planners, len(all), "every object is some shard's")
			for _, uid := range all {
				assert.Len(t, planners[uid], 1, "%s: planned for by exactly one shard, by %v", uid, planners[uid])
			}
			assert.Equal(t, count, c.lists(widgets), "every shard lists the widgets, each keeping its own namespaces'")
			assert.Equal(t, 1, c.lists(gadgets), "only the gadgets' owner lists them")
		})
	}
}

// lists counts the lists of resource sent through either client.
func (c *fakeCluster) lists(r rules.Resource) int {
	n := 0
	for _, actions := range [][]clienttesting.Action{c.metadata.Actions(), c.dynamic.Actions()} {
		for _, action := range actions {
			if action.GetVerb() == "list" && action.GetResource() == r.GroupVersionResource {
				n++
			}
		}
	}
	return n
}
