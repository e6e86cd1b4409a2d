// Package rules holds what operator-sweeper knows about operator debris. Each rule is pure: it
// reads an immutable View of the cluster and returns Findings, each with the evidence behind it
// and, where the rule is sure, an Action described as data. Rules never call the API server and
// never read a clock of their own; the engine in package sweeper owns all I/O.
package rules

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Rule finds one kind of debris.
type Rule interface {
	// Name is the rule's stable name, used by --rules, the config file, the report and metrics.
	Name() string
	// Plan returns the rule's findings for the view. It must not modify the view.
	Plan(ctx context.Context, view *View) []Finding
}

// ContentReader is a Rule that reads more than metadata of some resources: the engine lists
// those in full (spec and status) and hands them over in Object.Content.
type ContentReader interface {
	ReadsContent() []ContentRequest
}

// AnnotationReader is a Rule that looks annotations up (Object.Annotations): the engine keeps, of
// every object, the annotations of the families the enabled rules read, and drops the others
// (KeptAnnotations). A rule looks an annotation up by its key, never ranges over them: it would
// see only those kept.
type AnnotationReader interface {
	// ReadsAnnotations are the families of the annotations the rule reads, as key prefixes
	// ("meta.helm.sh/").
	ReadsAnnotations() []string
}

// WholeReader is a Rule whose decisions rest on the objects of some resources wherever they are
// in the cluster: the workloads that may run a finalizer's controller, the CSVs that may own a
// CRD, the nodes of a pod's zone. Each shard of a split sweep reads those resources whole, so that
// it decides from what a single run would see; of the others, it keeps its share (see
// sweeper.Shard).
type WholeReader interface {
	// ReadsWhole are the resources the rule asks the view for objects of, or reads in full (a
	// test checks): all but those it looks objects up in by a kind known only at run time.
	ReadsWhole() []schema.GroupResource
}

// ContentRequest asks for the content of a resource's objects.
type ContentRequest struct {
	Resource schema.GroupResource
	// Selector, a label selector, limits the content to the matching objects; the others are
	// still observed, as metadata. Empty means every object.
	Selector string
	// Fields are the dotted paths the rule reads ("spec.nodeName", "status.conditions"); the
	// engine keeps only these, so that large objects cost little memory. Empty means all.
	Fields []string
}

// Authorized is a Rule that acts: PolicyRules are the RBAC rules its actions need (the verb and a
// get, to re-read after a lost race), as configured. The engine's walk needs list on everything
// on top. The shipped ClusterRole grants exactly what the enabled rules declare.
type Authorized interface {
	PolicyRules() []rbacv1.PolicyRule
	// Writes are every write the rule may make, opted in or not: restore undoes no other.
	Writes() []Write
	// MayHaveWritten says why obj, as it was right before a write of action that the rule
	// reported with evidence, is not an object the rule could have written; nil if it could. It
	// is how restore tells a pre-image that matches its finding from one that was made up.
	MayHaveWritten(action string, obj *unstructured.Unstructured, evidence []string) error
	// Admission is what the admission policy lets through of the rule's deletes and owner
	// changes: make generate writes it into manifests/base/admission.yaml and the chart's.
	Admission() Admission
}

// Admission is a rule's part of the admission policy that fences the ServiceAccount's writes
// whatever its RBAC grants: make generate writes it into the policy, and fails while the rule's
// PolicyRules grant a delete its Admission does not allow (the API server would refuse it). It is
// declared apart from the RBAC, so that no grant alone widens what the sweeper may do. Its
// expressions are CEL, as a ValidatingAdmissionPolicy evaluates them; the API server checks them
// when the policy is applied, and test/e2e runs the policy.
type Admission struct {
	// Deletes are the resources the rule may delete objects of (while its opt-in is on, for an
	// OptedIn rule), those of which When is true.
	Deletes []Resource
	// When is true of an object the rule may delete: it reads oldObject and the policy's
	// variables labels (the object's) and resource ("<group>/<plural>"). "" when being of one of
	// Deletes is enough.
	When string
	// Owners are the ownerReferences the rule may add.
	Owners []OwnerAdmission
}

