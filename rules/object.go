package rules

import (
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
	// Annotations holds only those rules read (ReadsAnnotation).
	Annotations     map[string]string
	OwnerReferences []metav1.OwnerReference
	Finalizers      []string
}

// MetaOf keeps of meta what rules read. The result shares meta's strings, maps and slices but
// for annotations, which it copies when it drops some.
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
		Annotations:                readAnnotations(meta.Annotations),
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

// readAnnotationPrefixes are the families of annotations rules read: Helm's release annotations
// (meta.helm.sh/release-name, -namespace) and OLM's (operatorframework.io/properties).
var readAnnotationPrefixes = []string{"meta.helm.sh/", "operatorframework.io/", "olm."}

// ReadsAnnotation reports whether rules read an annotation. Objects keep only those: the others,
// kubectl's last-applied-configuration first, can be kilobytes each. A rule that reads another
// annotation adds its family here (TestReadsAnnotation checks).
func ReadsAnnotation(key string) bool {
	for _, prefix := range readAnnotationPrefixes {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}

// readAnnotations are the annotations of all that rules read: all itself if they read every
// one, nil if none.
func readAnnotations(all map[string]string) map[string]string {
	read := 0
	for k := range all {
		if ReadsAnnotation(k) {
			read++
		}
	}
	switch read {
	case 0:
		return nil
	case len(all):
		return all
	}
	kept := make(map[string]string, read)
	for k, v := range all {
		if ReadsAnnotation(k) {
			kept[k] = v
		}
	}
	return kept
}
