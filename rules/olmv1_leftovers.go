package rules

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OLMv1LeftoversName is the name of rule olmv1-leftovers.
const OLMv1LeftoversName = "olmv1-leftovers"

// The labels OLM v1 puts on what it applies for a ClusterExtension (operator-controller
// internal/operator-controller/labels/labels.go): CRDs, RBAC, Deployments, ClusterObjectSets.
const (
	olmv1OwnerKind = "olm.operatorframework.io/owner-kind"
	olmv1OwnerName = "olm.operatorframework.io/owner-name"
)

// OLMv1Leftovers reports what OLM v1 applied for a ClusterExtension that no longer exists
// (operator-framework/operator-controller#2313: uninstalling leaves ClusterRoles and bindings),
// by the owner labels OLM v1 puts on it. RBAC is deleted once opted in (rules.olmv1-leftovers.delete),
// as olm-rbac's; a CRD only when it has no custom resource left, and never while it has one (they
// would go with it); everything else, and the namespaces that hold it, is reported. What the
// garbage collector deletes through an ownerReference to the ClusterExtension is its job. Before a
// delete, the ClusterExtension's absence (and a CRD's emptiness) is read again, live.
type OLMv1Leftovers struct {
	args OLMv1LeftoversArgs
}

// OLMv1LeftoversArgs are the arguments of olmv1-leftovers: rules.olmv1-leftovers in the config
// file.
type OLMv1LeftoversArgs struct {
	// Delete opts in to deleting the RBAC, and the CRDs without custom resources, of gone
	// ClusterExtensions.
	Delete bool `json:"delete,omitempty"`
}

// NewOLMv1Leftovers builds olmv1-leftovers.
func NewOLMv1Leftovers(args OLMv1LeftoversArgs, _ Settings) (OLMv1Leftovers, error) {
	return OLMv1Leftovers{args: args}, nil
}

var (
	_ Authorized       = OLMv1Leftovers{}
	_ OptedIn          = OLMv1Leftovers{}
	_ ContentReader    = OLMv1Leftovers{}
	_ WholeReader      = OLMv1Leftovers{}
	_ AnnotationReader = OLMv1Leftovers{}
)

// ReadsContent implements ContentReader: ClusterExtensions' conditions, which say why an install
// fails, and the CRDs CSVs own, which say whose a conflicting CRD is.
func (OLMv1Leftovers) ReadsContent() []ContentRequest {
	return []ContentRequest{
		{Resource: ClusterExtensions.GroupResource(), Fields: []string{"status.conditions", "spec.serviceAccount", "spec.namespace"}},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: csvCRDFields},
		{Resource: ClusterRoleBindings.GroupResource(), Fields: bindingFields},
		{Resource: RoleBindings.GroupResource(), Fields: bindingFields},
	}
}

// ReadsWhole implements WholeReader: the ClusterExtensions, and what says whether what OLM v1
// applied for one is still in use, or whose a conflicting object is: the bindings of its
// ServiceAccount and the workloads labelled for it, wherever they are, its namespace, the CRDs and
// the CSVs that own them.
func (r OLMv1Leftovers) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), groupResources(Namespaces, CustomResourceDefinitions), groupResources(olmv1Workloads...))
}

// ReadsAnnotations implements AnnotationReader: the Helm release a conflicting CRD belongs to.
func (OLMv1Leftovers) ReadsAnnotations() []string { return []string{helmAnnotations} }

// olmv1Deletable are the resources olmv1-leftovers deletes, bindings before what they bind.
var olmv1Deletable = []Resource{ClusterRoleBindings, ClusterRoles, RoleBindings, Roles, CustomResourceDefinitions}

// Name implements Rule.
func (OLMv1Leftovers) Name() string { return OLMv1LeftoversName }

// Writes implements Authorized.
func (OLMv1Leftovers) Writes() []Write { return deletes(olmv1Deletable) }

