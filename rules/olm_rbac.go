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
)

// OLMRBACName is the name of rule olm-rbac.
const OLMRBACName = "olm-rbac"

// OLMRBAC deletes what OLM v0 created for a ClusterServiceVersion and would have deleted with it
// (F1): ClusterRoles, ClusterRoleBindings, Mutating- and ValidatingWebhookConfigurations (what
// OLM's csv-cleanup finalizer deletes; a leftover webhook can block API requests), and Roles and
// RoleBindings, labelled olm.owner=<csv>, olm.owner.namespace=<namespace>,
// olm.owner.kind=ClusterServiceVersion, whose CSV no longer exists, or is terminating while OLM is
// gone. While OLM runs, or is scaled to 0, it is OLM's job; what has an ownerReference to the CSV
// (OLM's Roles and RoleBindings) is the garbage collector's, and only reported. Deleting is opt-in
// (rules.olm-rbac.delete); without it the findings are reported as skipped. Before a delete, the
// CSV (and whether OLM runs) is read again, live: an operator installed or upgraded while the
// sweeper ran keeps its RBAC.
type OLMRBAC struct {
	args     OLMRBACArgs
	mappings FinalizerMappings
}

// OLMRBACArgs are the arguments of olm-rbac: rules.olm-rbac in the config file.
type OLMRBACArgs struct {
	// Delete opts in to deleting the RBAC of gone ClusterServiceVersions.
	Delete bool `json:"delete,omitempty"`
}

// NewOLMRBAC builds olm-rbac. The controller mapping of OLM's csv-cleanup finalizer says whether
// OLM runs.
func NewOLMRBAC(args OLMRBACArgs, settings Settings) (OLMRBAC, error) {
	return OLMRBAC{args: args, mappings: settings.Finalizers}, nil
}

var (
	_ ContentReader = OLMRBAC{}
	_ WholeReader   = OLMRBAC{}
	_ Authorized    = OLMRBAC{}
)

// csvCleanupResources are what OLM's csv-cleanup finalizer deletes by label before it releases a
// CSV (operator-lifecycle-manager, pkg/controller/operators/olm/operator.go), in the order
// bindings before what they bind.
var csvCleanupResources = []Resource{ClusterRoleBindings, ClusterRoles, MutatingWebhookConfigurations, ValidatingWebhookConfigurations}

// olmRBACResources are the resources olm-rbac looks at: the above, and the namespaced RBAC OLM
// labels the same way (normally collected with the CSV through its ownerReferences).
var olmRBACResources = append(slices.Clone(csvCleanupResources), RoleBindings, Roles)

// csvCleanupObjects returns what OLM's csv-cleanup finalizer of the CSV namespace/name still has
// to delete (not what is already being deleted), and whether the view is sure to hold all of it.
func csvCleanupObjects(view *View, namespace, name string) ([]ObjectRef, string, bool) {
	var refs []ObjectRef
	var names []string
	for _, r := range csvCleanupResources {
		if !view.Observed(r.GroupResource(), "") {
			return nil, fmt.Sprintf("%s were not all listed: cannot tell what the csv-cleanup finalizer still guards", r.GroupResource()), false
		}
		for _, obj := range view.List(r.GroupResource()) {
			if ns, n, ok := csvOwner(obj); ok && ns == namespace && n == name && obj.DeletionTimestamp == nil {
				refs = append(refs, obj.Ref())
				names = append(names, obj.Resource.Kind+" "+obj.Name)
			}
		}
	}
	if len(refs) == 0 {
		return nil, "nothing is labelled as this CSV's any more: csv-cleanup has nothing left to delete", true
	}
	return refs, fmt.Sprintf("released only after what OLM would have deleted is deleted (rule olm-rbac): %s", strings.Join(names, ", ")), true
}

// Name implements Rule.
func (OLMRBAC) Name() string { return OLMRBACName }

// Writes implements Authorized: it deletes what OLM made for a CSV.
func (OLMRBAC) Writes() []Write { return deletes(olmRBACResources) }

// MayHaveWritten implements Authorized: RBAC or a webhook configuration labelled as OLM's for the
// ClusterServiceVersion the finding names.
func (OLMRBAC) MayHaveWritten(_ string, obj *unstructured.Unstructured, evidence []string) error {
	if err := kindOf(olmRBACResources, obj); err != nil {
		return err
	}
	labels := obj.GetLabels()
	if labels["olm.owner.kind"] != ClusterServiceVersions.Kind || labels["olm.owner"] == "" || labels["olm.owner.namespace"] == "" {
		return fmt.Errorf("%s %s is not labelled as a ClusterServiceVersion's by OLM (olm.owner, olm.owner.namespace, olm.owner.kind)", obj.GetKind(), obj.GetName())
	}
	if !slices.Contains(evidence, olmOwnerEvidence(labels["olm.owner"], labels["olm.owner.namespace"])) {
		return fmt.Errorf("%s %s is labelled as ClusterServiceVersion %s/%s's, not as the finding's", obj.GetKind(), obj.GetName(), labels["olm.owner.namespace"], labels["olm.owner"])
	}
	return nil
}

// Admission implements Authorized: what OLM labelled as a ClusterServiceVersion's, which its
// csv-cleanup finalizer would have deleted.
func (OLMRBAC) Admission() Admission {
	return Admission{Deletes: olmRBACResources, When: olmOwnedLabels}
}

