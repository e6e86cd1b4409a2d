package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// gadgetDebris is a gadget operator's CRD, installed by a Helm release that is uninstalled, and a
// Gadget stuck on a finalizer in the CRD's API domain that nobody classified.
const gadgetDebris = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.e2e-consequence.io
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: gadget-operator, meta.helm.sh/release-namespace: NAMESPACE}
spec:
  group: e2e-consequence.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

const gadgetFinalizer = "gadgets.e2e-consequence.io/finalizer"

// TestConsequencesAsTheServiceAccount: the shipped CronJob's command, run as its ServiceAccount,
// on an uninstalled Karpenter's NodeClaim (the catalog: guards), an uninstalled gadget operator's
// Gadget (proven orphaned by its CRD, unclassified) and an uninstalled logging-operator's Logging
// (the catalog: local): only the Logging is released, the others are reported, and nothing is
// refused — the ClusterRole grants what the catalog lets go, the admission policy lets it pass.
func TestConsequencesAsTheServiceAccount(t *testing.T) {
	ctx := context.Background()
	base := deploy.Render(t, "base")
	ns := "e2e-consequence"
	require.NoError(t, testCluster.CreateNamespace(ctx, ns))
	_, err := testCluster.Create(ctx, cluster.Fill(gadgetDebris, ns))
	require.NoError(t, err)
	var gadget, nodeClaim []*unstructured.Unstructured
	require.Eventually(t, func() bool {
		gadget, err = testCluster.Terminate(ctx, cluster.Fill(`{apiVersion: e2e-consequence.io/v1, kind: Gadget, metadata: {name: g, namespace: NAMESPACE, finalizers: [`+gadgetFinalizer+`]}}`, ns))
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the gadget CRD is served")
	nodeClaim, err = testCluster.Terminate(ctx, strings.ReplaceAll(cluster.KarpenterNodeClaim, "default-x7k2p", "e2e-consequence"))
	require.NoError(t, err)
	f4, err := testCluster.SeedF4(ctx, ns)
	require.NoError(t, err)
	logging := f4.Objects[0]

	rep := deploy.SweepAsCronJob(t, testCluster, sweeperBinary, base)
	noForbidden(t, rep)
	for _, e := range rep.Errors {
		assert.NotRegexp(t, `(?i)403|forbidden`, e.Message, "%s %s", e.Stage, e.Resource)
	}
	found := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		if f.Rule == "orphaned-finalizers" {
			found[f.Object.Kind+" "+f.Object.Name] = f
		}
	}

	guarded := found["NodeClaim e2e-consequence"]
	assert.Nil(t, guarded.Action, "guards: never released")
	assert.Contains(t, guarded.Reason, "operator gone, but not released: karpenter.sh/termination guards")
	unknown := found["Gadget g"]
	assert.Nil(t, unknown.Action, "unclassified: not released on the CRD's word")
	assert.Contains(t, unknown.Reason, `finalizers: [{pattern: "`+gadgetFinalizer+`", resources: ["gadgets.e2e-consequence.io"], consequence: local}]`)
	local := found["Logging "+ns]
	if assert.NotNil(t, local.Action) {
		assert.Equal(t, report.OutcomeApplied, local.Outcome, local.Error)
	}

	assert.Equal(t, []string{"karpenter.sh/termination"}, testCluster.Current(t, nodeClaim[0]).GetFinalizers())
	assert.Equal(t, []string{gadgetFinalizer}, testCluster.Current(t, gadget[0]).GetFinalizers())
	assert.Nil(t, testCluster.Current(t, logging), "released, and gone")
	// The ServiceAccount may record the Event of the release (events.k8s.io/v1; the Logging is
	// cluster-scoped, so it is in default).
	events, err := testCluster.Kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		FieldSelector: "regarding.uid=" + string(logging.GetUID())})
	require.NoError(t, err)
	if assert.Len(t, events.Items, 1, "the release is recorded") {
		assert.Equal(t, sweeper.ReportingController, events.Items[0].ReportingController)
		assert.Equal(t, "OperatorSweeperRemoveFinalizers", events.Items[0].Reason)
	}
}

// TestAdmissionPolicyRefusesGuardedFinalizers: even granted patch on NodeClaims by a role of the
// admin's, the sweeper's ServiceAccount cannot remove Karpenter's termination finalizer, which the
// catalog says guards an instance; it can remove another finalizer of the same object.
func TestAdmissionPolicyRefusesGuardedFinalizers(t *testing.T) {
	ctx := context.Background()
	deploy.Apply(t, testCluster, deploy.Render(t, "base"), false)
	grant, err := testCluster.Create(ctx, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-patch-nodeclaims}
rules: [{apiGroups: [karpenter.sh], resources: [nodeclaims], verbs: [get, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-patch-nodeclaims}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-patch-nodeclaims}
subjects: [{kind: ServiceAccount, name: operator-sweeper, namespace: operator-sweeper}]
`)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, obj := range grant {
			_, _ = testCluster.Delete(ctx, obj)
		}
	})
	claims, err := testCluster.Create(ctx, `{apiVersion: karpenter.sh/v1, kind: NodeClaim, metadata: {name: e2e-guarded, finalizers: [karpenter.sh/termination, e2e.example.com/hold]}}`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = testCluster.Dynamic.Resource(nodeClaims).Patch(ctx, "e2e-guarded", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_, _ = testCluster.Delete(ctx, claims[0])
	})
	saConfig, _ := deploy.ServiceAccountConfig(t, testCluster)
	saClient, err := dynamic.NewForConfig(saConfig)
	require.NoError(t, err)
	keep := func(finalizers ...string) error {
		patch := `{"metadata":{"finalizers":["` + strings.Join(finalizers, `","`) + `"]}}`
		_, err := saClient.Resource(nodeClaims).Patch(ctx, "e2e-guarded", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	const refusal = "operator-sweeper never removes a finalizer that guards something outside the cluster"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := saClient.Resource(nodeClaims).Patch(ctx, "e2e-guarded", types.MergePatchType, []byte(`{"metadata":{"finalizers":["e2e.example.com/hold"]}}`),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if assert.Error(c, err, "the removal of karpenter.sh/termination is denied") {
			assert.Contains(c, err.Error(), refusal)
		}
	}, time.Minute, 200*time.Millisecond)
	err = keep("e2e.example.com/hold")
	require.Error(t, err)
	assert.Contains(t, err.Error(), refusal)
	require.NoError(t, keep("karpenter.sh/termination"), "another finalizer goes")
	assert.Equal(t, []string{"karpenter.sh/termination"}, testCluster.Current(t, claims[0]).GetFinalizers())
}

var nodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