// MayHaveWritten implements Authorized: RBAC or a CRD labelled as applied for the
// ClusterExtension the finding names.
func (OLMv1Leftovers) MayHaveWritten(_ string, obj *unstructured.Unstructured, evidence []string) error {
	if err := kindOf(olmv1Deletable, obj); err != nil {
		return err
	}
	labels := obj.GetLabels()
	if labels[olmv1OwnerKind] != ClusterExtensions.Kind || labels[olmv1OwnerName] == "" {
		return fmt.Errorf("%s %s is not labelled as a ClusterExtension's by OLM v1 (%s, %s)", obj.GetKind(), obj.GetName(), olmv1OwnerKind, olmv1OwnerName)
	}
	if !slices.Contains(evidence, olmv1OwnerEvidence(labels[olmv1OwnerName])) {
		return fmt.Errorf("%s %s is labelled as ClusterExtension %s's, not as the finding's", obj.GetKind(), obj.GetName(), labels[olmv1OwnerName])
	}
	return nil
}

// Admission implements Authorized: what OLM v1 labelled as applied for a ClusterExtension.
func (OLMv1Leftovers) Admission() Admission {
	return Admission{Deletes: olmv1Deletable, When: fmt.Sprintf(`'%[1]s' in variables.labels && variables.labels['%[1]s'] == '%[2]s' &&
  '%[3]s' in variables.labels`, olmv1OwnerKind, ClusterExtensions.Kind, olmv1OwnerName)}
}

// OptInArgs implements OptedIn: delete.
func (OLMv1Leftovers) OptInArgs() any { return OLMv1LeftoversArgs{Delete: true} }

// PolicyRules implements Authorized: delete, once opted in.
func (r OLMv1Leftovers) PolicyRules() []rbacv1.PolicyRule {
	if !r.args.Delete {
		return nil
	}
	return deletePolicy(olmv1Deletable)
}

// olmv1OwnerEvidence is the evidence of a finding about what OLM v1 labelled as applied for a
// ClusterExtension.
func olmv1OwnerEvidence(name string) string {
	return fmt.Sprintf("labelled %s=ClusterExtension, %s=%s", olmv1OwnerKind, olmv1OwnerName, name)
}

// olmv1Owner returns the ClusterExtension OLM v1 labelled obj as applied for.
func olmv1Owner(obj *Object) (string, bool) {
	name := obj.Labels[olmv1OwnerName]
	return name, obj.Labels[olmv1OwnerKind] == ClusterExtensions.Kind && name != ""
}

// knownCause is what is known to keep a finalizer on an object although its controller runs, and
// what to check; "" if nothing is.
func knownCause(finalizer string) string {
	switch finalizer {
	case "olm.operatorframework.io/cleanup-contentmanager-cache":
		return "known cause: operator-controller keeps " + finalizer + " when no handler is registered for it " +
			"(operator-framework/operator-controller#2304, OCPBUGS-62942): check operator-controller's logs for this ClusterExtension, " +
			"restart operator-controller, and upgrade it to a release with the fix; once operator-controller is gone, the sweeper releases it"
	}
	return ""
}

// clusterExtensionGone says whether ClusterExtension name is gone, with the evidence and the fact
// a write rests on; ok is false when the view cannot tell.
func clusterExtensionGone(view *View, name string) (gone bool, evidence string, fact Fact, ok bool) {
	if _, exists := view.Get(ClusterExtensions.GroupResource(), "", name); exists {
		return false, "", nil, true
	}
	if !view.Observed(ClusterExtensions.GroupResource(), "") {
		return false, "", nil, false
	}
	if _, served := view.Listed(ClusterExtensions.GroupResource()); !served {
		// OLM v1 itself is gone, its CRDs with it: no ClusterExtension can exist. A CRD there but
		// not served yet (not established) says nothing.
		crd := ClusterExtensions.Resource + "." + ClusterExtensions.Group
		if _, exists := view.Get(CustomResourceDefinitions.GroupResource(), "", crd); exists || !view.Observed(CustomResourceDefinitions.GroupResource(), "") {
			return false, "", nil, false
		}
		return true, fmt.Sprintf("ClusterExtension %s no longer exists: OLM v1 is not installed (no CRD %s)", name, crd),
			ObjectAbsent{CustomResourceDefinitions, "", crd}, true
	}
	return true, fmt.Sprintf("ClusterExtension %s no longer exists", name), ObjectAbsent{ClusterExtensions, "", name}, true
}

