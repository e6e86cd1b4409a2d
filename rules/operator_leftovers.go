package rules

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// OperatorLeftovers reports what a deleted Subscription left behind (F2): every object in the
// status.components.refs of its cluster-scoped Operator (operators.coreos.com/v1, named
// <package>.<namespace>), and the Operator itself; and every ClusterServiceVersion that no
// Subscription in its namespace installed (OLM's copies excluded). It only reports, unless the
// kind is listed in Delete (rules.operator-leftovers.delete): then it deletes, with a UID
// precondition. A CustomResourceDefinition is deleted only when listed explicitly, since that
// deletes every custom resource of it, and never while a ClusterServiceVersion still owns or
// requires it.
type OperatorLeftovers struct {
	args OperatorLeftoversArgs
}

// OperatorLeftoversName is the name of rule operator-leftovers.
const OperatorLeftoversName = "operator-leftovers"

// OperatorLeftoversArgs are the arguments of operator-leftovers: rules.operator-leftovers in the
// config file.
type OperatorLeftoversArgs struct {
	// Delete lists the kinds whose leftovers are deleted ("ClusterServiceVersion",
	// "InstallPlan", …); CustomResourceDefinition deletes user data.
	Delete []string `json:"delete,omitempty"`
}

// NewOperatorLeftovers builds operator-leftovers; every kind to delete must be one OLM lists as a
// component.
func NewOperatorLeftovers(args OperatorLeftoversArgs, _ Settings) (OperatorLeftovers, error) {
	var errs []error
	for i, kind := range args.Delete {
		if _, ok := leftoverKinds[kind]; !ok {
			errs = append(errs, fmt.Errorf("rules.operator-leftovers.delete[%d] %q is not a kind OLM lists as a component; use one of %s",
				i, kind, strings.Join(slices.Sorted(maps.Keys(leftoverKinds)), ", ")))
		}
	}
	return OperatorLeftovers{args: args}, errors.Join(errs...)
}

var (
	_ ContentReader = OperatorLeftovers{}
	_ Authorized    = OperatorLeftovers{}
)

// leftoverKinds are the kinds OLM lists as an operator's components, and their resources: the
// kinds operator-leftovers can be told to delete.
var leftoverKinds = resourcesByKind(ClusterServiceVersions, InstallPlans, Operators, OperatorConditions, CustomResourceDefinitions,
	ClusterRoles, ClusterRoleBindings, Roles, RoleBindings, ServiceAccounts, Services, ConfigMaps, Secrets, Deployments,
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations, APIServices)

// Name implements Rule.
func (OperatorLeftovers) Name() string { return OperatorLeftoversName }

// PolicyRules implements Authorized: delete on the opted-in kinds.
func (r OperatorLeftovers) PolicyRules() []rbacv1.PolicyRule {
	resources := make([]Resource, 0, len(r.args.Delete))
	for _, kind := range r.args.Delete {
		resources = append(resources, leftoverKinds[kind]) // validated
	}
	return deletePolicy(resources)
}

// ReadsContent implements ContentReader.
func (OperatorLeftovers) ReadsContent() []ContentRequest {
	return []ContentRequest{
		subscriptionContent,
		{Resource: Operators.GroupResource(), Fields: []string{"status.components.refs"}},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: []string{"spec.customresourcedefinitions"}},
	}
}

// leftover is an object found left behind, with why.
type leftover struct {
	obj      *Object
	reason   string
	evidence []string
}

// Plan implements Rule.
func (r OperatorLeftovers) Plan(_ context.Context, view *View) []Finding {
	var leftovers []leftover
	found := map[types.UID]bool{} // an object listed twice is reported once
	add := func(obj *Object, reason string, evidence ...string) {
		if !found[obj.UID] && obj.DeletionTimestamp == nil {
			found[obj.UID] = true
			leftovers = append(leftovers, leftover{obj, reason, evidence})
		}
	}

	for _, op := range view.List(Operators.GroupResource()) {
		pkg, ns, ok := splitOperatorName(op.Name)
		if !ok || !view.Observed(Subscriptions.GroupResource(), ns) || subscriptionFor(view, op.Name, pkg, ns) != nil {
			continue
		}
		gone := fmt.Sprintf("no Subscription in namespace %s is named %s, has spec.name %s or carries label operators.coreos.com/%s", ns, pkg, pkg, op.Name)
		refs, _, _ := unstructured.NestedSlice(op.Content, "status", "components", "refs")
		for _, ref := range refs {
			if obj, ok := referenced(view, ref); ok { // else already gone
				add(obj, "subscription deleted; left behind", fmt.Sprintf("Operator %s lists it in status.components.refs", op.Name), gone)
			}
		}
		add(op, "subscription deleted; left behind", fmt.Sprintf("the Operator of package %s in namespace %s", pkg, ns), gone)
	}
	for _, csv := range view.List(ClusterServiceVersions.GroupResource()) {
		if copiedCSV(csv) || !view.Observed(Subscriptions.GroupResource(), csv.Namespace) || installed(view, csv) {
			continue
		}
		add(csv, "no Subscription installed it; left behind",
			fmt.Sprintf("no Subscription in namespace %s has it as status.installedCSV or status.currentCSV, or is of the operator it is labelled with", csv.Namespace))
	}

	crds := indexCRDs(view)
	findings := make([]Finding, 0, len(leftovers))
	for _, l := range leftovers {
		findings = append(findings, r.finding(view, crds, l, found))
	}
	return findings
}

