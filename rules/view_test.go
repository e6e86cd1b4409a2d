package rules

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestViewLookups(t *testing.T) {
	a := object(ConfigMaps, "shop", "a")
	b := object(ConfigMaps, "shop", "b")
	all := object(loggings, "", "all-to-file")
	v := newTestView(b, all, a)

	assert.Equal(t, testNow, v.Now())
	assert.Equal(t, 3, v.Len())
	assert.Equal(t, []*Object{a, b}, v.List(ConfigMaps.GroupResource()))

	got, ok := v.Get(ConfigMaps.GroupResource(), "shop", "b")
	require.True(t, ok)
	assert.Same(t, b, got)
	_, ok = v.Get(ConfigMaps.GroupResource(), "other", "b")
	assert.False(t, ok)
	_, ok = v.Get(loggings.GroupResource(), "shop", "a")
	assert.False(t, ok, "lookups are per resource")

	got, ok = v.ByUID(all.UID)
	require.True(t, ok)
	assert.Same(t, all, got)

	assert.Equal(t, []*Object{a, b, all}, slices.Collect(v.Objects()), "ordered by resource, namespace, name")
}

func TestViewInNamespace(t *testing.T) {
	objects := []*Object{
		object(ConfigMaps, "", "cluster"), object(ConfigMaps, "a", "1"), object(ConfigMaps, "b", "1"),
		object(ConfigMaps, "b", "2"), object(ConfigMaps, "c", "1"), object(loggings, "", "all"),
	}
	v := newTestView(objects...)
	assert.Equal(t, objects[2:4], v.InNamespace(ConfigMaps.GroupResource(), "b"))
	assert.Equal(t, objects[1:2], v.InNamespace(ConfigMaps.GroupResource(), "a"))
	assert.Equal(t, objects[4:5], v.InNamespace(ConfigMaps.GroupResource(), "c"))
	assert.Empty(t, v.InNamespace(ConfigMaps.GroupResource(), "bb"))
	assert.Empty(t, v.InNamespace(ConfigMaps.GroupResource(), "z"))
	assert.Empty(t, v.InNamespace(Secrets.GroupResource(), "b"))
	assert.Equal(t, objects[5:], v.InNamespace(loggings.GroupResource(), ""))
	inB := v.InNamespace(ConfigMaps.GroupResource(), "b")
	assert.Equal(t, len(inB), cap(inB), "clipped: an append never writes into the view")
}

func TestViewObserved(t *testing.T) {
	operators := schema.GroupResource{Group: "operators.coreos.com", Resource: "subscriptions"}
	metrics := schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}
	secrets := schema.GroupResource{Resource: "secrets"}
	tests := []struct {
		name      string
		coverage  Coverage
		gr        schema.GroupResource
		namespace string
		want      bool
	}{
		{"listed everywhere", Coverage{}, ConfigMaps.GroupResource(), "", true},
		{"listed everywhere, one namespace", Coverage{}, ConfigMaps.GroupResource(), "shop", true},
		{"list failed", Coverage{Failed: []schema.GroupResource{ConfigMaps.GroupResource()}}, ConfigMaps.GroupResource(), "shop", false},
		{"namespace filter, all namespaces", Coverage{Namespaces: []string{"shop"}}, ConfigMaps.GroupResource(), "", false},
		{"namespace filter, a walked namespace", Coverage{Namespaces: []string{"shop"}}, ConfigMaps.GroupResource(), "shop", true},
		{"namespace filter, another namespace", Coverage{Namespaces: []string{"shop"}}, ConfigMaps.GroupResource(), "olm", false},
		{"namespace filter, cluster-scoped", Coverage{Namespaces: []string{"shop"}}, loggings.GroupResource(), "", true},
		{"not served: none exist", Coverage{}, operators, "olm", true},
		{"served but not listed", Coverage{Unlisted: []schema.GroupResource{secrets}}, secrets, "shop", false},
		{"group not discovered", Coverage{UndiscoveredGroups: []string{"metrics.k8s.io"}}, metrics, "", false},
		{"listed in part on purpose", Coverage{Partial: []schema.GroupResource{loggings.GroupResource()}}, loggings.GroupResource(), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView(testNow, []Resource{ConfigMaps, loggings}, tt.coverage, nil)
			assert.Equal(t, tt.want, v.Observed(tt.gr, tt.namespace))
		})
	}
}

func TestViewCountsObjectsServedTwice(t *testing.T) {
	core := object(Events, "shop", "e", withUID("same"))
	v := NewView(testNow, []Resource{Events, eventsV1}, Coverage{}, []*Object{object(eventsV1, "shop", "e", withUID("same")), core})
	assert.Equal(t, 2, v.Len())
	got, ok := v.ByUID("same")
	require.True(t, ok)
	assert.Same(t, core, got, "by UID, the core group's")
}