// Plan implements Rule.
func (r OLMv1Leftovers) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	left := map[string]map[string]int{} // objects left in a namespace, by ClusterExtension
	for obj := range view.Objects() {
		name, ok := olmv1Owner(obj)
		if !ok || obj.DeletionTimestamp != nil {
			continue
		}
		gone, why, fact, known := clusterExtensionGone(view, name)
		if !gone || !known {
			continue
		}
		f := Finding{
			Severity: SeverityWarning,
			Object:   obj.Ref(),
			Reason:   fmt.Sprintf("applied by OLM v1 for ClusterExtension %s, which no longer exists; its %s is left behind", name, obj.Resource.Kind),
			Evidence: []string{olmv1OwnerEvidence(name), why},
		}
		if obj.Namespace != "" {
			if left[obj.Namespace] == nil {
				left[obj.Namespace] = map[string]int{}
			}
			left[obj.Namespace][name]++
		}
		switch {
		case ownedByClusterExtension(view, obj):
			// The garbage collector deletes it once it sees the ClusterExtension gone.
			f.Severity = SeverityInfo
			f.Reason = fmt.Sprintf("applied by OLM v1 for ClusterExtension %s, which no longer exists; the garbage collector deletes its %s", name, obj.Resource.Kind)
			f.Evidence = append(f.Evidence, "it has an ownerReference to the ClusterExtension: the garbage collector deletes it")
		case obj.Resource.GroupResource() == CustomResourceDefinitions.GroupResource():
			r.crd(view, obj, fact, &f)
		case slices.ContainsFunc(olmv1Deletable, func(d Resource) bool { return d.GroupResource() == obj.Resource.GroupResource() }):
			// RBAC goes only once no workload of the extension is left that could run with it.
			if held := labelledWorkloads(view, name); held != "" {
				f.Evidence = append(f.Evidence, held)
				break
			}
			f.Action, f.Facts = Delete{}, []Fact{fact, noLabelledWorkloads(name)}
			if !r.args.Delete {
				f.OptIn = "rules.olmv1-leftovers.delete"
			}
		}
		findings = append(findings, f)
	}
	findings = append(findings, migrationBlockers(view)...)
	findings = append(findings, unusedInstallers(view)...)
	for _, ns := range slices.Sorted(maps.Keys(left)) {
		obj, ok := view.Get(Namespaces.GroupResource(), "", ns)
		if !ok || obj.DeletionTimestamp != nil {
			continue
		}
		var counts []string
		for _, name := range slices.Sorted(maps.Keys(left[ns])) {
			counts = append(counts, fmt.Sprintf("%d of ClusterExtension %s", left[ns][name], name))
		}
		findings = append(findings, Finding{
			Severity: SeverityInfo,
			Object:   obj.Ref(),
			Reason:   "holds what OLM v1 applied for ClusterExtensions that no longer exist: the operator's namespace, perhaps",
			Evidence: []string{"objects left behind in it: " + strings.Join(counts, ", ")},
		})
	}
	return findings
}

