package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// Subscription in its namespace installed (OLM's copies excluded). Left behind means abandoned,
// not just unmanaged: an operator whose CSV runs (its Deployments available, read live: the
// phase is whatever OLM last wrote, and OLM may be gone) runs without a Subscription (deleted on
// purpose, or being re-created), and is only reported; a CSV being deleted is being uninstalled,
// and runs no longer; OLM's own CSVs (packageserver) have none by
// design and are left alone; an object another Operator lists, whose Subscription exists, is
// shared and kept. It only reports, unless the kind is listed in rules.operator-leftovers.delete:
// then it deletes, once the Subscription is confirmed absent, live. A CustomResourceDefinition is
// deleted only when listed explicitly, since that deletes every custom resource of it, and never
// while a ClusterServiceVersion still owns or requires it.
type OperatorLeftovers struct {
	args   OperatorLeftoversArgs
	delete map[schema.GroupKind]Resource
}

// OperatorLeftoversName is the name of rule operator-leftovers.
const OperatorLeftoversName = "operator-leftovers"

// OperatorLeftoversArgs are the arguments of operator-leftovers: rules.operator-leftovers in the
// config file.
type OperatorLeftoversArgs struct {
	// Delete lists the kinds whose leftovers are deleted, with their API group:
	// "ClusterServiceVersion.operators.coreos.com", "Service" (the core group);
	// "CustomResourceDefinition.apiextensions.k8s.io" deletes user data.
	Delete []string `json:"delete,omitempty"`
}

// leftoverKinds are the kinds OLM lists as an operator's components: the kinds operator-leftovers
// can be told to delete.
var leftoverKinds = []Resource{ClusterServiceVersions, InstallPlans, Operators, OperatorConditions, CustomResourceDefinitions,
	ClusterRoles, ClusterRoleBindings, Roles, RoleBindings, ServiceAccounts, Services, ConfigMaps, Secrets, Deployments,
	MutatingWebhookConfigurations, ValidatingWebhookConfigurations, APIServices}

// NewOperatorLeftovers builds operator-leftovers. Every kind to delete names its group, but for
// the core group's, and is one OLM lists as a component: "Service" alone is never a Knative
// Service.
func NewOperatorLeftovers(args OperatorLeftoversArgs, _ Settings) (OperatorLeftovers, error) {
	r := OperatorLeftovers{args: args, delete: map[schema.GroupKind]Resource{}}
	var errs []error
	for i, entry := range args.Delete {
		gk := schema.ParseGroupKind(entry)
		if at := slices.IndexFunc(leftoverKinds, func(k Resource) bool { return k.Kind == gk.Kind && k.Group == gk.Group }); at >= 0 {
			r.delete[gk] = leftoverKinds[at]
			continue
		}
		if at := slices.IndexFunc(leftoverKinds, func(k Resource) bool { return k.Kind == gk.Kind }); at >= 0 && gk.Group == "" {
			errs = append(errs, fmt.Errorf("rules.operator-leftovers.delete[%d] %q names no API group and is not a core kind: write %s.%s",
				i, entry, gk.Kind, leftoverKinds[at].Group))
			continue
		}
		errs = append(errs, fmt.Errorf("rules.operator-leftovers.delete[%d] %q is not a kind OLM lists as a component; use one of %s",
			i, entry, strings.Join(leftoverKindNames(), ", ")))
	}
	return r, errors.Join(errs...)
}

func leftoverKindNames() []string {
	names := make([]string, 0, len(leftoverKinds))
	for _, k := range leftoverKinds {
		names = append(names, schema.GroupKind{Group: k.Group, Kind: k.Kind}.String())
	}
	slices.Sort(names)
	return names
}

var (
	_ ContentReader    = OperatorLeftovers{}
	_ WholeReader      = OperatorLeftovers{}
	_ AnnotationReader = OperatorLeftovers{}
	_ Authorized       = OperatorLeftovers{}
	_ OptedIn          = OperatorLeftovers{}
)

// Name implements Rule.
func (OperatorLeftovers) Name() string { return OperatorLeftoversName }