// olmOwnedLabels is true of an object OLM labelled as a ClusterServiceVersion's.
var olmOwnedLabels = fmt.Sprintf(`'olm.owner.kind' in variables.labels && variables.labels['olm.owner.kind'] == '%s' &&
  'olm.owner' in variables.labels && 'olm.owner.namespace' in variables.labels`, ClusterServiceVersions.Kind)

// PolicyRules implements Authorized: delete, once opted in.
func (r OLMRBAC) PolicyRules() []rbacv1.PolicyRule {
	if !r.args.Delete {
		return nil
	}
	return deletePolicy(olmRBACResources)
}

// ReadsContent implements ContentReader: workload replicas, to tell whether OLM runs.
func (OLMRBAC) ReadsContent() []ContentRequest { return workloadContent() }

// ReadsWhole implements WholeReader: what OLM made for a CSV, the CSVs, and whether OLM runs.
func (r OLMRBAC) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), groupResources(ClusterServiceVersions), groupResources(olmRBACResources...))
}

// Plan implements Rule.
func (r OLMRBAC) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	olm, mapped := r.mappings.ownerOf(csvCleanupFinalizer, ClusterServiceVersions.GroupResource())
	var olmStatus *controllerStatus // looked up once, if a CSV is terminating
	for _, res := range olmRBACResources {
		for _, obj := range view.List(res.GroupResource()) {
			csvNamespace, csvName, ok := csvOwner(obj)
			if !ok || obj.DeletionTimestamp != nil {
				continue
			}
			f := Finding{
				Severity: SeverityWarning,
				Object:   obj.Ref(),
				Evidence: []string{olmOwnerEvidence(csvName, csvNamespace)},
				Action:   Delete{},
			}
			var reason string
			csv, exists := view.Get(ClusterServiceVersions.GroupResource(), csvNamespace, csvName)
			switch {
			case !exists && !view.Observed(ClusterServiceVersions.GroupResource(), csvNamespace):
				continue // cannot tell; the CSV may well exist
			case !exists:
				reason = fmt.Sprintf("ClusterServiceVersion %s/%s no longer exists", csvNamespace, csvName)
				f.Evidence = append(f.Evidence, reason)
				f.Facts = []Fact{ObjectAbsent{ClusterServiceVersions, csvNamespace, csvName}}
			case csv.DeletionTimestamp == nil:
				continue // the CSV is alive; this is its RBAC
			case !mapped:
				continue // nobody said which controller is OLM
			default:
				if olmStatus == nil {
					status := controllersOf(view, olm)
					olmStatus = &status
				}
				if olmStatus.liveness != gone {
					continue // OLM runs, is scaled to 0 (orphaned-finalizers warns), or cannot be seen
				}
				reason = fmt.Sprintf("ClusterServiceVersion %s/%s is terminating and OLM is gone", csvNamespace, csvName)
				f.Evidence = append(f.Evidence, fmt.Sprintf("ClusterServiceVersion %s/%s is terminating, waiting on %s", csvNamespace, csvName, csvCleanupFinalizer))
				f.Evidence = append(f.Evidence, olmStatus.evidence...)
				f.Facts = []Fact{ObjectTerminating{ClusterServiceVersions, csvNamespace, csvName, csv.UID}, controllersGone(view, olm)}
			}
			f.Reason = fmt.Sprintf("%s; its %s is left behind", reason, obj.Resource.Kind)
			if owner, collected := collectedWithCSV(view, obj, csvNamespace); collected {
				// The garbage collector deletes it once it sees the CSV gone: not the sweeper's job.
				f.Severity, f.Action, f.Facts = SeverityInfo, nil, nil
				f.Reason = fmt.Sprintf("%s; the garbage collector deletes its %s", reason, obj.Resource.Kind)
				f.Evidence = append(f.Evidence, fmt.Sprintf("owned by ClusterServiceVersion %s (uid %s): the garbage collector deletes it once the CSV is gone", owner.Name, owner.UID))
			} else if !r.args.Delete {
				f.OptIn = "rules.olm-rbac.delete"
			}
			findings = append(findings, f)
		}
	}
	return findings
}

// collectedWithCSV returns the ownerReference to a ClusterServiceVersion by which the garbage
// collector deletes obj, if there is one and the collector can resolve it: obj is namespaced, in
// the CSV's namespace (a cluster-scoped object cannot have a namespaced owner), and the
// ClusterServiceVersion CRD is served (without it, the collector cannot resolve the owner,
// kubernetes#102641). Otherwise obj is the sweeper's to delete.
func collectedWithCSV(view *View, obj *Object, csvNamespace string) (metav1.OwnerReference, bool) {
	if _, served := view.Listed(ClusterServiceVersions.GroupResource()); !served || !obj.Resource.Namespaced || obj.Namespace != csvNamespace {
		return metav1.OwnerReference{}, false
	}
	for _, ref := range obj.OwnerReferences {
		if ref.Kind == ClusterServiceVersions.Kind && strings.HasPrefix(ref.APIVersion, ClusterServiceVersions.Group+"/") {
			return ref, true
		}
	}
	return metav1.OwnerReference{}, false
}

// olmOwnerEvidence is the evidence of a finding about what OLM labelled as made for a CSV.
func olmOwnerEvidence(csvName, csvNamespace string) string {
	return fmt.Sprintf("labelled olm.owner=%s, olm.owner.namespace=%s, olm.owner.kind=ClusterServiceVersion", csvName, csvNamespace)
}