// crd plans for a CRD left by a gone ClusterExtension: deleted, opted in, only with no custom
// resource, which is read again live; never while it has one, which would go with it.
func (r OLMv1Leftovers) crd(view *View, obj *Object, gone Fact, f *Finding) {
	plural, group, _ := strings.Cut(obj.Name, ".")
	gr := schema.GroupResource{Group: group, Resource: plural}
	if !view.Observed(gr, "") {
		f.Evidence = append(f.Evidence, fmt.Sprintf("its custom resources (%s) were not all listed: kept", gr))
		return
	}
	instances := view.List(gr)
	if len(instances) > 0 {
		var names []string
		for _, cr := range instances[:min(len(instances), 5)] {
			names = append(names, cr.Ref().String())
			f.BlockedBy = append(f.BlockedBy, cr.Ref())
		}
		f.Reason = fmt.Sprintf("applied by OLM v1 for ClusterExtension %s, which no longer exists; kept: it has %d custom resources, which would be deleted with it", obj.Labels[olmv1OwnerName], len(instances))
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d custom resources: %s", len(instances), strings.Join(names, ", ")),
			"delete them first (their own findings say what holds them), or keep the CRD for the operator's next install")
		return
	}
	f.Evidence = append(f.Evidence, fmt.Sprintf("it has no custom resource (%s listed in every namespace)", gr))
	f.Action, f.Facts = Delete{}, []Fact{gone, noCustomResources(gr)}
	if !r.args.Delete {
		f.OptIn = "rules.olmv1-leftovers.delete"
	}
}

// noCustomResources is the fact that a resource has no object, in any namespace.
func noCustomResources(gr schema.GroupResource) Fact {
	return factOf{
		key:   "no objects of " + gr.String(),
		reads: []Read{{Resource: gr}},
		holds: func(view *View) (bool, string) {
			if n := len(view.List(gr)); n > 0 {
				return false, fmt.Sprintf("re-checked live: %d %s exist now", n, gr)
			}
			return true, fmt.Sprintf("re-checked live: no %s exists", gr)
		},
	}
}

// ownedByClusterExtension reports whether obj has an ownerReference to a ClusterExtension that the
// garbage collector can resolve: its CRD is served, and obj is cluster-scoped or the owner
// namespaced (a ClusterExtension is cluster-scoped, so any object may name it).
func ownedByClusterExtension(view *View, obj *Object) bool {
	if _, served := view.Listed(ClusterExtensions.GroupResource()); !served {
		return false
	}
	return slices.ContainsFunc(obj.OwnerReferences, func(ref metav1.OwnerReference) bool {
		return ref.Kind == ClusterExtensions.Kind && strings.HasPrefix(ref.APIVersion, ClusterExtensions.Group+"/")
	})
}

// singleOwnerConflicts are how a ClusterExtension's conditions say its install met an object OLM v1
// did not apply, which it will not take over (its single-owner rule): operator-controller's words
// (internal/operator-controller/action/error/errors.go), and Helm's, which they rewrite.
var singleOwnerConflicts = []*regexp.Regexp{
	regexp.MustCompile(`(\w+) '([^']*)' already exists in namespace '([^']*)' and cannot be managed by operator-controller`),
	regexp.MustCompile(`Unable to continue with install: (\w+) "([^"]*)" in namespace "([^"]*)" exists and cannot be imported`),
}

// migrationBlockers finds the ClusterExtensions whose install fails on the single-owner rule, and
// links each to the object in its way: often a CRD an OLM v0 operator left, which blocks the
// migration to OLM v1.
func migrationBlockers(view *View) []Finding {
	var findings []Finding
	var crds *crdIndex
	for _, ce := range view.List(ClusterExtensions.GroupResource()) {
		conditions, _, _ := unstructured.NestedSlice(ce.Content, "status", "conditions")
		for _, c := range conditions {
			condition, _ := c.(map[string]any)
			message, _ := condition["message"].(string)
			var m []string
			for _, re := range singleOwnerConflicts {
				if m = re.FindStringSubmatch(message); m != nil {
					break
				}
			}
			if m == nil {
				continue
			}
			kind, name, namespace := m[1], m[2], m[3]
			f := Finding{
				Severity: SeverityWarning,
				Object:   ce.Ref(),
				Reason:   fmt.Sprintf("its install fails on OLM v1's single-owner rule: %s %s exists, and OLM v1 did not apply it", kind, name),
				Evidence: []string{fmt.Sprintf("condition %v=%v: %s", condition["type"], condition["status"], message)},
			}
			obj := findByKind(view, kind, namespace, name)
			if obj == nil {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s %s is not in the view", kind, name))
				findings = append(findings, f)
				break
			}
			f.BlockedBy = []ObjectRef{obj.Ref()}
			if crds == nil && obj.Resource.GroupResource() == CustomResourceDefinitions.GroupResource() {
				index := indexCRDs(view)
				crds = &index
			}
			f.Evidence = append(f.Evidence, conflictOwner(view, crds, obj)...)
			findings = append(findings, f)
			break // one finding per ClusterExtension: its conditions repeat the message
		}
	}
	return findings
}

