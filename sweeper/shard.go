package sweeper

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Shard is one part of a sweep split across n processes (an Indexed Job's completions): it acts
// on, and reports, the objects it owns. An object's owner is chosen by hash, deterministically: a
// namespaced object (and a Namespace) goes with its namespace, so that the shard that reports a
// stuck namespace holds everything in it; any other cluster-scoped object goes with its resource.
//
// Every shard reads in full the resources the enabled rules draw cluster-wide facts from (each
// declares them, rules.WholeReader: nodes, workloads, Leases, CSVs, Subscriptions, CRDs,
// APIServices, Helm releases, …), so that each decides from the same facts a single run would. Of
// the other resources, a shard keeps the objects it owns: the namespaced ones in its namespaces
// (all shards list them), the cluster-scoped ones of its resources (only their owner lists them).
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/n".
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, ierr := strconv.Atoi(i)
	count, nerr := strconv.Atoi(n)
	if !ok || ierr != nil || nerr != nil || count < 1 || index < 0 || index >= count {
		return Shard{}, fmt.Errorf("%q is not a shard: use i/n with 0 ≤ i < n, as 1/4", s)
	}
	return Shard{Index: index, Count: count}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// sharded reports whether the sweep is split at all.
func (s Shard) sharded() bool { return s.Count > 1 }

// ownsNamespace reports whether the shard owns the objects of a namespace, and the Namespace.
func (s Shard) ownsNamespace(namespace string) bool { return s.owns("namespace/" + namespace) }

// ownsResource reports whether the shard owns the objects of a cluster-scoped resource.
func (s Shard) ownsResource(gr schema.GroupResource) bool { return s.owns("resource/" + gr.String()) }

// ownsObject reports whether the shard owns an object: by its namespace, a Namespace by its name,
// any other cluster-scoped object by its resource.
func (s Shard) ownsObject(resource schema.GroupVersionResource, namespace, name string) bool {
	if ns := namespaceOf(resource, namespace, name); ns != "" {
		return s.ownsNamespace(ns)
	}
	return s.ownsResource(resource.GroupResource())
}

func (s Shard) owns(key string) bool {
	if !s.sharded() {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key)) // a hash.Hash never fails to write
	return int(h.Sum32()%uint32(s.Count)) == s.Index
}

// shardPlan says, of a resource, whether the shard lists it and which of its objects it keeps.
type shardPlan int

const (
	// keepAll: a resource the rules read whole, or a sweep that is not split.
	keepAll shardPlan = iota
	// keepOwnNamespaces: a namespaced resource; every shard lists it, each keeps its namespaces.
	keepOwnNamespaces
	// listedElsewhere: a cluster-scoped resource another shard owns; not listed here.
	listedElsewhere
)

// plan says how the shard lists r, whole being the resources the rules read whole.
func (s Shard) plan(r rules.Resource, whole map[schema.GroupResource]bool) shardPlan {
	gr := r.GroupResource()
	switch {
	case !s.sharded() || whole[gr]:
		return keepAll
	case r.Namespaced:
		return keepOwnNamespaces
	case s.ownsResource(gr):
		return keepAll
	default:
		return listedElsewhere
	}
}
