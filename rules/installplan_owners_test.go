package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func subscription(name, uid string, status map[string]any) *Object {
	return object(Subscriptions, "operators", name, withUID(uid), withContent(map[string]any{"status": status}))
}

func installPlanRef(plan, uid string) map[string]any {
	return map[string]any{"installPlanRef": map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "name": plan, "namespace": "operators", "uid": uid}}
}

// updatedAgo is status with lastUpdated set to ago before testNow.
func updatedAgo(ago time.Duration, status map[string]any) map[string]any {
	status["lastUpdated"] = testNow.Add(-ago).UTC().Format(time.RFC3339)
	return status
}

func legacyInstallPlan(plan, uid string) map[string]any {
	return map[string]any{"installplan": map[string]any{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "name": plan, "uuid": uid}}
}

func ownedBy(refs ...metav1.OwnerReference) func(*Object) {
	return func(o *Object) { o.OwnerReferences = refs }
}

func subRef(name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: name, UID: types.UID(uid), Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false)}
}

func TestInstallPlanOwners(t *testing.T) {
	catalogRef := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "CatalogSource", Name: "c", UID: "cat"}
	plan := func(opts ...func(*Object)) *Object {
		return object(InstallPlans, "operators", "install-abc", append([]func(*Object){withUID("plan-uid")}, opts...)...)
	}
	tests := []struct {
		name       string
		coverage   Coverage
		minAge     time.Duration
		objects    []*Object
		wantAction Action
		wantReason string
		evidence   []string
	}{
		{
			name:    "owned by the Subscription that uses it: nothing",
			objects: []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan(ownedBy(subRef("etcd", "sub-b")))},
		},
		{
			name:       "#3199: owned by a deleted Subscription, used by its re-creation",
			objects:    []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan(ownedBy(subRef("etcd", "sub-a"), catalogRef))},
			wantAction: SetOwnerReferences{Add: []metav1.OwnerReference{subRef("etcd", "sub-b")}, Remove: []types.UID{"sub-a"}},
			wantReason: "not owned by Subscription etcd, which uses it (operator-lifecycle-manager#3199); its owner is a deleted Subscription",
			evidence: []string{
				"Subscription etcd (uid sub-b) names this InstallPlan in status.installPlanRef",
				"ownerReference to Subscription etcd (uid sub-a): no such Subscription in operators",
			},
		},
		{
			name:       "#3199, but OLM changed the Subscription's status within --min-age: it may still be at work",
			minAge:     10 * time.Minute,
			objects:    []*Object{subscription("etcd", "sub-b", updatedAgo(5*time.Second, installPlanRef("install-abc", "plan-uid"))), plan(ownedBy(subRef("etcd", "sub-a")))},
			wantReason: "not owned by Subscription etcd, which uses it (operator-lifecycle-manager#3199); its owner is a deleted Subscription; Subscription etcd changed its status 5s ago, less than --min-age=10m0s: OLM may still be resolving it",
		},
		{
			name:       "#3199, the Subscription's status unchanged for --min-age",
			minAge:     10 * time.Minute,
			objects:    []*Object{subscription("etcd", "sub-b", updatedAgo(10*time.Minute, installPlanRef("install-abc", "plan-uid"))), plan(ownedBy(subRef("etcd", "sub-a")))},
			wantAction: SetOwnerReferences{Add: []metav1.OwnerReference{subRef("etcd", "sub-b")}, Remove: []types.UID{"sub-a"}},
		},
		{
			name:       "the deprecated status.installplan works the same",
			objects:    []*Object{subscription("etcd", "sub-b", legacyInstallPlan("install-abc", "plan-uid")), plan(ownedBy(subRef("etcd", "sub-a")))},
			wantAction: SetOwnerReferences{Add: []metav1.OwnerReference{subRef("etcd", "sub-b")}, Remove: []types.UID{"sub-a"}},
			evidence:   []string{"Subscription etcd (uid sub-b) names this InstallPlan in status.installplan"},
		},
		{
			name: "a second Subscription sharing the plan is added, the live owner kept",
			objects: []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")),
				subscription("prometheus", "sub-p", installPlanRef("install-abc", "")), plan(ownedBy(subRef("etcd", "sub-b")))},
			wantAction: SetOwnerReferences{Add: []metav1.OwnerReference{subRef("prometheus", "sub-p")}},
			wantReason: "not owned by Subscription prometheus, which uses it (operator-lifecycle-manager#3199)",
		},
		{
			name:       "Subscriptions not all listed: add, but never remove",
			coverage:   Coverage{Failed: []schema.GroupResource{Subscriptions.GroupResource()}},
			objects:    []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan(ownedBy(subRef("etcd", "sub-a")))},
			wantAction: SetOwnerReferences{Add: []metav1.OwnerReference{subRef("etcd", "sub-b")}},
		},
		{
			name:       "the reference names an earlier plan of that name: this one is orphaned",
			objects:    []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "older-uid")), plan(ownedBy(subRef("etcd", "sub-a")))},
			wantReason: "orphaned InstallPlan: no Subscription owns it or uses it",
		},
		{
			name:       "orphaned InstallPlan: reported only",
			objects:    []*Object{plan(ownedBy(subRef("etcd", "sub-a")))},
			wantReason: "orphaned InstallPlan: no Subscription owns it or uses it",
			evidence:   []string{"no Subscription in operators names it in status.installPlanRef or status.installplan"},
		},
		{
			name:     "orphaned, but Subscriptions not listed there: nothing",
			coverage: Coverage{Namespaces: []string{"other"}},
			objects:  []*Object{plan()},
		},
		{
			name:    "a terminating InstallPlan: nothing",
			objects: []*Object{subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan(ownedBy(subRef("etcd", "sub-a")), terminatingFor(0))},
		},
		{
			name: "a terminating Subscription does not count as using the plan",
			objects: []*Object{object(Subscriptions, "operators", "etcd", withUID("sub-b"), terminatingFor(0), withContent(map[string]any{"status": installPlanRef("install-abc", "plan-uid")})),
				plan(ownedBy(subRef("etcd", "sub-a")))},
			wantReason: "orphaned InstallPlan: no Subscription owns it or uses it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := InstallPlanOwners{minAge: tt.minAge}.Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
			if tt.wantAction == nil && tt.wantReason == "" {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, "install-abc", f.Object.Name)
			assert.Equal(t, tt.wantAction, f.Action)
			if tt.wantReason != "" {
				assert.Equal(t, tt.wantReason, f.Reason)
			}
			for _, e := range tt.evidence {
				assert.Contains(t, f.Evidence, e)
			}
		})
	}
}

// TestInstallPlanOwnersPolicyRules: get and patch on InstallPlans, the only objects it re-owns.
func TestInstallPlanOwnersPolicyRules(t *testing.T) {
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"installplans"}, Verbs: []string{"get", "patch"}}},
		policyRulesOf(t, InstallPlanOwnersName, nil, Settings{}))
}