// subscriptionFor returns the Subscription of an Operator: by its label, its name or its package.
func subscriptionFor(view *View, operator, pkg, namespace string) *Object {
	for _, sub := range view.InNamespace(Subscriptions.GroupResource(), namespace) {
		if _, labelled := sub.Labels["operators.coreos.com/"+operator]; labelled || sub.Name == pkg || nestedString(sub, "spec", "name") == pkg {
			return sub
		}
	}
	return nil
}

// installed reports whether a Subscription in the CSV's namespace installed it: it has the CSV in
// its status, or it is the Subscription of the operator OLM labelled the CSV with
// (operators.coreos.com/<package>.<namespace>).
func installed(view *View, csv *Object) bool {
	for _, sub := range view.InNamespace(Subscriptions.GroupResource(), csv.Namespace) {
		if nestedString(sub, "status", "installedCSV") == csv.Name || nestedString(sub, "status", "currentCSV") == csv.Name {
			return true
		}
	}
	for key := range csv.Labels {
		operator, ok := strings.CutPrefix(key, "operators.coreos.com/")
		if pkg, ns, valid := splitOperatorName(operator); ok && valid && ns == csv.Namespace && subscriptionFor(view, operator, pkg, ns) != nil {
			return true
		}
	}
	return false
}

// referenced returns the object a status.components.refs entry names.
func referenced(view *View, ref any) (*Object, bool) {
	m, _ := ref.(map[string]any)
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	name, _ := m["name"].(string)
	namespace, _ := m["namespace"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || name == "" {
		return nil, false
	}
	r, ok := view.ResourceFor(gv.WithKind(kind).GroupKind())
	if !ok {
		return nil, false
	}
	if !r.Namespaced {
		namespace = ""
	}
	return view.Get(r.GroupResource(), namespace, name)
}

// finding reports a leftover, with a delete that needs an opt-in for its kind. A CRD is deleted
// only when every ClusterServiceVersion was listed, none that is not left behind owns or requires
// it, and those left behind that do are deleted first.
func (r OperatorLeftovers) finding(view *View, crds crdIndex, l leftover, leftovers map[types.UID]bool) Finding {
	f := Finding{
		Severity: SeverityWarning,
		Object:   l.obj.Ref(),
		Reason:   l.reason,
		Evidence: l.evidence,
		Action:   Delete{},
	}
	kind := l.obj.Resource.Kind
	if l.obj.Resource.GroupResource() == CustomResourceDefinitions.GroupResource() {
		f.Evidence = append(f.Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
		if !view.Observed(ClusterServiceVersions.GroupResource(), "") {
			f.Evidence = append(f.Evidence, "ClusterServiceVersions were not all listed: one may still own or require it; not deleted")
			f.Action = nil
			return f
		}
		var live, leftBehind []string
		for _, csv := range crds.users[l.obj.Name] {
			name := "ClusterServiceVersion " + csv.Namespace + "/" + csv.Name
			if leftovers[csv.UID] {
				leftBehind = append(leftBehind, name)
				f.DependsOn = append(f.DependsOn, csv.Ref())
			} else {
				live = append(live, name)
			}
		}
		if len(live) > 0 {
			f.Evidence = append(f.Evidence, "still owned or required by "+strings.Join(live, ", ")+": not deleted")
			f.Action, f.DependsOn = nil, nil
			return f
		}
		if len(leftBehind) > 0 {
			f.Evidence = append(f.Evidence, "deleted only after "+strings.Join(leftBehind, ", ")+", left behind too, which owns or requires it")
		}
	}
	if !slices.Contains(r.args.Delete, kind) {
		f.OptIn = fmt.Sprintf("rules.operator-leftovers.delete: [%s]", kind)
	}
	return f
}
