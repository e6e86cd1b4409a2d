package rules

import (
	"context"

	"fmt"
	rbacv1 "k8s.io/api/rbac/v1"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OLMRBAC deletes what OLM v0 created for a ClusterServiceVersion and would have deleted with it
// (F1): ClusterRoles, ClusterRoleBindings, Mutating- and ValidatingWebhookConfigurations (what
// OLM's csv-cleanup finalizer deletes; a leftover webhook can block API requests), and Roles and
// RoleBindings, labelled olm.owner=<csv>, olm.owner.namespace=<namespace>,
// olm.owner.kind=ClusterServiceVersion, whose CSV no longer exists, or is terminating while OLM is
// gone. While OLM runs, or is scaled to 0, it is OLM's job. Deleting is opt-in (Delete,
// rules.olm-rbac.delete); without it the findings are reported as skipped.
type OLMRBAC struct {
	// Owners are the controller mappings; the one for OLM's csv-cleanup finalizer says whether
	// OLM runs.
	Owners []FinalizerOwner
	// Delete opts in to deleting.
	Delete bool
}

// csvCleanupResources are what OLM's csv-cleanup finalizer deletes by label before it releases a
// CSV (operator-lifecycle-manager, pkg/controller/operators/olm/operator.go), in the order
// bindings before what they bind.
var csvCleanupResources = []schema.GroupResource{
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
}

// olmRBACResources are the resources olm-rbac looks at: the above, and the namespaced RBAC OLM
// labels the same way (normally collected with the CSV through its ownerReferences).
var olmRBACResources = append(slices.Clone(csvCleanupResources),
	schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"},
)

// csvCleanupObjects returns what OLM's csv-cleanup finalizer of the CSV namespace/name still has
// to delete (not what is already being deleted), and whether the view is sure to hold all of it.
func csvCleanupObjects(view *View, namespace, name string) ([]ObjectRef, string, bool) {
	var refs []ObjectRef
	var names []string
	for _, gr := range csvCleanupResources {
		if !view.Observed(gr, "") {
			return nil, fmt.Sprintf("%s were not all listed: cannot tell what the csv-cleanup finalizer still guards", gr), false
		}
		for _, obj := range view.List(gr) {
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
func (OLMRBAC) Name() string { return "olm-rbac" }

// PolicyRules implements Authorized: delete, once opted in.
func (r OLMRBAC) PolicyRules() []rbacv1.PolicyRule {
	if !r.Delete {
		return nil
	}
	byGroup := map[string][]string{}
	var groups []string
	for _, gr := range olmRBACResources {
		if _, seen := byGroup[gr.Group]; !seen {
			groups = append(groups, gr.Group)
		}
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	var policy []rbacv1.PolicyRule
	for _, g := range groups {
		policy = append(policy, policyRule(g, byGroup[g], "get", "delete"))
	}
	return policy
}

// ReadsContent implements ContentReader: workload replicas, to tell whether OLM runs.
func (OLMRBAC) ReadsContent() []ContentRequest { return workloadContent() }

// Plan implements Rule.
func (r OLMRBAC) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	olm, mapped := ownerOf(r.Owners, csvCleanupFinalizer)
	var olmStatus *controllerStatus // looked up once, if a CSV is terminating
	for _, gr := range olmRBACResources {
		for _, obj := range view.List(gr) {
			csvNamespace, csvName, ok := csvOwner(obj)
			if !ok || obj.DeletionTimestamp != nil {
				continue
			}
			evidence := []string{fmt.Sprintf("labelled olm.owner=%s, olm.owner.namespace=%s, olm.owner.kind=ClusterServiceVersion", csvName, csvNamespace)}
			var reason string
			csv, exists := view.Get(clusterServiceVersions, csvNamespace, csvName)
			switch {
			case !exists && !view.Observed(clusterServiceVersions, csvNamespace):
				continue // cannot tell; the CSV may well exist
			case !exists:
				reason = fmt.Sprintf("ClusterServiceVersion %s/%s no longer exists", csvNamespace, csvName)
				evidence = append(evidence, reason)
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
				evidence = append(evidence, fmt.Sprintf("ClusterServiceVersion %s/%s is terminating, waiting on %s", csvNamespace, csvName, csvCleanupFinalizer))
				evidence = append(evidence, olmStatus.evidence...)
			}
			f := Finding{
				Rule:     r.Name(),
				Severity: SeverityWarning,
				Object:   obj.Ref(),
				Reason:   fmt.Sprintf("%s; its %s is left behind", reason, obj.Resource.Kind),
				Evidence: evidence,
				Action:   Delete{},
			}
			if !r.Delete {
				f.OptIn = "rules.olm-rbac.delete"
			}
			findings = append(findings, f)
		}
	}
	return findings
}