// Writes implements Authorized: it deletes the kinds OLM lists as components.
func (OperatorLeftovers) Writes() []Write { return deletes(leftoverKinds) }

// MayHaveWritten implements Authorized: an object of a kind OLM lists as a component.
func (OperatorLeftovers) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	return kindOf(leftoverKinds, obj)
}

// Admission implements Authorized: OLM's own kinds, those its opt-in covers. The others it
// reports stay refused whatever its config says: deleting a CRD deletes user data.
func (OperatorLeftovers) Admission() Admission { return Admission{Deletes: olmOwnKinds} }

// OptInArgs implements OptedIn: delete OLM's own kinds (operators.coreos.com). Its opt-in in the
// cluster covers no other: the admission policy refuses the deletes of the other kinds it reports
// (deleting a CRD deletes user data), which need a ClusterRole of the user's own.
func (OperatorLeftovers) OptInArgs() any {
	var args OperatorLeftoversArgs
	for _, k := range olmOwnKinds {
		args.Delete = append(args.Delete, schema.GroupKind{Group: k.Group, Kind: k.Kind}.String())
	}
	return args
}

// olmOwnKinds are the kinds of leftoverKinds that are OLM's own (operators.coreos.com).
var olmOwnKinds = slices.DeleteFunc(slices.Clone(leftoverKinds), func(k Resource) bool {
	return k.Group != ClusterServiceVersions.Group
})

// PolicyRules implements Authorized: delete on the opted-in kinds.
func (r OperatorLeftovers) PolicyRules() []rbacv1.PolicyRule {
	resources := make([]Resource, 0, len(r.args.Delete))
	for _, entry := range r.args.Delete {
		resources = append(resources, r.delete[schema.ParseGroupKind(entry)]) // validated
	}
	return deletePolicy(resources)
}

// ReadsContent implements ContentReader.
func (OperatorLeftovers) ReadsContent() []ContentRequest {
	return []ContentRequest{
		subscriptionContent,
		{Resource: Operators.GroupResource(), Fields: []string{"status.components.refs"}},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: append(slices.Clone(csvRunFields), csvCRDFields...)},
		{Resource: Deployments.GroupResource(), Fields: deploymentRunFields},
	}
}

// ReadsWhole implements WholeReader: OLM's own kinds of every operator (Subscriptions, CSVs,
// InstallPlans, Operators, OperatorConditions) and the Deployments that say whether a CSV runs.
// The other kinds an Operator lists as its components it looks up where they are: the shard
// that owns one reports it.
func (r OperatorLeftovers) ReadsWhole() []schema.GroupResource {
	return append(contentResources(r.ReadsContent()), InstallPlans.GroupResource(), OperatorConditions.GroupResource())
}

// ReadsAnnotations implements AnnotationReader: the package a CSV names in its
// operatorframework.io/properties.
func (OperatorLeftovers) ReadsAnnotations() []string { return []string{"operatorframework.io/"} }

// csvRunFields are what rules read of a CSV to tell whether it runs: the Deployments it installs;
// deploymentRunFields, of a Deployment.
var (
	csvRunFields        = []string{"spec.install.spec.deployments"}
	deploymentRunFields = []string{"status.availableReplicas"}
)

// leftover is an object found left behind, with why, and the facts that make it so.
type leftover struct {
	obj      *Object
	reason   string
	evidence []string
	facts    []Fact
}

// operatorOf is an Operator object, split into its package and namespace.
type operatorOf struct {
	obj          *Object
	pkg, ns      string
	subscription *Object
}

// Plan implements Rule.
func (r OperatorLeftovers) Plan(_ context.Context, view *View) []Finding {
	c := &collection{leftBehind: map[types.UID]bool{}, reported: map[types.UID]bool{}}
	operators := operatorsOf(view)
	shared := sharedComponents(view, operators)
	c.abandonedOperators(view, operators, shared)
	c.uninstalledCSVs(view)

	findings := c.unmanaged
	crds := indexCRDs(view)
	for _, l := range c.leftovers {
		findings = append(findings, r.finding(view, crds, l, c.leftBehind, shared))
	}
	return findings
}

