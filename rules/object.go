package rules

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Object is one observed object: the resource it came from, what rules read of its metadata and,
// for the few resources a rule reads in full (see ContentReader), the rest of it.
type Object struct {
	Resource *Resource
	Meta
	// Content is the object without its metadata (spec, status, …), as unstructured JSON, for
	// the resources a rule reads in full; nil for the others.
	Content map[string]any
}

// Meta is what rules read of an object's metadata: the fields of metav1.ObjectMeta they need,
// by the same names, and no more, so that a view of a million objects fits in little memory
// (managedFields alone are often most of an object's metadata). Its maps and slices may be
// shared with other objects, as everything a view holds: never modify them.
type Meta struct {
	Namespace                  string
	Name                       string
	UID                        types.UID
	ResourceVersion            string
	CreationTimestamp          metav1.Time
	DeletionTimestamp          *metav1.Time
	DeletionGracePeriodSeconds *int64
	Labels                     map[string]string
	// Annotations holds, in a view, only those the enabled rules read (KeptAnnotations).
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
	Finalizers      []string
}

// MetaOf keeps of meta what rules read, every annotation included: which of them a view keeps
// depends on the rules enabled, and the engine drops the others (KeptAnnotations.Of). The result
// shares meta's strings, maps and slices.
func MetaOf(meta *metav1.ObjectMeta) Meta {
	return Meta{
		Namespace:                  meta.Namespace,
		Name:                       meta.Name,
		UID:                        meta.UID,
		ResourceVersion:            meta.ResourceVersion,
		CreationTimestamp:          meta.CreationTimestamp,
		DeletionTimestamp:          meta.DeletionTimestamp,
		DeletionGracePeriodSeconds: meta.DeletionGracePeriodSeconds,
		Labels:                     meta.Labels,
		Annotations:                meta.Annotations,
		OwnerReferences:            meta.OwnerReferences,
		Finalizers:                 meta.Finalizers,
	}
}

// ControllerRef returns the ownerReference to the object's controller; nil if it has none.
func (m *Meta) ControllerRef() *metav1.OwnerReference {
	for i := range m.OwnerReferences {
		if ref := &m.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref
		}
	}
	return nil
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

// KeptAnnotations says which annotations objects keep: those of the families the enabled rules
// read (AnnotationReader), as the engine merges them. The others, kubectl's
// last-applied-configuration first, can be kilobytes each, and no rule looks them up. The zero
// KeptAnnotations keeps every annotation.
type KeptAnnotations struct {
	families []string
	// only: keep the families' annotations only; the zero value keeps all.
	only bool
}

// KeepAnnotations keeps the annotations of families, key prefixes ("meta.helm.sh/"), and drops
// the others; with no families, it drops them all.
func KeepAnnotations(families ...string) KeptAnnotations {
	kept := KeptAnnotations{only: true}
	for _, family := range families {
		if !slices.Contains(kept.families, family) {
			kept.families = append(kept.families, family)
		}
	}
	slices.Sort(kept.families)
	return kept
}

// Keeps reports whether objects keep an annotation.
func (a KeptAnnotations) Keeps(key string) bool {
	if !a.only {
		return true
	}
	for _, family := range a.families { // a handful: a loop beats a set of prefixes
		if strings.HasPrefix(key, family) {
			return true
		}
	}
	return false
}

// Of returns the annotations of all that are kept: all itself if every one is, nil if none is,
// a copy otherwise (all is shared with the object it came from).
func (a KeptAnnotations) Of(all map[string]string) map[string]string {
	if !a.only {
		return all
	}
	kept := 0
	for k := range all {
		if a.Keeps(k) {
			kept++
		}
	}
	switch kept {
	case 0:
		return nil
	case len(all):
		return all
	}
	some := make(map[string]string, kept)
	for k, v := range all {
		if a.Keeps(k) {
			some[k] = v
		}
	}
	return some
}
