package rules

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OLM v0's resources, as rules read them.
var (
	subscriptions          = schema.GroupResource{Group: "operators.coreos.com", Resource: "subscriptions"}
	installPlans           = schema.GroupResource{Group: "operators.coreos.com", Resource: "installplans"}
	clusterServiceVersions = schema.GroupResource{Group: "operators.coreos.com", Resource: "clusterserviceversions"}
	olmOperators           = schema.GroupResource{Group: "operators.coreos.com", Resource: "operators"}
)

// subscriptionContent is what rules read of a Subscription: the package, the InstallPlan in its
// status (installPlanRef, or the deprecated installplan) and the CSVs it installed.
var subscriptionContent = ContentRequest{Resource: subscriptions, Fields: []string{
	"spec.name", "status.installPlanRef", "status.installplan", "status.installedCSV", "status.currentCSV",
}}

// nestedString reads a string field of an object's content; "" if absent.
func nestedString(obj *Object, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Content, fields...)
	return s
}

// splitOperatorName splits an Operator's name, <package>.<namespace>, at its last dot: a
// namespace has no dots, a package may.
func splitOperatorName(name string) (pkg, namespace string, ok bool) {
	i := strings.LastIndex(name, ".")
	if i <= 0 || i == len(name)-1 {
		return "", "", false
	}
	return name[:i], name[i+1:], true
}