// collection gathers what Plan finds, each object once: leftovers, and the unmanaged CSVs it only
// reports.
type collection struct {
	leftovers  []leftover
	unmanaged  []Finding
	leftBehind map[types.UID]bool // the leftovers
	reported   map[types.UID]bool // the leftovers and the unmanaged
}

func (c *collection) add(l leftover) {
	if !c.reported[l.obj.UID] && l.obj.DeletionTimestamp == nil {
		c.reported[l.obj.UID], c.leftBehind[l.obj.UID] = true, true
		c.leftovers = append(c.leftovers, l)
	}
}

func (c *collection) addUnmanaged(csv *Object, runs string) {
	if !c.reported[csv.UID] {
		c.reported[csv.UID] = true
		c.unmanaged = append(c.unmanaged, Finding{Severity: SeverityInfo, Object: csv.Ref(), Reason: "unmanaged: no Subscription, but it runs",
			Evidence: []string{runs, "a ClusterServiceVersion that runs is not left behind; only one that does not, abandoned by its Subscription's deletion, is"}})
	}
}

// abandonedOperators adds the components of every Operator without a Subscription whose CSVs do
// not run, and the Operator; the running CSVs of the others are unmanaged.
func (c *collection) abandonedOperators(view *View, operators []operatorOf, shared map[types.UID]string) {
	for _, op := range operators {
		if op.subscription != nil || !view.Observed(Subscriptions.GroupResource(), op.ns) || !view.Observed(ClusterServiceVersions.GroupResource(), op.ns) {
			continue
		}
		running, stopped := runningCSVs(view, op)
		if len(running) > 0 {
			for _, csv := range running {
				_, runs := csvRuns(view, csv)
				c.addUnmanaged(csv, runs)
			}
			continue // its components are a running operator's
		}
		gone := []string{fmt.Sprintf("no Subscription in namespace %s is named %s, has spec.name %s or carries label operators.coreos.com/%s", op.ns, op.pkg, op.pkg, op.obj.Name)}
		gone = append(gone, stopped...) // why the operator does not run
		abandoned := operatorAbandoned(op)
		refs, _, _ := unstructured.NestedSlice(op.obj.Content, "status", "components", "refs")
		for _, ref := range refs {
			if obj, ok := referenced(view, ref); ok { // else already gone
				evidence := append([]string{fmt.Sprintf("Operator %s lists it in status.components.refs", op.obj.Name)}, gone...)
				if with, ok := shared[obj.UID]; ok {
					evidence = append(evidence, with)
				}
				c.add(leftover{obj, "subscription deleted; left behind", evidence, []Fact{abandoned, notShared(obj, op.obj.Name)}})
			}
		}
		c.add(leftover{op.obj, "subscription deleted; left behind", append([]string{fmt.Sprintf("the Operator of package %s in namespace %s", op.pkg, op.ns)}, gone...), []Fact{abandoned}})
	}
}

// uninstalledCSVs adds the CSVs no Subscription installed (not OLM's copies, nor its own), but for
// those that run: unmanaged.
func (c *collection) uninstalledCSVs(view *View) {
	for _, csv := range view.List(ClusterServiceVersions.GroupResource()) {
		if copiedCSV(csv) || olmsOwnCSV(csv) || !view.Observed(Subscriptions.GroupResource(), csv.Namespace) || installed(view, csv) {
			continue
		}
		if running, runs := csvRuns(view, csv); running {
			c.addUnmanaged(csv, runs)
			continue
		}
		c.add(leftover{csv, "no Subscription installed it; left behind",
			[]string{fmt.Sprintf("no Subscription in namespace %s has it as status.installedCSV or status.currentCSV, or is of the operator it is labelled with", csv.Namespace)},
			[]Fact{csvNotInstalled(csv)}})
	}
}