// findByKind is the object of a kind, namespace and name, of any group: conditions name kinds only.
func findByKind(view *View, kind, namespace, name string) *Object {
	for _, r := range view.Resources() {
		if r.Kind != kind {
			continue
		}
		ns := namespace
		if !r.Namespaced {
			ns = ""
		}
		if obj, ok := view.Get(r.GroupResource(), ns, name); ok {
			return obj
		}
	}
	return nil
}

// conflictOwner says whose the object in a ClusterExtension's way is, and what to do.
func conflictOwner(view *View, crds *crdIndex, obj *Object) []string {
	name := obj.Resource.Kind + " " + obj.Name
	if obj.Namespace != "" {
		name = obj.Resource.Kind + " " + obj.Namespace + "/" + obj.Name
	}
	var owners []string
	if label, ok := olmLabel(obj); ok {
		owners = append(owners, fmt.Sprintf("%s was installed by OLM v0 (label %s)", name, label))
	}
	if crds != nil && obj.Resource.GroupResource() == CustomResourceDefinitions.GroupResource() {
		csvs := crds.owners[obj.Name]
		switch {
		case len(csvs) > 0:
			var names []string
			for _, csv := range csvs {
				names = append(names, csv.Namespace+"/"+csv.Name)
			}
			owners = append(owners, fmt.Sprintf("ClusterServiceVersion %s owns it: the OLM v0 operator is still installed; delete its Subscription and CSV first (the CRD and its custom resources stay)", strings.Join(names, ", ")))
		case len(owners) > 0 && !view.Observed(ClusterServiceVersions.GroupResource(), ""):
			owners = append(owners, "ClusterServiceVersions were not all listed: whether the OLM v0 operator is still installed is unknown")
		case len(owners) > 0:
			owners = append(owners, "no ClusterServiceVersion owns it any more: the OLM v0 operator is gone, its CRD left behind")
		}
	}
	if m := helmMetadataOf(obj); m.ok {
		owners = append(owners, fmt.Sprintf("%s belongs to Helm release %s/%s", name, m.namespace, m.release))
	}
	if len(owners) == 0 {
		owners = append(owners, fmt.Sprintf("%s carries no mark of OLM v0 or Helm: applied by hand, or by another tool", name))
	}
	return append(owners, fmt.Sprintf("OLM v1 installs only what it applies itself: once nothing else manages %s, back up what it holds, delete it, and let the ClusterExtension install it again (a CRD's custom resources go with it: back them up and restore them after)", name))
}

// bindingFields are what unusedInstallers reads of a binding.
var bindingFields = []string{"subjects", "roleRef"}