// OwnerAdmission lets a rule give the objects of a resource owners: the ownerReferences r for
// which Owner, a CEL expression, is true. Every other change of ownerReferences is refused.
type OwnerAdmission struct {
	Resource Resource
	Owner    string
	// Owners names them in the refusal: "operator-sweeper may give <a Kind> only <Owners> as
	// owners".
	Owners string
}

// OptedIn is an Authorized rule with writes that are off unless opted in (rules.<name>.delete):
// OptInArgs are its arguments (its …Args type) with them on, as far as its opt-in in the cluster
// covers them: the component manifests/components/opt-in-<name> and the chart's optIn value. make
// generate grants what the rule built from them declares (PolicyRules, which depend on no
// Settings) in the ClusterRole operator-sweeper-<name> of both.
type OptedIn interface {
	Authorized
	OptInArgs() any
}

// Write is a kind of write a rule may make: an action type on the objects of a resource; the
// Resource "*" is any.
type Write struct {
	Action   string
	Resource schema.GroupResource
}

// AnyResource is the Resource of a Write that may be of any resource.
var AnyResource = schema.GroupResource{Resource: "*"}

// ActionTypes are the types of the actions a rule may plan (Action.Type), opted in or not.
func ActionTypes(r Authorized) []string {
	var types []string
	for _, w := range r.Writes() {
		if !slices.Contains(types, w.Action) {
			types = append(types, w.Action)
		}
	}
	return types
}

// Allows says whether the rule declares a write of action on resource.
func Allows(r Authorized, action string, resource schema.GroupResource) bool {
	return slices.ContainsFunc(r.Writes(), func(w Write) bool {
		return w.Action == action && (w.Resource == AnyResource || w.Resource == resource)
	})
}

// deletes are the writes of a rule that deletes objects of resources.
func deletes(resources []Resource) []Write {
	writes := make([]Write, 0, len(resources))
	for _, r := range resources {
		writes = append(writes, Write{Action: Delete{}.Type(), Resource: r.GroupResource()})
	}
	return writes
}

// groupResources are the GroupResources of resources.
func groupResources(resources ...Resource) []schema.GroupResource {
	grs := make([]schema.GroupResource, 0, len(resources))
	for _, r := range resources {
		grs = append(grs, r.GroupResource())
	}
	return grs
}

// contentResources are the resources of content requests.
func contentResources(requests []ContentRequest) []schema.GroupResource {
	grs := make([]schema.GroupResource, 0, len(requests))
	for _, req := range requests {
		grs = append(grs, req.Resource)
	}
	return grs
}

// sameKind says why obj is not of resource r; nil if it is.
func sameKind(r Resource, obj *unstructured.Unstructured) error {
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != r.Group || obj.GetKind() != r.Kind {
		return fmt.Errorf("a %s is not a %s", obj.GroupVersionKind().GroupKind(), r.GroupResource())
	}
	return nil
}

// kindOf says why obj is none of resources; nil if it is one.
func kindOf(resources []Resource, obj *unstructured.Unstructured) error {
	for _, r := range resources {
		if sameKind(r, obj) == nil {
			return nil
		}
	}
	return fmt.Errorf("the rule writes no %s", obj.GroupVersionKind().GroupKind())
}

// Severity says how much a finding matters to a cluster admin.
type Severity string

const (
	// SeverityInfo is a fact worth knowing, such as an object that is stuck Terminating.
	SeverityInfo Severity = "info"
	// SeverityWarning needs a human: the sweeper will not act, but something is wrong.
	SeverityWarning Severity = "warning"
)

