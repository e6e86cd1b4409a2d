package rules

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources several rules read or act on, in one table for the rules, the engine and the
// tests; a resource one rule alone reads is declared in its file. Rules look objects up by
// GroupResource; the version is the one a current cluster prefers, and the one the tests serve,
// but a view holds whatever version discovery preferred.
var (
	Namespaces      = known("", "v1", "namespaces", "Namespace", false)
	Nodes           = known("", "v1", "nodes", "Node", false)
	Pods            = known("", "v1", "pods", "Pod", true)
	Secrets         = known("", "v1", "secrets", "Secret", true)
	ConfigMaps      = known("", "v1", "configmaps", "ConfigMap", true)
	Services        = known("", "v1", "services", "Service", true)
	ServiceAccounts = known("", "v1", "serviceaccounts", "ServiceAccount", true)
	Events          = known("", "v1", "events", "Event", true)

	Deployments  = known("apps", "v1", "deployments", "Deployment", true)
	StatefulSets = known("apps", "v1", "statefulsets", "StatefulSet", true)
	DaemonSets   = known("apps", "v1", "daemonsets", "DaemonSet", true)

	Leases         = known("coordination.k8s.io", "v1", "leases", "Lease", true)
	EndpointSlices = known("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true)

	ClusterRoles        = known("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false)
	ClusterRoleBindings = known("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false)
	Roles               = known("rbac.authorization.k8s.io", "v1", "roles", "Role", true)
	RoleBindings        = known("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true)

	MutatingWebhookConfigurations   = known("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", false)
	ValidatingWebhookConfigurations = known("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", false)
	APIServices                     = known("apiregistration.k8s.io", "v1", "apiservices", "APIService", false)
	CustomResourceDefinitions       = known("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false)

	// OLM v0 (operator-framework/api).
	Subscriptions          = known("operators.coreos.com", "v1alpha1", "subscriptions", "Subscription", true)
	InstallPlans           = known("operators.coreos.com", "v1alpha1", "installplans", "InstallPlan", true)
	ClusterServiceVersions = known("operators.coreos.com", "v1alpha1", "clusterserviceversions", "ClusterServiceVersion", true)
	Operators              = known("operators.coreos.com", "v1", "operators", "Operator", false)
	OperatorConditions     = known("operators.coreos.com", "v2", "operatorconditions", "OperatorCondition", true)

	// OLM v1 (operator-framework/operator-controller).
	ClusterExtensions = known("olm.operatorframework.io", "v1", "clusterextensions", "ClusterExtension", false)
	ClusterCatalogs   = known("olm.operatorframework.io", "v1", "clustercatalogs", "ClusterCatalog", false)
	ClusterObjectSets = known("olm.operatorframework.io", "v1", "clusterobjectsets", "ClusterObjectSet", false)
)

// resourcesByKind indexes resources by kind; the kinds must be unique.
func resourcesByKind(resources ...Resource) map[string]Resource {
	byKind := make(map[string]Resource, len(resources))
	for _, r := range resources {
		byKind[r.Kind] = r
	}
	return byKind
}

func known(group, version, resource, kind string, namespaced bool) Resource {
	return Resource{GroupVersionResource: schema.GroupVersionResource{Group: group, Version: version, Resource: resource}, Kind: kind, Namespaced: namespaced}
}
