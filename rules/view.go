package rules

import (
	"cmp"
	"encoding/binary"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Resource is one listable API resource as the server's discovery describes it.
type Resource struct {
	schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// String names the resource as kubectl does: "pods", "deployments.apps".
func (r Resource) String() string {
	return r.GroupResource().String()
}

// Coverage says how much of the cluster a view holds, so that a rule can tell "absent" from "not
// looked at".
type Coverage struct {
	// Failed lists the listed resources whose list failed, in part or in full.
	Failed []schema.GroupResource
	// Partial lists the listed resources of which some objects were left out on purpose:
	// Namespace objects under a namespace filter.
	Partial []schema.GroupResource
	// Unlisted lists resources the server serves that were not listed (--include-resources,
	// --exclude-resources).
	Unlisted []schema.GroupResource
	// UndiscoveredGroups lists the API groups whose discovery failed: nothing is known of them.
	UndiscoveredGroups []string
	// Namespaces, when not nil, are the only namespaces in which namespaced resources were listed.
	Namespaces []string
	// ListedIn names, for a resource listed in some namespaces only, those namespaces; the
	// others in it were listed in every namespace (subject to Namespaces).
	ListedIn map[schema.GroupResource][]string
	// Shard, if set, says the view is one shard's of a sweep split across processes.
	Shard *ShardCoverage
	// KeptAnnotations are the annotations the objects kept (the zero value: all of them). What is
	// read again to confirm a finding keeps the same.
	KeptAnnotations KeptAnnotations
}

// ShardCoverage is what a shard of a split sweep left to the others.
type ShardCoverage struct {
	// Owns says whether the shard kept the objects of a namespace.
	Owns func(namespace string) bool
	// Namespaced are the namespaced resources of which only the objects of the namespaces the
	// shard owns were kept.
	Namespaced []schema.GroupResource
	// Elsewhere are the cluster-scoped resources other shards listed.
	Elsewhere []schema.GroupResource
}

// View is what the engine observed in one run, indexed for rules. It is immutable: rules get
// pointers into it and must not modify what they point at.
type View struct {
	now       time.Time
	resources []Resource
	listed    map[schema.GroupResource]Resource
	byKind    map[schema.GroupKind]Resource
	coverage  coverageSets
	objects   map[schema.GroupResource][]*Object
	// byUID holds one object per UID, sorted by UID: a pointer an object, where a map costs
	// three to six times that. A resource served by two groups (events and
	// events.events.k8s.io) shows the same objects twice: the core group's is kept.
	byUID []*Object
	count int
}

type coverageSets struct {
	failed, partial, unlisted map[schema.GroupResource]bool
	undiscovered              map[string]bool
	namespaces                map[string]bool // nil: all namespaces
	listedIn                  map[schema.GroupResource][]string
	// Of a shard: the namespaces it owns, its namespaced resources kept only there, and the
	// cluster-scoped resources left to other shards.
	owns              func(namespace string) bool
	ownNamespacesOnly map[schema.GroupResource]bool
	elsewhere         map[schema.GroupResource]bool
	annotations       KeptAnnotations
}

// NewView indexes objects observed at now. Resources lists every resource the engine listed;
// coverage says what was not.
func NewView(now time.Time, resources []Resource, coverage Coverage, objects []*Object) *View {
	v := &View{
		now:       now,
		resources: slices.Clone(resources),
		listed:    make(map[schema.GroupResource]Resource, len(resources)),
		byKind:    make(map[schema.GroupKind]Resource, len(resources)),
		coverage: coverageSets{
			failed:       setOf(coverage.Failed),
			partial:      setOf(coverage.Partial),
			unlisted:     setOf(coverage.Unlisted),
			undiscovered: setOf(coverage.UndiscoveredGroups),
			listedIn:     coverage.ListedIn,
			annotations:  coverage.KeptAnnotations,
		},
		objects: make(map[schema.GroupResource][]*Object, len(resources)),
		count:   len(objects),
	}
	if coverage.Namespaces != nil {
		v.coverage.namespaces = setOf(coverage.Namespaces)
	}
	if shard := coverage.Shard; shard != nil {
		v.coverage.owns, v.coverage.ownNamespacesOnly, v.coverage.elsewhere = shard.Owns, setOf(shard.Namespaced), setOf(shard.Elsewhere)
	}
	slices.SortFunc(v.resources, func(a, b Resource) int { return cmp.Compare(a.String(), b.String()) })
	for _, r := range v.resources {
		v.listed[r.GroupResource()] = r
		v.byKind[schema.GroupKind{Group: r.Group, Kind: r.Kind}] = r
	}
	// Lists of the exact size: append's doubling would leave up to as much again unused.
	sizes := make(map[schema.GroupResource]int, len(resources))
	for _, obj := range objects {
		sizes[obj.Resource.GroupResource()]++
	}
	for gr, size := range sizes {
		v.objects[gr] = make([]*Object, 0, size)
	}
	for _, obj := range objects {
		gr := obj.Resource.GroupResource()
		v.objects[gr] = append(v.objects[gr], obj)
	}
	for _, list := range v.objects {
		slices.SortFunc(list, compareObjects)
	}
	v.byUID = sortedByUID(objects)
	return v
}

func setOf[T comparable](items []T) map[T]bool {
	set := make(map[T]bool, len(items))
	for _, item := range items {
		set[item] = true
	}
	return set
}

// sortedByUID returns objects sorted by UID, one per UID: of objects served twice, the one of
// the group first by name (the core group's events). It sorts by the UIDs' first eight bytes,
// held as numbers beside the pointers: most comparisons then read no object, where reading two
// objects at each of twenty million comparisons is most of the time a million take to sort.
func sortedByUID(objects []*Object) []*Object {
	type keyed struct {
		prefix uint64
		obj    *Object
	}
	keys := make([]keyed, len(objects))
	for i, obj := range objects {
		var prefix [8]byte
		copy(prefix[:], obj.UID)
		keys[i] = keyed{binary.BigEndian.Uint64(prefix[:]), obj} // zero-padded: ordered as the strings are
	}
	slices.SortFunc(keys, func(a, b keyed) int {
		if a.prefix != b.prefix { // cmp.Or would read both objects at every comparison
			return cmp.Compare(a.prefix, b.prefix)
		}
		return cmp.Or(compareUIDs(a.obj, b.obj),
			strings.Compare(a.obj.Resource.Group, b.obj.Resource.Group), strings.Compare(a.obj.Resource.Resource, b.obj.Resource.Resource))
	})
	sorted := make([]*Object, 0, len(keys))
	for i, k := range keys {
		if i == 0 || k.obj.UID != keys[i-1].obj.UID {
			sorted = append(sorted, k.obj)
		}
	}
	return slices.Clip(sorted)
}

func compareUIDs(a, b *Object) int { return strings.Compare(string(a.UID), string(b.UID)) }

func compareObjects(a, b *Object) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// Now is the time the view was taken. Rules measure ages against it, never against a clock.
func (v *View) Now() time.Time { return v.now }

// Resources returns every resource the engine listed, sorted by name.
func (v *View) Resources() []Resource { return slices.Clone(v.resources) }

// Observed reports whether the view holds every object of the resource in namespace ("" for all
// namespaces; ignored for cluster-scoped resources): the resource was listed there in full, or
// the server does not serve it, so there are none. A rule must not conclude that something is
// absent unless Observed says so.
func (v *View) Observed(gr schema.GroupResource, namespace string) bool {
	r, listed := v.listed[gr]
	switch {
	case !listed:
		return !v.coverage.unlisted[gr] && !v.coverage.undiscovered[gr.Group]
	case v.coverage.failed[gr] || v.coverage.partial[gr] || v.coverage.elsewhere[gr]:
		return false
	case v.coverage.ownNamespacesOnly[gr] && (namespace == "" || !v.coverage.owns(namespace)):
		return false
	case v.coverage.listedIn[gr] != nil:
		return namespace != "" && slices.Contains(v.coverage.listedIn[gr], namespace)
	case !r.Namespaced || v.coverage.namespaces == nil:
		return true
	default:
		return namespace != "" && v.coverage.namespaces[namespace]
	}
}

// Complete reports whether the view holds every object of a namespace: every namespaced resource
// was listed there in full, and no resource was left out or undiscovered.
func (v *View) Complete(namespace string) bool {
	if len(v.coverage.unlisted) > 0 || len(v.coverage.undiscovered) > 0 {
		return false
	}
	for _, r := range v.resources {
		if r.Namespaced && !v.Observed(r.GroupResource(), namespace) {
			return false
		}
	}
	return true
}

// Listed returns the resource, if the engine listed it: it is served, and was not left out.
func (v *View) Listed(gr schema.GroupResource) (Resource, bool) {
	r, ok := v.listed[gr]
	return r, ok
}

// Narrowed is the coverage of a view that holds only the resources in read, taken after this
// one: every other resource this view listed is unlisted there, so that nothing is concluded
// absent from what was not read again; what this view left out or could not discover stays so.
func (v *View) Narrowed(read []schema.GroupResource) Coverage {
	var c Coverage
	for _, r := range v.resources {
		if !slices.Contains(read, r.GroupResource()) {
			c.Unlisted = append(c.Unlisted, r.GroupResource())
		}
	}
	for gr := range v.coverage.unlisted {
		c.Unlisted = append(c.Unlisted, gr)
	}
	for group := range v.coverage.undiscovered {
		c.UndiscoveredGroups = append(c.UndiscoveredGroups, group)
	}
	return c
}

// KeptAnnotations says which annotations the view's objects kept.
func (v *View) KeptAnnotations() KeptAnnotations { return v.coverage.annotations }

// ResourceFor returns the listed resource of a kind, as an ownerReference or an object
// reference names it.
func (v *View) ResourceFor(gk schema.GroupKind) (Resource, bool) {
	r, ok := v.byKind[gk]
	return r, ok
}

// Len is the number of objects in the view.
func (v *View) Len() int { return v.count }

// Objects yields every object, ordered by resource name, namespace and name.
func (v *View) Objects() iter.Seq[*Object] {
	return func(yield func(*Object) bool) {
		for _, r := range v.resources {
			for _, obj := range v.objects[r.GroupResource()] {
				if !yield(obj) {
					return
				}
			}
		}
	}
}

// Terminating yields, in the order of Objects, the objects whose deletion was requested at least
// minAge ago, with how long ago.
func (v *View) Terminating(minAge time.Duration) iter.Seq2[*Object, time.Duration] {
	return func(yield func(*Object, time.Duration) bool) {
		for obj := range v.Objects() {
			if obj.DeletionTimestamp == nil {
				continue
			}
			if age := v.now.Sub(obj.DeletionTimestamp.Time); age >= minAge && !yield(obj, age) {
				return
			}
		}
	}
}

// CountTerminating counts the objects Terminating says: a rule that makes a finding of each
// sizes its findings once, which are tens of thousands where an operator left its objects stuck.
func (v *View) CountTerminating(minAge time.Duration) int {
	n := 0
	for range v.Terminating(minAge) {
		n++
	}
	return n
}

// List returns the objects of one resource, ordered by namespace and name. The slice is the
// view's own: read it, never modify it.
func (v *View) List(gr schema.GroupResource) []*Object {
	return slices.Clip(v.objects[gr])
}

// InNamespace returns the objects of one resource in one namespace, ordered by name, found by
// binary search. The slice is the view's own: read it, never modify it.
func (v *View) InNamespace(gr schema.GroupResource, namespace string) []*Object {
	list := v.objects[gr]
	start, _ := slices.BinarySearchFunc(list, namespace, func(o *Object, ns string) int { return strings.Compare(o.Namespace, ns) })
	end := start + sort.Search(len(list)-start, func(i int) bool { return list[start+i].Namespace != namespace })
	return slices.Clip(list[start:end])
}

// Get returns one object by resource, namespace and name.
func (v *View) Get(gr schema.GroupResource, namespace, name string) (*Object, bool) {
	list := v.objects[gr]
	i, found := slices.BinarySearchFunc(list, &Object{Meta: Meta{Namespace: namespace, Name: name}}, compareObjects)
	if !found {
		return nil, false
	}
	return list[i], true
}

// ByUID returns the object with the given UID.
func (v *View) ByUID(uid types.UID) (*Object, bool) {
	i, found := slices.BinarySearchFunc(v.byUID, uid, func(o *Object, uid types.UID) int { return strings.Compare(string(o.UID), string(uid)) })
	if !found {
		return nil, false
	}
	return v.byUID[i], true
}

// WithObject returns a view in which obj replaces the object of the same resource, namespace and
// name (or is added). The engine uses it to re-plan one object it has just re-read.
func (v *View) WithObject(obj *Object) *View {
	gr := obj.Resource.GroupResource()
	next := &View{
		now:       v.now,
		resources: v.resources,
		listed:    v.listed,
		byKind:    v.byKind,
		coverage:  v.coverage,
		objects:   maps.Clone(v.objects),
		byUID:     slices.Clone(v.byUID),
		count:     v.count,
	}
	list := slices.Clone(v.objects[gr])
	i, found := slices.BinarySearchFunc(list, obj, compareObjects)
	if found {
		if j, ok := slices.BinarySearchFunc(next.byUID, list[i], compareUIDs); ok {
			next.byUID = slices.Delete(next.byUID, j, j+1)
		}
		list[i] = obj
	} else {
		list = slices.Insert(list, i, obj)
		next.count++
	}
	next.objects[gr] = list
	if j, ok := slices.BinarySearchFunc(next.byUID, obj, compareUIDs); ok {
		next.byUID[j] = obj
	} else {
		next.byUID = slices.Insert(next.byUID, j, obj)
	}
	return next
}