// Finding is one observation of a rule about one object.
type Finding struct {
	// Rule is the name of the rule that made the finding, set by the engine.
	Rule string
	// Severity says how much the finding matters.
	Severity Severity
	// Object is the object the finding is about, as it was observed.
	Object ObjectRef
	// Reason is a short, human-readable summary of the finding.
	Reason string
	// Evidence lists the facts the rule checked to reach its decision.
	Evidence []string
	// Action is what the rule wants done about the object; nil means report only.
	Action Action
	// OptIn, when set, names the config setting that must be enabled before the action is taken
	// ("rules.olm-rbac.delete"); until then the action is reported as skipped.
	OptIn string
	// DependsOn lists objects whose actions must be done first: if any of them was not acted on
	// successfully in the same run, this action is skipped. The engine applies the rules in an
	// order that puts dependencies first.
	DependsOn []ObjectRef
	// Facts are what the action rests on besides the object itself (whose UID and
	// resourceVersion are the write's preconditions): the engine checks each again, live, right
	// before the write, and skips the action if one no longer holds.
	Facts []Fact
	// Held, when set, says why the action must not be taken in this run although the rule
	// would take it (a zone-wide outage): it is reported as skipped, with this reason.
	Held *Held
	// Symptom says the finding reports that its object is stuck, not why: the findings of what
	// blocks it (BlockedBy), and its own other findings, explain it.
	Symptom bool
	// Refuses are the writes the object refuses while it stands (an admission webhook with a dead
	// backend and failurePolicy Fail): the engine makes every action whose write one matches
	// depend on this finding's own action, in the same run.
	Refuses []Refusal
	// BlockedBy names the objects that keep this one stuck: what is left in a Terminating
	// namespace, the APIService its deletion cannot discover. Their findings explain it; the
	// report chains findings by it, root causes first.
	BlockedBy []ObjectRef
	// OperatorGone, when set, says the finding blames an operator that was uninstalled for what
	// it is about: a preflight of the uninstall would have said so beforehand, and the report
	// names that preflight. Nil where the finding blames none (a live controller, one scaled to
	// 0, nobody known). The report reads it, not the reason or the evidence, which are for
	// humans and may be reworded.
	OperatorGone *OperatorGone
}

// OperatorGone is the operator a finding blames, uninstalled: what names it, and how its preflight
// would have prevented what it left behind. Findings share it: it is not to be modified.
type OperatorGone struct {
	// Installer names the operator as the finding's evidence first names it; nil where nothing
	// does (an APIService whose Service's namespace is gone, a CRD only labelled by OLM).
	Installer *Installer `json:"installer,omitempty"`
	// Drain says what it left behind are custom resources on its finalizers: a preflight with
	// --drain deletes them while the operator still runs, so that it finalizes them.
	Drain bool `json:"drain,omitempty"`
}

// Installer is an operator as its uninstall removes it, and so as `operator-sweeper preflight`
// takes it: the ClusterServiceVersion OLM installed it for, the Helm release of its CRD, or the
// workload that runs its controller, as a controller mapping names it.
type Installer struct {
	// Kind is ClusterServiceVersion, HelmRelease (a release of the helm command, kept in Secrets
	// or ConfigMaps of its namespace; no custom resource), Deployment, StatefulSet or DaemonSet.
	Kind string `json:"kind"`
	// Namespace is empty for a workload matched in any namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name is empty for a workload matched by label selector or container image: Selector or
	// Image says which, as the controller mapping does.
	Name     string `json:"name,omitempty"`
	Selector string `json:"selector,omitempty"`
	Image    string `json:"image,omitempty"`
}

// HelmReleaseKind is the Kind of an Installer that is a Helm release.
const HelmReleaseKind = "HelmRelease"

// Held is why a rule holds an action back: a reason, one word ("zone-outage"), and what it is
// about.
type Held struct {
	Reason string
	Detail string
}

// HeldZoneOutage holds back what would be done on a node in a zone-wide outage.
const HeldZoneOutage = "zone-outage"

