package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// f3Field reproduces operator-lifecycle-manager#3199 as it happens in the field: a Manual
// Subscription A and the InstallPlan OLM made for it (owned by A, as OLM writes it, next to an
// unrelated owner); A is deleted; B, of the same name, Automatic, takes the plan over in its
// status. It returns the plan.
func f3Field(t *testing.T, ns string, legacyStatus bool) *unstructured.Unstructured {
	t.Helper()
	subA := create(t, ns, `
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: etcd, namespace: NAMESPACE}
spec: {channel: singlenamespace-alpha, name: etcd, source: operatorhubio-catalog, sourceNamespace: olm, installPlanApproval: Manual}
`)[0]
	keep := create(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep, namespace: NAMESPACE}\n")[0]
	plan := create(t, ns, fmt.Sprintf(`
apiVersion: operators.coreos.com/v1alpha1
kind: InstallPlan
metadata:
  name: install-abcde
  namespace: NAMESPACE
  ownerReferences:
  - {apiVersion: operators.coreos.com/v1alpha1, kind: Subscription, name: etcd, uid: %s, controller: false, blockOwnerDeletion: false}
  - {apiVersion: v1, kind: ConfigMap, name: keep, uid: %s}
spec: {approval: Manual, approved: false, clusterServiceVersionNames: [etcdoperator.v0.9.4]}
`, subA.GetUID(), keep.GetUID()))[0]
	_, err := testCluster.Delete(context.Background(), subA)
	require.NoError(t, err)

	ref := fmt.Sprintf("installPlanRef: {apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-abcde, namespace: NAMESPACE, uid: %s, resourceVersion: %q}",
		plan.GetUID(), plan.GetResourceVersion())
	if legacyStatus {
		ref = fmt.Sprintf("installplan: {apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-abcde, uuid: %s}", plan.GetUID())
	}
	create(t, ns, `
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: etcd, namespace: NAMESPACE}
spec: {channel: singlenamespace-alpha, name: etcd, source: operatorhubio-catalog, sourceNamespace: olm, installPlanApproval: Automatic}
status:
  lastUpdated: "2026-11-23T10:00:00Z"
  state: UpgradePending
  `+ref+`
`)
	return plan
}

func TestF3InstallPlanOwnedByADeletedSubscription(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "installPlanRef", true: "installplan"}[legacy], func(t *testing.T) {
			ns := newNamespace(t)
			plan := f3Field(t, ns, legacy)
			subB, err := testCluster.Dynamic.Resource(subscriptionsGVR).Namespace(ns).Get(context.Background(), "etcd", metav1.GetOptions{})
			require.NoError(t, err)

			report := sweep(t, sweepOptions(), nil)

			findings := ruleFindings(report, "installplan-owners", ns)
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, sweeper.OutcomeApplied, f.Outcome, f.Error)
			assert.Equal(t, "not owned by Subscription etcd, which uses it (operator-lifecycle-manager#3199); its owner is a deleted Subscription", f.Reason)
			require.NotNil(t, f.Action)
			assert.Equal(t, "SetOwnerReferences", f.Action.Type)

			owners := current(t, plan).GetOwnerReferences()
			assert.Equal(t, []metav1.OwnerReference{
				plan.GetOwnerReferences()[1], // the unrelated owner stays
				{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: subB.GetUID(), Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(false)},
			}, owners, "owned by B, A's reference gone")

			second := sweep(t, sweepOptions(), nil)
			assert.Empty(t, ruleFindings(second, "installplan-owners", ns), "nothing left to do")
		})
	}
}

// catalogPod is an OLM registry pod bound to a node, as OLM creates it.
const catalogPod = `
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  namespace: NAMESPACE
  labels: {olm.catalogSource: operatorhubio-catalog, olm.managed: "true", olm.pod-spec-hash: 5b6f7d}
spec:
  nodeName: NODE
  containers: [{name: registry-server, image: quay.io/operatorhubio/catalog:latest}]
`

