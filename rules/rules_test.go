package rules

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Test fixtures shared by the rule tests.

var (
	testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	configMaps = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true}
	namespaces = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Kind: "Namespace"}
	loggings   = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"}, Kind: "Logging"}
)

// object builds an observed object; uid defaults to resource/namespace/name.
func object(r Resource, namespace, name string, opts ...func(*Object)) *Object {
	obj := &Object{Resource: r, ObjectMeta: metav1.ObjectMeta{
		Namespace:       namespace,
		Name:            name,
		UID:             types.UID(r.Resource + "/" + namespace + "/" + name),
		ResourceVersion: "1",
	}}
	for _, opt := range opts {
		opt(obj)
	}
	return obj
}

func terminatingFor(age time.Duration, finalizers ...string) func(*Object) {
	return func(o *Object) {
		ts := metav1.NewTime(testNow.Add(-age))
		o.DeletionTimestamp = &ts
		o.Finalizers = finalizers
	}
}

func withUID(uid string) func(*Object) {
	return func(o *Object) { o.UID = types.UID(uid) }
}

func newTestView(objects ...*Object) *View {
	return NewView(testNow, []Resource{configMaps, namespaces, loggings}, Coverage{}, objects)
}