// operatorsOf lists the Operators whose name splits into a package and a namespace, with their
// Subscription, if one exists.
func operatorsOf(view *View) []operatorOf {
	var operators []operatorOf
	for _, obj := range view.List(Operators.GroupResource()) {
		if pkg, ns, ok := splitOperatorName(obj.Name); ok {
			operators = append(operators, operatorOf{obj: obj, pkg: pkg, ns: ns, subscription: subscriptionFor(view, obj.Name, pkg, ns)})
		}
	}
	return operators
}

// sharedComponents says, by UID, which objects an Operator whose Subscription exists lists among
// its components: those are not left behind when another's Subscription goes.
func sharedComponents(view *View, operators []operatorOf) map[types.UID]string {
	shared := map[types.UID]string{}
	for _, op := range operators {
		if op.subscription == nil {
			continue
		}
		refs, _, _ := unstructured.NestedSlice(op.obj.Content, "status", "components", "refs")
		for _, ref := range refs {
			if obj, ok := referenced(view, ref); ok {
				shared[obj.UID] = fmt.Sprintf("also listed by Operator %s, whose Subscription %s/%s exists: shared, kept", op.obj.Name, op.ns, op.subscription.Name)
			}
		}
	}
	return shared
}

// runningCSVs are the CSVs of an operator in its namespace that run, or may (see csvRuns), and
// why each of the others does not. A CSV is the operator's if OLM labelled it
// operators.coreos.com/<operator>, or if its package, in the operatorframework.io/properties
// annotation OLM writes from the catalog, is the operator's: OLM may remove the label when the
// Subscription goes, the annotation stays.
func runningCSVs(view *View, op operatorOf) (running []*Object, stopped []string) {
	for _, csv := range view.InNamespace(ClusterServiceVersions.GroupResource(), op.ns) {
		_, labelled := csv.Labels["operators.coreos.com/"+op.obj.Name]
		if (labelled || csvPackage(csv) == op.pkg) && !copiedCSV(csv) {
			if runs, why := csvRuns(view, csv); runs {
				running = append(running, csv)
			} else {
				stopped = append(stopped, why)
			}
		}
	}
	return running, stopped
}

// csvRuns says whether a CSV runs, from live evidence only, and why: it is not being deleted (one
// that is, is being uninstalled), and every Deployment its spec.install names exists in its
// namespace with an available replica. Its phase is not evidence: it is whatever OLM last wrote,
// and OLM may be gone. Where the Deployments were not all listed, it may run: it counts as running.
func csvRuns(view *View, csv *Object) (bool, string) {
	name := "ClusterServiceVersion " + csv.Namespace + "/" + csv.Name
	if csv.DeletionTimestamp != nil {
		return false, name + " is being deleted: it is being uninstalled"
	}
	if !view.Observed(Deployments.GroupResource(), csv.Namespace) {
		return true, fmt.Sprintf("the Deployments of %s were not all listed: it may run", csv.Namespace)
	}
	deployments, _, _ := unstructured.NestedSlice(csv.Content, "spec", "install", "spec", "deployments")
	var available []string
	for _, d := range deployments {
		m, _ := d.(map[string]any)
		deployment, _ := m["name"].(string)
		obj, ok := view.Get(Deployments.GroupResource(), csv.Namespace, deployment)
		switch {
		case !ok:
			return false, fmt.Sprintf("%s does not run: its Deployment %s/%s does not exist", name, csv.Namespace, deployment)
		case nestedInt(obj, "status", "availableReplicas") < 1:
			return false, fmt.Sprintf("%s does not run: its Deployment %s/%s has no available replica", name, csv.Namespace, deployment)
		}
		available = append(available, csv.Namespace+"/"+deployment)
	}
	if len(available) == 0 {
		return false, name + " does not run: it installs no Deployment"
	}
	return true, fmt.Sprintf("%s runs: its Deployments %s are available", name, strings.Join(available, ", "))
}

