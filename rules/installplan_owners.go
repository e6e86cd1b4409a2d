package rules

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
)

// InstallPlanOwners gives InstallPlans back the ownerReference to the Subscription that uses them
// (F3, operator-lifecycle-manager#3199: a Manual Subscription deleted and re-created as Automatic
// keeps using its InstallPlan, whose ownerReference still names the deleted Subscription's UID;
// the new Subscription never progresses, and the garbage collector may delete the plan). For
// every Subscription whose status.installPlanRef (or the deprecated status.installplan) names an
// InstallPlan in its namespace that does not name the Subscription as an owner, it adds the
// reference OLM itself writes and drops references to Subscriptions that no longer exist; all
// other ownerReferences stay. It waits until the Subscription's status has not changed for
// --min-age: OLM v0.28's workers race on a re-created Subscription and may point it at the old
// plan for a few seconds before they make a new one (test/controllers shows it). An InstallPlan
// that no existing Subscription owns or uses is reported.
type InstallPlanOwners struct {
	minAge time.Duration
}

// InstallPlanOwnersName is the name of rule installplan-owners.
const InstallPlanOwnersName = "installplan-owners"

// InstallPlanOwnersArgs are the arguments of installplan-owners: none but enabled.
type InstallPlanOwnersArgs struct{}

// NewInstallPlanOwners builds installplan-owners.
func NewInstallPlanOwners(_ InstallPlanOwnersArgs, settings Settings) (InstallPlanOwners, error) {
	return InstallPlanOwners{minAge: settings.MinAge}, nil
}

var (
	_ ContentReader = InstallPlanOwners{}
	_ WholeReader   = InstallPlanOwners{}
	_ Authorized    = InstallPlanOwners{}
)

// Name implements Rule.
func (InstallPlanOwners) Name() string { return InstallPlanOwnersName }

// Writes implements Authorized: it sets the ownerReferences of InstallPlans.
func (InstallPlanOwners) Writes() []Write {
	return []Write{{Action: SetOwnerReferences{}.Type(), Resource: InstallPlans.GroupResource()}}
}

// MayHaveWritten implements Authorized: an InstallPlan.
func (InstallPlanOwners) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	return sameKind(InstallPlans, obj)
}

// Admission implements Authorized: an InstallPlan gains Subscriptions as owners, never as its
// controller (the garbage collector would delete it with a Subscription it does not belong to).
func (InstallPlanOwners) Admission() Admission {
	return Admission{Owners: []OwnerAdmission{{
		Resource: InstallPlans,
		Owner: fmt.Sprintf("r.apiVersion == '%s' && r.kind == '%s' && (!has(r.controller) || !r.controller)",
			Subscriptions.GroupVersion().String(), Subscriptions.Kind),
		Owners: "Subscriptions",
	}}}
}

// PolicyRules implements Authorized.
func (InstallPlanOwners) PolicyRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{policyRule(InstallPlans.Group, []string{InstallPlans.Resource}, "get", "patch")}
}

// ReadsContent implements ContentReader.
func (InstallPlanOwners) ReadsContent() []ContentRequest {
	return []ContentRequest{subscriptionContent}
}

// ReadsWhole implements WholeReader: the Subscriptions and the InstallPlans they name.
func (r InstallPlanOwners) ReadsWhole() []schema.GroupResource {
	return append(contentResources(r.ReadsContent()), InstallPlans.GroupResource())
}

// subscriptionOwner is the ownerReference OLM writes on an InstallPlan for a Subscription.
func subscriptionOwner(sub *Object) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         "operators.coreos.com/v1alpha1",
		Kind:               "Subscription",
		Name:               sub.Name,
		UID:                sub.UID,
		Controller:         ptr.To(false),
		BlockOwnerDeletion: ptr.To(false),
	}
}

// planUse is a Subscription's reference to an InstallPlan.
type planUse struct {
	sub *Object
	// field is the status field that holds the reference; uid, the plan UID it records.
	field string
	uid   types.UID
}

// Plan implements Rule.
func (r InstallPlanOwners) Plan(_ context.Context, view *View) []Finding {
	uses := map[string][]planUse{} // by InstallPlan namespace/name
	for _, sub := range view.List(Subscriptions.GroupResource()) {
		if sub.DeletionTimestamp != nil {
			continue
		}
		if name := nestedString(sub, "status", "installPlanRef", "name"); name != "" {
			// An InstallPlan is always in its Subscription's namespace.
			if ns := nestedString(sub, "status", "installPlanRef", "namespace"); ns == "" || ns == sub.Namespace {
				uses[sub.Namespace+"/"+name] = append(uses[sub.Namespace+"/"+name],
					planUse{sub, "status.installPlanRef", types.UID(nestedString(sub, "status", "installPlanRef", "uid"))})
			}
		} else if name := nestedString(sub, "status", "installplan", "name"); name != "" {
			uses[sub.Namespace+"/"+name] = append(uses[sub.Namespace+"/"+name],
				planUse{sub, "status.installplan", types.UID(nestedString(sub, "status", "installplan", "uuid"))})
		}
	}

	var findings []Finding
	for _, plan := range view.List(InstallPlans.GroupResource()) {
		if plan.DeletionTimestamp != nil {
			continue
		}
		if f, ok := r.repair(view, plan, uses[plan.Namespace+"/"+plan.Name]); ok {
			findings = append(findings, f)
		}
	}
	return findings
}