// lostNode creates a Node whose Ready condition is status since ago, as its node lifecycle
// controller would write it.
func lostNode(t *testing.T, name, status string, ago time.Duration) {
	t.Helper()
	since := time.Now().Add(-ago).UTC().Format(time.RFC3339)
	create(t, "", fmt.Sprintf(`
apiVersion: v1
kind: Node
metadata: {name: %s}
status:
  conditions:
  - {type: Ready, status: %q, reason: NodeStatusUnknown, message: Kubelet stopped posting node status., lastHeartbeatTime: %q, lastTransitionTime: %q}
`, name, status, since, since))
}

// TestF5CatalogPodsOnLostNodes: pods deleted with a grace period of 30s, on nodes whose kubelet
// never answers, stay Terminating. The sweep runs two minutes later, past grace period and slack.
func TestF5CatalogPodsOnLostNodes(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		pod, node   string
		ready       string // "" for a node that does not exist
		since       time.Duration
		forceDelete bool
	}{
		{pod: "on-lost-node", node: ns + "-lost", ready: "Unknown", since: 10 * time.Minute, forceDelete: true},
		{pod: "on-ready-node", node: ns + "-ready", ready: "True", since: time.Hour},
		{pod: "on-node-lost-a-minute-ago", node: ns + "-flaky", ready: "Unknown", since: time.Minute},
		{pod: "on-missing-node", node: ns + "-missing", forceDelete: true},
	}
	pods := map[string]*unstructured.Unstructured{}
	for _, c := range cases {
		if c.ready != "" {
			lostNode(t, c.node, c.ready, c.since)
		}
		pod := create(t, ns, strings.ReplaceAll(fill(catalogPod, ns, c.pod), "NODE", c.node))[0]
		require.NoError(t, testCluster.Kube.CoreV1().Pods(ns).Delete(context.Background(), c.pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}))
		pods[c.pod] = current(t, pod)
		require.NotNil(t, pods[c.pod].GetDeletionTimestamp(), "%s stays Terminating: no kubelet confirms", c.pod)
	}

	ruleSet, err := sweepOptions().RuleSet()
	require.NoError(t, err)
	report := newEngine(t, sweepOptions(), nil, clocktesting.NewFakePassiveClock(time.Now().Add(2*time.Minute)), ruleSet...).Run(context.Background())

	findings := map[string]sweeper.FindingResult{}
	for _, f := range ruleFindings(report, "catalog-pods", ns) {
		findings[f.Object.Name] = f
	}
	for _, c := range cases {
		f, found := findings[c.pod]
		assert.Equal(t, c.forceDelete, found, "%s: finding", c.pod)
		_, err := testCluster.Kube.CoreV1().Pods(ns).Get(context.Background(), c.pod, metav1.GetOptions{})
		if !c.forceDelete {
			assert.NoError(t, err, "%s is untouched", c.pod)
			continue
		}
		assert.True(t, apierrors.IsNotFound(err), "%s is force-deleted: %v", c.pod, err)
		assert.Equal(t, sweeper.OutcomeApplied, f.Outcome, f.Error)
		require.NotNil(t, f.Action)
		assert.Equal(t, "Delete", f.Action.Type)
		assert.Equal(t, ptr.To[int64](0), f.Action.GracePeriodSeconds)
		assert.Contains(t, f.Evidence, "serves CatalogSource "+ns+"/operatorhubio-catalog (label olm.catalogSource)")
	}
	assert.Regexp(t, `^node .*-lost: Ready=Unknown since \S+ \(threshold 5m0s\)$`, findings["on-lost-node"].Evidence[1])
	assert.Equal(t, "stuck terminating: its node "+ns+"-missing no longer exists", findings["on-missing-node"].Reason)
}

