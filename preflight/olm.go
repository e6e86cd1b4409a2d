package preflight

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// resolveSubscription resolves an OLM v0 Subscription to the CSV it installed.
func resolveSubscription(ctx context.Context, clients *sweeper.Clients, namespace, name string) (rules.Uninstall, error) {
	sub, err := get(ctx, clients, rules.Subscriptions, namespace, name)
	if err != nil {
		return rules.Uninstall{}, err
	}
	csv, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
	if csv == "" {
		csv, _, _ = unstructured.NestedString(sub.Object, "status", "currentCSV")
	}
	if csv == "" {
		return rules.Uninstall{}, input.Errorf("preflight: Subscription %s/%s has installed no ClusterServiceVersion yet (status.installedCSV and currentCSV are empty)", namespace, name)
	}
	return resolveCSV(ctx, clients, namespace, csv, fmt.Sprintf("Subscription %s/%s", namespace, name))
}

// resolveCSV resolves an OLM v0 ClusterServiceVersion to its deployments, owned CRDs and
// APIServices, and the webhook configurations OLM labelled as its; via, if not empty, is the
// Subscription that installed it.
func resolveCSV(ctx context.Context, clients *sweeper.Clients, namespace, name, via string) (rules.Uninstall, error) {
	csv, err := get(ctx, clients, rules.ClusterServiceVersions, namespace, name)
	if err != nil {
		return rules.Uninstall{}, err
	}
	if from := csv.GetLabels()["olm.copiedFrom"]; from != "" {
		return rules.Uninstall{}, input.Errorf("preflight: ClusterServiceVersion %s/%s is OLM's copy of the one in namespace %s: give -n %s", namespace, name, from, from)
	}
	u := rules.Uninstall{Target: fmt.Sprintf("ClusterServiceVersion %s/%s", namespace, name)}
	if via != "" {
		u.Target = fmt.Sprintf("%s (ClusterServiceVersion %s)", via, name)
	}
	csvKey := key(rules.ClusterServiceVersions, namespace, name)
	u.CSV = &csvKey
	for _, d := range nestedMaps(csv, "spec", "install", "spec", "deployments") {
		if n, _ := d["name"].(string); n != "" {
			u.Workloads = append(u.Workloads, key(rules.Deployments, namespace, n))
		}
	}
	for _, crd := range nestedMaps(csv, "spec", "customresourcedefinitions", "owned") {
		if n, _ := crd["name"].(string); n != "" {
			u.CRDs = append(u.CRDs, n)
		}
	}
	for _, api := range nestedMaps(csv, "spec", "apiservicedefinitions", "owned") {
		group, _ := api["group"].(string)
		version, _ := api["version"].(string)
		if group != "" && version != "" {
			u.APIServices = append(u.APIServices, version+"."+group)
		}
	}
	// A name that is no label value (over 63 characters) labels nothing.
	selector, err := labels.ValidatedSelectorFromSet(labels.Set{"olm.owner": name, "olm.owner.namespace": namespace, "olm.owner.kind": rules.ClusterServiceVersions.Kind})
	if err != nil {
		return u, nil
	}
	for _, r := range []rules.Resource{rules.ValidatingWebhookConfigurations, rules.MutatingWebhookConfigurations} {
		list, err := clients.Metadata.Resource(r.GroupVersionResource).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return rules.Uninstall{}, fmt.Errorf("read the %s OLM made for ClusterServiceVersion %s/%s: %w", r.GroupResource(), namespace, name, err)
		}
		for _, config := range list.Items {
			u.WebhookConfigurations = append(u.WebhookConfigurations, key(r, "", config.Name))
		}
	}
	return u, nil
}

// resolveClusterExtension resolves an OLM v1 ClusterExtension to what OLM v1 applied for it, by
// the owner labels it puts on it. Deleting a ClusterExtension lets the garbage collector take its
// Deployments and CRDs together: the CRDs go with it.
func resolveClusterExtension(ctx context.Context, clients *sweeper.Clients, name string) (rules.Uninstall, error) {
	if _, err := get(ctx, clients, rules.ClusterExtensions, "", name); err != nil {
		return rules.Uninstall{}, err
	}
	u := rules.Uninstall{Target: "ClusterExtension " + name}
	// A name that is no label value (over 63 characters) labels nothing.
	selector, err := labels.ValidatedSelectorFromSet(labels.Set{"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": name})
	if err != nil {
		return u, nil
	}
	for _, r := range []rules.Resource{rules.Deployments, rules.StatefulSets, rules.DaemonSets, rules.Services,
		rules.CustomResourceDefinitions, rules.ValidatingWebhookConfigurations, rules.MutatingWebhookConfigurations, rules.APIServices} {
		list, err := clients.Metadata.Resource(r.GroupVersionResource).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return rules.Uninstall{}, fmt.Errorf("read the %s OLM v1 applied for ClusterExtension %s: %w", r.GroupResource(), name, err)
		}
		for _, obj := range list.Items {
			switch r.GroupResource() {
			case rules.Services.GroupResource():
				u.Services = append(u.Services, key(r, obj.Namespace, obj.Name))
			case rules.CustomResourceDefinitions.GroupResource():
				u.CRDs, u.DeletedCRDs = append(u.CRDs, obj.Name), append(u.DeletedCRDs, obj.Name)
			case rules.APIServices.GroupResource():
				u.APIServices = append(u.APIServices, obj.Name)
			case rules.ValidatingWebhookConfigurations.GroupResource(), rules.MutatingWebhookConfigurations.GroupResource():
				u.WebhookConfigurations = append(u.WebhookConfigurations, key(r, "", obj.Name))
			default:
				u.Workloads = append(u.Workloads, key(r, obj.Namespace, obj.Name))
			}
		}
	}
	return u, nil
}

// nestedMaps is the list of objects at fields of obj, skipping what is not an object.
func nestedMaps(obj *unstructured.Unstructured, fields ...string) []map[string]any {
	items, _, _ := unstructured.NestedSlice(obj.Object, fields...)
	var out []map[string]any
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