func TestViewByUID(t *testing.T) {
	// UIDs that share their first eight bytes, or are shorter than eight.
	uids := []string{"abcdefgh-2", "b", "abcdefgh-1", "abcdefgh", "abc", "ab", "0c4f8e1a-2b3c-4d5e-8f90-123456789abc", "abcdefgg-9"}
	var objects []*Object
	for _, uid := range uids {
		objects = append(objects, object(ConfigMaps, "shop", uid, withUID(uid)))
	}
	v := newTestView(objects...)
	for i, uid := range uids {
		got, ok := v.ByUID(types.UID(uid))
		if assert.True(t, ok, uid) {
			assert.Same(t, objects[i], got, uid)
		}
	}
	for _, uid := range []string{"", "a", "abcdefgh-", "abcdefgh-3", "c"} {
		_, ok := v.ByUID(types.UID(uid))
		assert.False(t, ok, uid)
	}
}

func TestViewWithObject(t *testing.T) {
	a := object(ConfigMaps, "shop", "a")
	b := object(ConfigMaps, "shop", "b")
	v := newTestView(a, b)

	fresh := object(ConfigMaps, "shop", "a", withUID("recreated"))
	next := v.WithObject(fresh)
	got, _ := next.Get(ConfigMaps.GroupResource(), "shop", "a")
	assert.Same(t, fresh, got)
	_, ok := next.ByUID(a.UID)
	assert.False(t, ok, "the replaced object's UID is gone")
	assert.Equal(t, 2, next.Len())

	added := object(ConfigMaps, "shop", "0-new")
	third := next.WithObject(added)
	assert.Equal(t, []*Object{added, fresh, b}, third.List(ConfigMaps.GroupResource()))
	assert.Equal(t, 3, third.Len())

	// The original view is unchanged.
	got, _ = v.Get(ConfigMaps.GroupResource(), "shop", "a")
	assert.Same(t, a, got)
	assert.Equal(t, []*Object{a, b}, v.List(ConfigMaps.GroupResource()))
	assert.Equal(t, 2, v.Len())
}

func TestViewResourceFor(t *testing.T) {
	v := newTestView()
	r, ok := v.ResourceFor(schema.GroupKind{Group: "logging.banzaicloud.io", Kind: "Logging"})
	require.True(t, ok)
	assert.Equal(t, loggings, r)
	r, ok = v.ResourceFor(schema.GroupKind{Kind: "ConfigMap"})
	require.True(t, ok)
	assert.Equal(t, ConfigMaps, r)
	_, ok = v.ResourceFor(schema.GroupKind{Group: "apps", Kind: "ConfigMap"})
	assert.False(t, ok)
}

func TestViewComplete(t *testing.T) {
	resources := []Resource{ConfigMaps, loggings}
	assert.True(t, NewView(testNow, resources, Coverage{}, nil).Complete("shop"))
	assert.True(t, NewView(testNow, resources, Coverage{Namespaces: []string{"shop"}}, nil).Complete("shop"))
	assert.False(t, NewView(testNow, resources, Coverage{Namespaces: []string{"other"}}, nil).Complete("shop"))
	assert.False(t, NewView(testNow, resources, Coverage{Failed: []schema.GroupResource{ConfigMaps.GroupResource()}}, nil).Complete("shop"))
	assert.False(t, NewView(testNow, resources, Coverage{Unlisted: []schema.GroupResource{{Resource: "secrets"}}}, nil).Complete("shop"))
}

func TestViewNarrowed(t *testing.T) {
	v := NewView(testNow, []Resource{ConfigMaps, Secrets, loggings}, Coverage{
		Unlisted: []schema.GroupResource{Pods.GroupResource()}, UndiscoveredGroups: []string{"metrics.k8s.io"},
	}, nil)
	narrowed := v.Narrowed([]schema.GroupResource{Secrets.GroupResource()})
	assert.ElementsMatch(t, []schema.GroupResource{ConfigMaps.GroupResource(), loggings.GroupResource(), Pods.GroupResource()}, narrowed.Unlisted,
		"what was listed and not read again, and what was left out")
	assert.Equal(t, []string{"metrics.k8s.io"}, narrowed.UndiscoveredGroups)

	fresh := NewView(testNow, []Resource{Secrets}, narrowed, nil)
	assert.True(t, fresh.Observed(Secrets.GroupResource(), "shop"), "read again")
	assert.False(t, fresh.Observed(ConfigMaps.GroupResource(), "shop"), "not read again: never absent")
	assert.True(t, fresh.Observed(Nodes.GroupResource(), ""), "not served when walked")
}