// f2Field is what a deleted Subscription leaves: its Operator lists a CSV, an InstallPlan, a
// ClusterRole and a CRD.
const f2Field = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: etcdclusters.NAMESPACE.test.operator-sweeper.io}
spec:
  group: NAMESPACE.test.operator-sweeper.io
  scope: Namespaced
  names: {plural: etcdclusters, singular: etcdcluster, kind: EtcdCluster, listKind: EtcdClusterList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: etcdoperator.v0.9.4, namespace: NAMESPACE, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
spec:
  displayName: etcd
  install: {strategy: deployment, spec: {deployments: []}}
  customresourcedefinitions:
    owned: [{name: etcdclusters.NAMESPACE.test.operator-sweeper.io, version: v1, kind: EtcdCluster}]
---
apiVersion: operators.coreos.com/v1alpha1
kind: InstallPlan
metadata: {name: install-f2, namespace: NAMESPACE, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
spec: {approval: Automatic, approved: true, clusterServiceVersionNames: [etcdoperator.v0.9.4]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: NAMESPACE-etcd, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
rules: []
---
apiVersion: operators.coreos.com/v1
kind: Operator
metadata: {name: etcd.NAMESPACE}
status:
  components:
    labelSelector:
      matchExpressions: [{key: operators.coreos.com/etcd.NAMESPACE, operator: Exists}]
    refs:
    - {apiVersion: operators.coreos.com/v1alpha1, kind: ClusterServiceVersion, name: etcdoperator.v0.9.4, namespace: NAMESPACE}
    - {apiVersion: operators.coreos.com/v1alpha1, kind: InstallPlan, name: install-f2, namespace: NAMESPACE}
    - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: NAMESPACE-etcd}
    - {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, name: etcdclusters.NAMESPACE.test.operator-sweeper.io}
`

func TestF2SubscriptionLeftovers(t *testing.T) {
	ns := newNamespace(t)
	objs := create(t, ns, f2Field)
	byKind := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		byKind[obj.GetKind()] = obj
	}
	leftovers := func(report *sweeper.Report) map[string]sweeper.FindingResult {
		out := map[string]sweeper.FindingResult{}
		for _, f := range report.Findings {
			for _, obj := range objs {
				if f.Rule == "operator-leftovers" && f.Object.UID == obj.GetUID() {
					out[f.Object.Kind] = f
				}
			}
		}
		return out
	}

	report := sweep(t, sweepOptions(), nil)

	findings := leftovers(report)
	require.Len(t, findings, 5, "one finding for each ref, and the Operator")
	for kind, f := range findings {
		assert.Equal(t, "subscription deleted; left behind", f.Reason, kind)
		assert.Equal(t, sweeper.OutcomeSkipped, f.Outcome, kind)
		assert.Equal(t, "opt-in: set rules.operator-leftovers.delete: ["+kind+"] to act", f.Error, kind)
	}
	assert.Contains(t, findings["CustomResourceDefinition"].Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
	for _, obj := range objs {
		assert.NotNil(t, current(t, obj), "nothing is deleted by default: %s", obj.GetKind())
	}

	opts := sweepOptions()
	opts.RuleSettings.OperatorLeftovers.Delete = []string{"ClusterServiceVersion", "InstallPlan"}
	report = sweep(t, opts, nil)

	findings = leftovers(report)
	assert.Equal(t, sweeper.OutcomeApplied, findings["ClusterServiceVersion"].Outcome, findings["ClusterServiceVersion"].Error)
	assert.Equal(t, sweeper.OutcomeApplied, findings["InstallPlan"].Outcome, findings["InstallPlan"].Error)
	for _, kind := range []string{"ClusterServiceVersion", "InstallPlan"} {
		assert.Nil(t, current(t, byKind[kind]), "%s deleted", kind)
	}
	for _, kind := range []string{"ClusterRole", "CustomResourceDefinition", "Operator"} {
		assert.Equal(t, sweeper.OutcomeSkipped, findings[kind].Outcome, kind)
		assert.NotNil(t, current(t, byKind[kind]), "%s kept", kind)
	}
}
