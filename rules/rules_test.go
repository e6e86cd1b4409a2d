package rules

import (
	"slices"
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
	events     = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	eventsV1   = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
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

var (
	deployments  = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true}
	statefulSets = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, Kind: "StatefulSet", Namespaced: true}
	daemonSets   = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, Kind: "DaemonSet", Namespaced: true}
	csvs         = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "clusterserviceversions"}, Kind: "ClusterServiceVersion", Namespaced: true}
	crds         = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, Kind: "CustomResourceDefinition"}
	secretsRes   = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true}
	syslogNGs    = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "syslogngconfigs"}, Kind: "SyslogNGConfig", Namespaced: true}
	widgets      = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}
	rbacRes      = func(resource, kind string, namespaced bool) Resource {
		return Resource{GroupVersionResource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: resource}, Kind: kind, Namespaced: namespaced}
	}
	clusterRolesRes        = rbacRes("clusterroles", "ClusterRole", false)
	clusterRoleBindingsRes = rbacRes("clusterrolebindings", "ClusterRoleBinding", false)
	rolesRes               = rbacRes("roles", "Role", true)
	roleBindingsRes        = rbacRes("rolebindings", "RoleBinding", true)
	validatingWebhooksRes  = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Kind: "ValidatingWebhookConfiguration"}
	mutatingWebhooksRes    = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, Kind: "MutatingWebhookConfiguration"}

	subscriptionsRes = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "subscriptions"}, Kind: "Subscription", Namespaced: true}
	installPlansRes  = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1alpha1", Resource: "installplans"}, Kind: "InstallPlan", Namespaced: true}
	operatorsRes     = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "operators.coreos.com", Version: "v1", Resource: "operators"}, Kind: "Operator"}
	podsRes          = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}
	nodesRes         = Resource{GroupVersionResource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node"}

	allTestResources = []Resource{configMaps, namespaces, loggings, deployments, statefulSets, daemonSets, csvs, crds,
		secretsRes, syslogNGs, widgets, clusterRolesRes, clusterRoleBindingsRes, rolesRes, roleBindingsRes, validatingWebhooksRes, mutatingWebhooksRes,
		subscriptionsRes, installPlansRes, operatorsRes, podsRes, nodesRes}
)

func withLabels(kv ...string) func(*Object) {
	return func(o *Object) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			o.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withAnnotations(kv ...string) func(*Object) {
	return func(o *Object) {
		o.Annotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			o.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func withContent(content map[string]any) func(*Object) {
	return func(o *Object) { o.Content = content }
}

// workload is a Deployment or StatefulSet with replicas (in content, as listed in full).
func workload(r Resource, namespace, name string, replicas int64, opts ...func(*Object)) *Object {
	return object(r, namespace, name, append([]func(*Object){withContent(map[string]any{"spec": map[string]any{"replicas": replicas}})}, opts...)...)
}

// csv is a ClusterServiceVersion owning the named CRDs.
func csv(namespace, name string, ownedCRDs []string, opts ...func(*Object)) *Object {
	owned := make([]any, 0, len(ownedCRDs))
	for _, crd := range ownedCRDs {
		owned = append(owned, map[string]any{"name": crd})
	}
	content := map[string]any{"spec": map[string]any{"customresourcedefinitions": map[string]any{"owned": owned}}}
	return object(csvs, namespace, name, append([]func(*Object){withContent(content)}, opts...)...)
}

// viewWith is a view of objects over every test resource but those coverage says were not listed.
func viewWith(coverage Coverage, objects ...*Object) *View {
	var listed []Resource
	for _, r := range allTestResources {
		if !slices.Contains(coverage.Unlisted, r.GroupResource()) {
			listed = append(listed, r)
		}
	}
	return NewView(testNow, listed, coverage, objects)
}
