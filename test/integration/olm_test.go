package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

func TestF3InstallPlanOwnedByADeletedSubscription(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "installPlanRef", true: "installplan"}[legacy], func(t *testing.T) {
			ns := testCluster.NewNamespace(t)
			plan := seeded(t)(testCluster.SeedF3(context.Background(), ns, legacy)).Get("InstallPlan", "install-abcde")
			subB, err := testCluster.Dynamic.Resource(rules.Subscriptions.GroupVersionResource).Namespace(ns).Get(context.Background(), "etcd", metav1.GetOptions{})
			require.NoError(t, err)

			rep := sweep(t, sweepOptions(), nil)

			findings := ruleFindings(rep, "installplan-owners", ns)
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, report.OutcomeApplied, f.Outcome, f.Error)
			assert.Equal(t, "not owned by Subscription etcd, which uses it (operator-lifecycle-manager#3199); its owner is a deleted Subscription", f.Reason)
			require.NotNil(t, f.Action)
			assert.Equal(t, "SetOwnerReferences", f.Action.Type)

			owners := testCluster.Current(t, plan).GetOwnerReferences()
			assert.Equal(t, []metav1.OwnerReference{
				plan.GetOwnerReferences()[1], // the unrelated owner stays
				{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: subB.GetUID(), Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false)},
			}, owners, "owned by B, A's reference gone")

			second := sweep(t, sweepOptions(), nil)
			assert.Empty(t, ruleFindings(second, "installplan-owners", ns), "nothing left to do")
		})
	}
}

// TestF5CatalogPodsOnLostNodes: pods deleted with a grace period of 30s, on nodes whose kubelet
// never answers, stay Terminating. The sweep runs two minutes later, past grace period and slack.
func TestF5CatalogPodsOnLostNodes(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f5 := seeded(t)(testCluster.SeedF5(context.Background(), ns, 30*time.Second))
	for pod := range cluster.F5Pods {
		require.NotNil(t, testCluster.Current(t, f5.Get("Pod", pod)).GetDeletionTimestamp(), "%s stays Terminating: no kubelet confirms", pod)
	}

	opts := sweepOptions()
	opts.MinAge.Duration = 0 // the pods were created a moment ago
	ruleSet, err := opts.RuleSet()
	require.NoError(t, err)
	rep := newEngine(t, opts, nil, clocktesting.NewFakePassiveClock(time.Now().Add(2*time.Minute)), ruleSet...).Run(context.Background())

	findings := map[string]report.FindingResult{}
	for _, f := range ruleFindings(rep, "catalog-pods", ns) {
		findings[f.Object.Name] = f
	}
	for pod, lost := range cluster.F5Pods {
		f, found := findings[pod]
		assert.Equal(t, lost, found, "%s: finding", pod)
		_, err := testCluster.Kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if !lost {
			assert.NoError(t, err, "%s is untouched", pod)
			continue
		}
		assert.True(t, apierrors.IsNotFound(err), "%s is force-deleted: %v", pod, err)
		assert.Equal(t, report.OutcomeApplied, f.Outcome, f.Error)
		require.NotNil(t, f.Action)
		assert.Equal(t, "Delete", f.Action.Type)
		assert.Equal(t, ptr.To[int64](0), f.Action.GracePeriodSeconds)
		assert.Contains(t, f.Evidence, "serves CatalogSource "+ns+"/operatorhubio-catalog (label olm.catalogSource)")
	}
	assert.Regexp(t, `^node .*-lost: Ready=Unknown since \S+ \(threshold 5m0s\): its kubelet stopped reporting$`, findings["on-lost-node"].Evidence[1])
	assert.Regexp(t, `^re-checked live: node .*-lost is still lost: `, findings["on-lost-node"].Evidence[len(findings["on-lost-node"].Evidence)-1])
	assert.Equal(t, "stuck terminating: its node "+ns+"-missing no longer exists", findings["on-missing-node"].Reason)
}

func TestF2SubscriptionLeftovers(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	objs := seeded(t)(testCluster.SeedF2(context.Background(), ns)).Objects
	byKind := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		byKind[obj.GetKind()] = obj
	}
	leftovers := func(rep *report.Report) map[string]report.FindingResult {
		out := map[string]report.FindingResult{}
		for _, f := range rep.Findings {
			for _, obj := range objs {
				if f.Rule == "operator-leftovers" && f.Object.UID == obj.GetUID() {
					out[f.Object.Kind] = f
				}
			}
		}
		return out
	}

	rep := sweep(t, sweepOptions(), nil)

	findings := leftovers(rep)
	require.Len(t, findings, 5, "one finding for each ref, and the Operator")
	for kind, f := range findings {
		assert.Equal(t, "subscription deleted; left behind", f.Reason, kind)
		assert.Equal(t, report.OutcomeSkipped, f.Outcome, kind)
		groupKind := schema.FromAPIVersionAndKind(f.Object.APIVersion, kind).GroupKind()
		assert.Equal(t, "opt-in: set rules.operator-leftovers.delete: ["+groupKind.String()+"] to act", why(f), kind)
	}
	assert.Contains(t, findings["CustomResourceDefinition"].Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
	for _, obj := range objs {
		assert.NotNil(t, testCluster.Current(t, obj), "nothing is deleted by default: %s", obj.GetKind())
	}

	opts := sweepOptions()
	opts.RuleConfigs = map[string]rules.RuleConfig{"operator-leftovers": {Args: rules.OperatorLeftoversArgs{Delete: []string{
		"ClusterServiceVersion.operators.coreos.com", "InstallPlan.operators.coreos.com"}}}}
	rep = sweep(t, opts, nil)

	findings = leftovers(rep)
	assert.Equal(t, report.OutcomeApplied, findings["ClusterServiceVersion"].Outcome, findings["ClusterServiceVersion"].Error)
	assert.Equal(t, report.OutcomeApplied, findings["InstallPlan"].Outcome, findings["InstallPlan"].Error)
	for _, kind := range []string{"ClusterServiceVersion", "InstallPlan"} {
		assert.Nil(t, testCluster.Current(t, byKind[kind]), "%s deleted", kind)
	}
	for _, kind := range []string{"ClusterRole", "CustomResourceDefinition", "Operator"} {
		assert.Equal(t, report.OutcomeSkipped, findings[kind].Outcome, kind)
		assert.NotNil(t, testCluster.Current(t, byKind[kind]), "%s kept", kind)
	}
}
