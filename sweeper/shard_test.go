package sweeper

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr bool
	}{
		{in: "0/1", want: Shard{Index: 0, Count: 1}},
		{in: "3/4", want: Shard{Index: 3, Count: 4}},
		{in: "4/4", wantErr: true},
		{in: "-1/4", wantErr: true},
		{in: "1/0", wantErr: true},
		{in: "1", wantErr: true},
		{in: "a/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseShard(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestShardOwnership: every object has exactly one owner among n shards; a namespace's objects
// and the Namespace itself go together.
func TestShardOwnership(t *testing.T) {
	pods := rules.Pods.GroupVersionResource
	crds := rules.CustomResourceDefinitions.GroupVersionResource
	namespaces := rules.Namespaces.GroupVersionResource
	for _, n := range []int{1, 3, 4} {
		for i := range 50 {
			ns := fmt.Sprintf("ns-%d", i)
			var owners []int
			for index := range n {
				s := Shard{Index: index, Count: n}
				if s.ownsObject(pods, ns, "p") {
					owners = append(owners, index)
					assert.True(t, s.ownsObject(namespaces, "", ns), "the Namespace goes with its objects")
				}
			}
			assert.Len(t, owners, 1, "%s in %d shards", ns, n)
		}
		owners := 0
		for index := range n {
			if (Shard{Index: index, Count: n}).ownsObject(crds, "", "x") {
				owners++
			}
		}
		assert.Equal(t, 1, owners)
	}
}

// TestShardPlan: a shard lists whole what the rules read whole; of the rest, it keeps its
// namespaces' objects, and lists a cluster-scoped resource only if it owns it.
func TestShardPlan(t *testing.T) {
	whole := map[schema.GroupResource]bool{rules.Nodes.GroupResource(): true, rules.Secrets.GroupResource(): true}
	crds := rules.CustomResourceDefinitions
	owner := slices.IndexFunc([]int{0, 1, 2}, func(i int) bool { return Shard{Index: i, Count: 3}.ownsResource(crds.GroupResource()) })
	require.GreaterOrEqual(t, owner, 0)
	other := (owner + 1) % 3
	tests := []struct {
		name  string
		shard Shard
		r     rules.Resource
		want  shardPlan
	}{
		{name: "not split", shard: Shard{Count: 1}, r: rules.ConfigMaps, want: keepAll},
		{name: "cluster-scoped, read whole", shard: Shard{Index: other, Count: 3}, r: rules.Nodes, want: keepAll},
		{name: "namespaced, read whole", shard: Shard{Index: other, Count: 3}, r: rules.Secrets, want: keepAll},
		{name: "namespaced", shard: Shard{Index: other, Count: 3}, r: rules.ConfigMaps, want: keepOwnNamespaces},
		{name: "cluster-scoped, its own", shard: Shard{Index: owner, Count: 3}, r: crds, want: keepAll},
		{name: "cluster-scoped, another's", shard: Shard{Index: other, Count: 3}, r: crds, want: listedElsewhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.shard.plan(tt.r, whole))
		})
	}
}