// csvPackage is the package of a CSV, as the olm.package property of its
// operatorframework.io/properties annotation names it; "" if it does not.
func csvPackage(csv *Object) string {
	var properties struct {
		Properties []struct {
			Type  string `json:"type"`
			Value struct {
				PackageName string `json:"packageName"`
			} `json:"value"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(csv.Annotations["operatorframework.io/properties"]), &properties); err != nil {
		return ""
	}
	for _, p := range properties.Properties {
		if p.Type == "olm.package" {
			return p.Value.PackageName
		}
	}
	return ""
}

// olmsOwnCSV reports whether OLM installed a CSV itself, without a Subscription: its
// packageserver (labelled olm.version), or one it reports as a cluster operator
// (olm.clusteroperator.name, on OpenShift).
func olmsOwnCSV(csv *Object) bool {
	_, clusterOperator := csv.Labels["olm.clusteroperator.name"]
	_, versioned := csv.Labels["olm.version"]
	return clusterOperator || (versioned && csv.Name == "packageserver")
}

// operatorAbandoned is the fact that an operator is still abandoned: read again, no Subscription
// is its, and none of its CSVs runs.
func operatorAbandoned(op operatorOf) Fact {
	return factOf{
		key: "abandoned operator " + op.obj.Name,
		reads: []Read{
			{Resource: subscriptionContent.Resource, Namespace: op.ns, Fields: subscriptionContent.Fields},
			{Resource: ClusterServiceVersions.GroupResource(), Namespace: op.ns, Fields: csvRunFields},
			{Resource: Deployments.GroupResource(), Namespace: op.ns, Fields: deploymentRunFields},
		},
		holds: func(view *View) (bool, string) {
			if sub := subscriptionFor(view, op.obj.Name, op.pkg, op.ns); sub != nil {
				return false, fmt.Sprintf("re-checked live: Subscription %s/%s is the operator's now", op.ns, sub.Name)
			}
			if running, _ := runningCSVs(view, op); len(running) > 0 {
				return false, fmt.Sprintf("re-checked live: ClusterServiceVersion %s/%s of the operator runs now", op.ns, running[0].Name)
			}
			return true, fmt.Sprintf("re-checked live: still no Subscription of operator %s, and none of its CSVs runs", op.obj.Name)
		},
	}
}

// notShared is the fact that no Operator but operator, whose Subscription exists, lists obj as
// a component: read again, every Operator and every Subscription say so.
func notShared(obj *Object, operator string) Fact {
	return factOf{
		key: "not shared " + objectKey(*obj.Resource, obj.Namespace, obj.Name) + " beyond " + operator,
		reads: []Read{
			{Resource: Operators.GroupResource(), Fields: []string{"status.components.refs"}},
			{Resource: subscriptionContent.Resource, Fields: subscriptionContent.Fields},
		},
		holds: func(view *View) (bool, string) {
			for _, op := range operatorsOf(view) {
				if op.obj.Name == operator || op.subscription == nil {
					continue
				}
				refs, _, _ := unstructured.NestedSlice(op.obj.Content, "status", "components", "refs")
				if slices.ContainsFunc(refs, func(ref any) bool { return refersTo(ref, obj) }) {
					return false, fmt.Sprintf("re-checked live: Operator %s, whose Subscription %s/%s exists, lists it now: shared", op.obj.Name, op.ns, op.subscription.Name)
				}
			}
			return true, "re-checked live: no operator with a Subscription lists it"
		},
	}
}

// refersTo reports whether a status.components.refs entry names obj.
func refersTo(ref any, obj *Object) bool {
	m, _ := ref.(map[string]any)
	apiVersion, _ := m["apiVersion"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == obj.Resource.Group && m["kind"] == obj.Resource.Kind && m["name"] == obj.Name &&
		(!obj.Resource.Namespaced || m["namespace"] == obj.Namespace)
}

// csvNotInstalled is the fact that no Subscription installed a CSV, and it does not run: read
// again, none does, and its Deployments are not available.
func csvNotInstalled(csv *Object) Fact {
	return factOf{
		key: "not installed ClusterServiceVersion " + csv.Namespace + "/" + csv.Name,
		reads: []Read{
			{Resource: subscriptionContent.Resource, Namespace: csv.Namespace, Fields: subscriptionContent.Fields},
			{Resource: ClusterServiceVersions.GroupResource(), Namespace: csv.Namespace, Name: csv.Name, Fields: csvRunFields},
			{Resource: Deployments.GroupResource(), Namespace: csv.Namespace, Fields: deploymentRunFields},
		},
		holds: func(view *View) (bool, string) {
			if installed(view, csv) {
				return false, fmt.Sprintf("re-checked live: a Subscription in %s installed it now", csv.Namespace)
			}
			if fresh, ok := view.Get(ClusterServiceVersions.GroupResource(), csv.Namespace, csv.Name); ok {
				if runs, why := csvRuns(view, fresh); runs {
					return false, "re-checked live: " + why
				}
			}
			return true, fmt.Sprintf("re-checked live: still no Subscription in %s installed it, and it does not run", csv.Namespace)
		},
	}
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

// finding reports a leftover, with a delete that needs an opt-in for its kind and group. What
// another operator shares is kept. A CRD is deleted only when every ClusterServiceVersion was
// listed, none that is not left behind owns or requires it, and those left behind that do are
// deleted first.
func (r OperatorLeftovers) finding(view *View, crds crdIndex, l leftover, leftovers map[types.UID]bool, shared map[types.UID]string) Finding {
	f := Finding{
		Severity: SeverityWarning,
		Object:   l.obj.Ref(),
		Reason:   l.reason,
		Evidence: l.evidence,
		Action:   Delete{},
		Facts:    l.facts,
	}
	if _, ok := shared[l.obj.UID]; ok {
		f.Severity, f.Action, f.Facts = SeverityInfo, nil, nil
		return f
	}
	if l.obj.Resource.GroupResource() == CustomResourceDefinitions.GroupResource() && !r.crdMayGo(view, crds, l.obj, leftovers, &f) {
		f.Action, f.DependsOn, f.Facts = nil, nil, nil
		return f
	}
	gk := schema.GroupKind{Group: l.obj.Resource.Group, Kind: l.obj.Resource.Kind}
	if _, ok := r.delete[gk]; !ok {
		f.OptIn = fmt.Sprintf("rules.operator-leftovers.delete: [%s]", gk)
	}
	return f
}

// crdMayGo says whether a leftover CRD may be deleted, and adds to f why, what it waits for, and
// the fact it rests on.
func (r OperatorLeftovers) crdMayGo(view *View, crds crdIndex, crd *Object, leftovers map[types.UID]bool, f *Finding) bool {
	f.Evidence = append(f.Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
	if !view.Observed(ClusterServiceVersions.GroupResource(), "") {
		f.Evidence = append(f.Evidence, "ClusterServiceVersions were not all listed: one may still own or require it; not deleted")
		return false
	}
	var live, leftBehind []string
	for _, csv := range crds.users[crd.Name] {
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
		return false
	}
	if len(leftBehind) > 0 {
		f.Evidence = append(f.Evidence, "deleted only after "+strings.Join(leftBehind, ", ")+", left behind too, which owns or requires it")
	}
	f.Facts = append(f.Facts, crdUnused(crd.Name, f.DependsOn))
	return true
}

// crdUnused is the fact that no ClusterServiceVersion but those deleted first owns or requires a
// CRD: read again, every CSV says so.
func crdUnused(crdName string, deletedFirst []ObjectRef) Fact {
	return factOf{
		key:   "unused CRD " + crdName,
		reads: []Read{{Resource: ClusterServiceVersions.GroupResource(), Fields: csvCRDFields}},
		holds: func(view *View) (bool, string) {
			for _, csv := range indexCRDs(view).users[crdName] {
				if !slices.ContainsFunc(deletedFirst, func(ref ObjectRef) bool { return ref.UID == csv.UID }) {
					return false, fmt.Sprintf("re-checked live: ClusterServiceVersion %s/%s owns or requires it now", csv.Namespace, csv.Name)
				}
			}
			return true, "re-checked live: no other ClusterServiceVersion owns or requires it"
		},
	}
}