func (r InstallPlanOwners) repair(view *View, plan *Object, uses []planUse) (Finding, bool) {
	subsKnown := view.Observed(Subscriptions.GroupResource(), plan.Namespace)
	// A reference with another UID names an earlier InstallPlan of the same name.
	uses = slices.DeleteFunc(slices.Clone(uses), func(use planUse) bool { return use.uid != "" && use.uid != plan.UID })
	var evidence []string
	var add []metav1.OwnerReference
	var settling string // why a Subscription that needs adding may not have settled
	for _, use := range uses {
		evidence = append(evidence, fmt.Sprintf("Subscription %s (uid %s) names this InstallPlan in %s", use.sub.Name, use.sub.UID, use.field))
		if !slices.ContainsFunc(plan.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == use.sub.UID }) {
			add = append(add, subscriptionOwner(use.sub))
			if updated, err := time.Parse(time.RFC3339, nestedString(use.sub, "status", "lastUpdated")); err == nil && view.Now().Sub(updated) < r.minAge {
				settling = fmt.Sprintf("Subscription %s changed its status %s ago, less than --min-age=%s: OLM may still be resolving it",
					use.sub.Name, duration.HumanDuration(max(view.Now().Sub(updated), 0)), r.minAge)
			}
		}
	}
	var stale []types.UID
	liveOwners := 0
	for _, ref := range plan.OwnerReferences {
		if ref.Kind != "Subscription" || !strings.HasPrefix(ref.APIVersion, "operators.coreos.com/") {
			continue
		}
		if owner, ok := view.ByUID(ref.UID); ok && owner.Resource.GroupResource() == Subscriptions.GroupResource() {
			liveOwners++
			continue
		}
		if subsKnown {
			stale = append(stale, ref.UID)
			evidence = append(evidence, fmt.Sprintf("ownerReference to Subscription %s (uid %s): no such Subscription in %s", ref.Name, ref.UID, plan.Namespace))
		}
	}

	switch {
	case len(add) > 0:
		reason := fmt.Sprintf("not owned by Subscription %s, which uses it (operator-lifecycle-manager#3199)", add[0].Name)
		if len(stale) > 0 {
			reason += "; its owner is a deleted Subscription"
		}
		if settling != "" {
			return Finding{Severity: SeverityInfo, Object: plan.Ref(), Reason: reason + "; " + settling, Evidence: evidence}, true
		}
		action := SetOwnerReferences{Add: add, Remove: stale}
		return Finding{
			Severity: SeverityWarning,
			Object:   plan.Ref(),
			Reason:   reason,
			Evidence: evidence,
			Action:   action,
			Facts:    []Fact{r.sameOwners(plan, action)},
		}, true
	case len(uses) == 0 && liveOwners == 0 && subsKnown:
		return Finding{
			Severity: SeverityInfo,
			Object:   plan.Ref(),
			Reason:   "orphaned InstallPlan: no Subscription owns it or uses it",
			Evidence: append(evidence, fmt.Sprintf("no Subscription in %s names it in status.installPlanRef or status.installplan", plan.Namespace)),
		}, true
	}
	return Finding{}, false
}

// sameOwners is the fact that the Subscriptions of the plan's namespace, read again, call for the
// same change of its owners: no Subscription re-created, none of the owners to drop back.
func (r InstallPlanOwners) sameOwners(plan *Object, action SetOwnerReferences) Fact {
	return factOf{
		key: "owners of InstallPlan " + plan.Namespace + "/" + plan.Name + " " + action.String(),
		reads: []Read{
			{Resource: InstallPlans.GroupResource(), Namespace: plan.Namespace, Name: plan.Name},
			{Resource: subscriptionContent.Resource, Namespace: plan.Namespace, Fields: subscriptionContent.Fields},
		},
		holds: func(view *View) (bool, string) {
			for _, f := range r.Plan(context.Background(), view) {
				if f.Object.UID == plan.UID && reflect.DeepEqual(f.Action, action) {
					return true, "re-checked live: the Subscriptions of " + plan.Namespace + " still call for it"
				}
			}
			return false, "re-checked live: the Subscriptions of " + plan.Namespace + " changed; they no longer call for " + action.String()
		},
	}
}