// HeldNotDrainable holds back a drain's delete of a custom resource when nothing says which
// workload finalizes it: deleted, it may stay Terminating.
const HeldNotDrainable = "not-drainable"

// ObjectRef identifies an observed object, including the version the rule saw.
type ObjectRef struct {
	Resource        schema.GroupVersionResource
	Kind            string
	Namespace       string
	Name            string
	UID             types.UID
	ResourceVersion string
}

// APIVersion returns the object's apiVersion, such as "v1" or "apps/v1".
func (r ObjectRef) APIVersion() string {
	return r.Resource.GroupVersion().String()
}

// String returns the object as kubectl would name it: "kind.group namespace/name".
func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Resource.Group != "" {
		kind += "." + r.Resource.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

// Action is a change to one object, described as data. The engine carries it out with a
// precondition, so that a controller racing the sweeper always wins.
type Action interface {
	// Type is the action's name in the report and in metrics.
	Type() string
	// String describes the action for a human.
	String() string
}

// RemoveFinalizers removes exactly the named finalizers and keeps every other one. The engine
// sends a JSON patch that first tests the object's UID and its finalizers as observed.
type RemoveFinalizers struct {
	Finalizers []string
}

// Type implements Action.
func (RemoveFinalizers) Type() string { return "RemoveFinalizers" }

func (a RemoveFinalizers) String() string {
	return "remove finalizers " + strings.Join(a.Finalizers, ", ")
}

// SetOwnerReferences adds and removes ownerReferences and keeps every other one. The engine sends
// a JSON patch that first tests the object's resourceVersion as observed.
type SetOwnerReferences struct {
	// Add lists references to add; a reference to a UID already present is replaced.
	Add []metav1.OwnerReference
	// Remove lists the UIDs of owners whose references are dropped.
	Remove []types.UID
}

// Type implements Action.
func (SetOwnerReferences) Type() string { return "SetOwnerReferences" }

func (a SetOwnerReferences) String() string {
	parts := make([]string, 0, len(a.Add)+len(a.Remove))
	for _, ref := range a.Add {
		parts = append(parts, fmt.Sprintf("add owner %s/%s (%s)", ref.Kind, ref.Name, ref.UID))
	}
	for _, uid := range a.Remove {
		parts = append(parts, fmt.Sprintf("drop owner %s", uid))
	}
	return strings.Join(parts, ", ")
}

// AdmissionOperation is the operation admission sees of an action's write: DELETE for a Delete,
// UPDATE for the patches of the others.
func AdmissionOperation(a Action) string {
	if _, ok := a.(Delete); ok {
		return "DELETE"
	}
	return "UPDATE"
}

// Delete deletes the object. The engine always sends the observed UID as a precondition, so a
// re-created object of the same name is never deleted by mistake.
type Delete struct {
	// GracePeriodSeconds overrides the object's grace period; 0 forces the deletion of a pod
	// whose kubelet will never confirm it. Nil keeps the default.
	GracePeriodSeconds *int64
}

// Type implements Action.
func (Delete) Type() string { return "Delete" }

func (a Delete) String() string {
	if a.GracePeriodSeconds != nil {
		return fmt.Sprintf("delete (grace period %ds)", *a.GracePeriodSeconds)
	}
	return "delete"
}

// policyRule grants verbs on resources of one API group.
func policyRule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// deletePolicy grants get and delete on resources, one PolicyRule per API group in order of
// first appearance.
func deletePolicy(resources []Resource) []rbacv1.PolicyRule {
	var policy []rbacv1.PolicyRule
	for _, r := range resources {
		i := slices.IndexFunc(policy, func(p rbacv1.PolicyRule) bool { return p.APIGroups[0] == r.Group })
		if i < 0 {
			policy = append(policy, policyRule(r.Group, nil, "get", "delete"))
			i = len(policy) - 1
		}
		policy[i].Resources = append(policy[i].Resources, r.Resource)
	}
	return policy
}
