package rules

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Test fixtures shared by the rule tests.

var (
	testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

	// Resources of no rule's: the rest come from the table in resources.go.
	eventsV1  = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}, Kind: "Event", Namespaced: true}
	loggings  = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"}, Kind: "Logging"}
	syslogNGs = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "syslogngconfigs"}, Kind: "SyslogNGConfig", Namespaced: true}
	widgets   = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "acme.io", Version: "v1", Resource: "widgets"}, Kind: "Widget", Namespaced: true}

	allTestResources = []Resource{ConfigMaps, Namespaces, loggings, Deployments, StatefulSets, DaemonSets, ClusterServiceVersions, CustomResourceDefinitions,
		Secrets, syslogNGs, widgets, ClusterRoles, ClusterRoleBindings, Roles, RoleBindings, ValidatingWebhookConfigurations, MutatingWebhookConfigurations,
		Subscriptions, InstallPlans, Operators, Pods, Nodes, Leases, Services, ServiceAccounts, APIServices, EndpointSlices}
)

// policyRulesOf are the PolicyRules of the registry's rule name, built with args.
func policyRulesOf(t *testing.T, name string, args any, settings Settings) []rbacv1.PolicyRule {
	t.Helper()
	rule, err := registration(t, name).New(args, settings)
	require.NoError(t, err)
	return rule.(Authorized).PolicyRules()
}

// object builds an observed object; uid defaults to resource/namespace/name.
func object(r Resource, namespace, name string, opts ...func(*Object)) *Object {
	obj := &Object{Resource: &r, Meta: Meta{
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
	return NewView(testNow, []Resource{ConfigMaps, Namespaces, loggings}, Coverage{}, objects)
}

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
	return object(ClusterServiceVersions, namespace, name, append([]func(*Object){withContent(content)}, opts...)...)
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

// shippedMappings are the controller mappings of a run configured with configured.
func shippedMappings(t testing.TB, configured ...FinalizerOwner) FinalizerMappings {
	t.Helper()
	m, err := NewFinalizerMappings(configured)
	require.NoError(t, err)
	return m
}

// catalogOwners are the catalog's controller mappings.
func catalogOwners(t testing.TB) []FinalizerOwner {
	t.Helper()
	owners, err := DefaultFinalizerOwners()
	require.NoError(t, err)
	return owners
}