// unusedInstallers finds the ClusterExtensions whose spec.serviceAccount names an installer
// ServiceAccount that the installed OLM v1 no longer uses, with the bindings that still grant it
// rights (users made them per the old docs, often to cluster-admin). OLM v1 stopped using it with
// operator-controller#2770, in the releases that apply through ClusterObjectSets: served, they
// say so.
func unusedInstallers(view *View) []Finding {
	if _, served := view.Listed(ClusterObjectSets.GroupResource()); !served {
		return nil // an OLM v1 that still installs as spec.serviceAccount says
	}
	var findings []Finding
	for _, ce := range view.List(ClusterExtensions.GroupResource()) {
		sa := nestedString(ce, "spec", "serviceAccount", "name")
		namespace := nestedString(ce, "spec", "namespace")
		if sa == "" || namespace == "" || ce.DeletionTimestamp != nil {
			continue
		}
		evidence := []string{fmt.Sprintf("spec.serviceAccount names ServiceAccount %s/%s; this OLM v1 serves ClusterObjectSets, and such releases ignore it (operator-controller#2770): it installs with its own ServiceAccount", namespace, sa)}
		var grants []string
		for _, binding := range append(view.List(ClusterRoleBindings.GroupResource()), view.InNamespace(RoleBindings.GroupResource(), namespace)...) {
			if bindsServiceAccount(binding, namespace, sa) {
				grants = append(grants, fmt.Sprintf("%s %s grants %s %s", binding.Resource.Kind, binding.Ref().Name,
					nestedString(binding, "roleRef", "kind"), nestedString(binding, "roleRef", "name")))
			}
		}
		if len(grants) == 0 {
			continue // nothing grants it rights: nothing to clean up
		}
		evidence = append(evidence, grants...)
		evidence = append(evidence, "drop spec.serviceAccount from the ClusterExtension; once nothing else runs as the ServiceAccount, delete it and these bindings")
		findings = append(findings, Finding{
			Severity: SeverityInfo,
			Object:   ce.Ref(),
			Reason:   fmt.Sprintf("its installer ServiceAccount %s/%s is no longer used, and %d bindings still grant it rights", namespace, sa, len(grants)),
			Evidence: evidence,
		})
	}
	return findings
}

// bindsServiceAccount reports whether a binding's subjects name ServiceAccount namespace/name.
func bindsServiceAccount(binding *Object, namespace, name string) bool {
	subjects, _, _ := unstructured.NestedSlice(binding.Content, "subjects")
	for _, s := range subjects {
		subject, _ := s.(map[string]any)
		ns, _ := subject["namespace"].(string)
		if ns == "" {
			ns = binding.Namespace // a RoleBinding's own namespace
		}
		if subject["kind"] == "ServiceAccount" && subject["name"] == name && ns == namespace {
			return true
		}
	}
	return false
}

// olmv1Workloads are the kinds of the workloads OLM v1 applies for an extension.
var olmv1Workloads = []Resource{Deployments, StatefulSets, DaemonSets}

// olmv1OwnerSelector selects what OLM v1 labelled as applied for ClusterExtension name.
func olmv1OwnerSelector(name string) string {
	return olmv1OwnerKind + "=" + ClusterExtensions.Kind + "," + olmv1OwnerName + "=" + name
}

// labelledWorkloads says why the RBAC of ClusterExtension name must stay: a workload labelled for
// it still exists (and may run with it), or the workloads were not all listed; "" if neither.
func labelledWorkloads(view *View, name string) string {
	for _, r := range olmv1Workloads {
		if !view.Observed(r.GroupResource(), "") {
			return fmt.Sprintf("kept: %s were not all listed, and one of the extension's may still run with it", r.GroupResource())
		}
		for _, w := range view.List(r.GroupResource()) {
			if owner, ok := olmv1Owner(w); ok && owner == name && w.DeletionTimestamp == nil {
				return fmt.Sprintf("kept while %s %s/%s, applied for the same ClusterExtension, exists: it may run with it (delete it first)", r.Kind, w.Namespace, w.Name)
			}
		}
	}
	return ""
}

// noLabelledWorkloads is the fact that no workload labelled for ClusterExtension name exists.
func noLabelledWorkloads(name string) Fact {
	var reads []Read
	for _, r := range olmv1Workloads {
		reads = append(reads, Read{Resource: r.GroupResource(), Selector: olmv1OwnerSelector(name)})
	}
	return factOf{
		key:   "no workloads of ClusterExtension " + name,
		reads: reads,
		holds: func(view *View) (bool, string) {
			for _, r := range olmv1Workloads {
				if objs := view.List(r.GroupResource()); len(objs) > 0 {
					return false, fmt.Sprintf("re-checked live: %s %s/%s of ClusterExtension %s exists now", r.Kind, objs[0].Namespace, objs[0].Name, name)
				}
			}
			return true, fmt.Sprintf("re-checked live: no workload of ClusterExtension %s", name)
		},
	}
}
