package rules

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is one observed object: the resource it came from, its metadata and, for the few
// resources a rule reads in full (see ContentReader), the rest of it.
type Object struct {
	Resource Resource
	metav1.ObjectMeta
	// Content is the object without its metadata (spec, status, …), as unstructured JSON, for
	// the resources a rule reads in full; nil for the others.
	Content map[string]any
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

// ReadsAnnotation reports whether rules read an annotation. The engine keeps only those: the
// others, kubectl's last-applied-configuration first, are often most of an object's metadata. A
// rule that reads another annotation adds its family here (TestReadsAnnotation checks).
func ReadsAnnotation(key string) bool {
	for _, prefix := range readAnnotationPrefixes {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}
