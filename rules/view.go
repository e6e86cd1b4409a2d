package rules

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Object is one observed object: its metadata (no spec or status), and the resource it came from.
type Object struct {
	Resource Resource
	metav1.ObjectMeta
}

// Ref returns the reference a Finding about this object carries.
func (o *Object) Ref() ObjectRef {
	return ObjectRef{
		Resource:        o.Resource.GroupVersionResource,
		Kind:            o.Resource.Kind,
		Namespace:       o.Namespace,
		Name:            o.Name,
		UID:             o.UID,
		ResourceVersion: o.ResourceVersion,
	}
}

// View is what the engine observed in one run, indexed for rules. It is immutable: rules get
// pointers into it and must not modify what they point at.
type View struct {
	now       time.Time
	resources []Resource
	// observed holds the resources listed in full.
	observed map[schema.GroupResource]bool
	objects  map[schema.GroupResource][]*Object
	// byUID holds one object per UID: a resource served by two groups (events and
	// events.events.k8s.io) shows the same objects twice.
	byUID map[types.UID]*Object
	count int
}

// NewView indexes objects observed at now. Resources lists every resource the engine listed;
// partial names those it did not list in full (a list failed, or a namespace filter left
// namespaces out), so that a rule never mistakes "not read" for "does not exist".
func NewView(now time.Time, resources []Resource, partial []schema.GroupResource, objects []*Object) *View {
	v := &View{
		now:       now,
		resources: slices.Clone(resources),
		observed:  make(map[schema.GroupResource]bool, len(resources)),
		objects:   make(map[schema.GroupResource][]*Object, len(resources)),
		byUID:     make(map[types.UID]*Object, len(objects)),
		count:     len(objects),
	}
	slices.SortFunc(v.resources, func(a, b Resource) int { return cmp.Compare(a.String(), b.String()) })
	for _, r := range v.resources {
		v.observed[r.GroupResource()] = !slices.Contains(partial, r.GroupResource())
	}
	for _, obj := range objects {
		gr := obj.Resource.GroupResource()
		v.objects[gr] = append(v.objects[gr], obj)
		v.byUID[obj.UID] = obj
	}
	for _, list := range v.objects {
		slices.SortFunc(list, compareObjects)
	}
	return v
}

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

// Observed reports whether every object of the resource, in every namespace, was listed. A rule
// must not conclude that something is absent from a resource that was not observed.
func (v *View) Observed(gr schema.GroupResource) bool {
	return v.observed[gr]
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

// List returns the objects of one resource, ordered by namespace and name.
func (v *View) List(gr schema.GroupResource) []*Object {
	return slices.Clone(v.objects[gr])
}

// Get returns one object by resource, namespace and name.
func (v *View) Get(gr schema.GroupResource, namespace, name string) (*Object, bool) {
	list := v.objects[gr]
	i, found := slices.BinarySearchFunc(list, &Object{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, compareObjects)
	if !found {
		return nil, false
	}
	return list[i], true
}

// ByUID returns the object with the given UID.
func (v *View) ByUID(uid types.UID) (*Object, bool) {
	obj, ok := v.byUID[uid]
	return obj, ok
}

// WithObject returns a view in which obj replaces the object of the same resource, namespace and
// name (or is added). The engine uses it to re-plan one object it has just re-read.
func (v *View) WithObject(obj *Object) *View {
	gr := obj.Resource.GroupResource()
	next := &View{
		now:       v.now,
		resources: v.resources,
		observed:  v.observed,
		objects:   maps.Clone(v.objects),
		byUID:     maps.Clone(v.byUID),
		count:     v.count,
	}
	list := slices.Clone(v.objects[gr])
	i, found := slices.BinarySearchFunc(list, obj, compareObjects)
	if found {
		delete(next.byUID, list[i].UID)
		list[i] = obj
	} else {
		list = slices.Insert(list, i, obj)
		next.count++
	}
	next.objects[gr] = list
	next.byUID[obj.UID] = obj
	return next
}
