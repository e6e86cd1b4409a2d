package rules

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// subscriptionContent is what rules read of a Subscription: the package, the InstallPlan in its
// status (installPlanRef, or the deprecated installplan) and the CSVs it installed.
var subscriptionContent = ContentRequest{Resource: Subscriptions.GroupResource(), Fields: []string{
	"spec.name", "status.installPlanRef", "status.installplan", "status.installedCSV", "status.currentCSV", "status.lastUpdated",
}}

// splitOperatorName splits an Operator's name, <package>.<namespace>, at its last dot: a
// namespace has no dots, a package may.
func splitOperatorName(name string) (pkg, namespace string, ok bool) {
	i := strings.LastIndex(name, ".")
	if i <= 0 || i == len(name)-1 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}

// csvOwner returns the CSV OLM labelled obj as made for: olm.owner, olm.owner.namespace and
// olm.owner.kind=ClusterServiceVersion.
func csvOwner(obj *Object) (namespace, name string, ok bool) {
	if obj.Labels["olm.owner.kind"] != ClusterServiceVersions.Kind {
		return "", "", false
	}
	namespace, name = obj.Labels["olm.owner.namespace"], obj.Labels["olm.owner"]
	return namespace, name, namespace != "" && name != ""
}

// copiedCSV reports whether a CSV is OLM's copy of one in another namespace (olm.copiedFrom).
func copiedCSV(csv *Object) bool {
	_, copied := csv.Labels["olm.copiedFrom"]
	return copied
}

// crdIndex says which ClusterServiceVersions (not OLM's copies) own a CRD, and which own or
// require it, by CRD name.
type crdIndex struct {
	owners, users map[string][]*Object
}

func indexCRDs(view *View) crdIndex {
	index := crdIndex{owners: map[string][]*Object{}, users: map[string][]*Object{}}
	for _, csv := range view.List(ClusterServiceVersions.GroupResource()) {
		if copiedCSV(csv) {
			continue
		}
		for _, field := range []string{"owned", "required"} {
			list, _, _ := unstructured.NestedSlice(csv.Content, "spec", "customresourcedefinitions", field)
			for _, d := range list {
				m, _ := d.(map[string]any)
				name, _ := m["name"].(string)
				if name == "" {
					continue
				}
				if field == "owned" {
					index.owners[name] = append(index.owners[name], csv)
				}
				if !slices.Contains(index.users[name], csv) {
					index.users[name] = append(index.users[name], csv)
				}
			}
		}
	}
	return index
}
