package controllers

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// gadgetFinalizer is a finalizer in the API domain of the demo operator's CRD.
const gadgetFinalizer = "gadgets.demo.operator-sweeper.io/finalizer"

// TestPreflightSubscription: with the real OLM running and the demo operator installed from its
// catalog, a preflight of its Subscription lists the Gadgets that carry a finalizer of the CSV's
// owned CRD, their namespace and CRD, and the CSV's csv-cleanup finalizer with what OLM deletes
// before it releases it; exit 3, nothing changed.
func TestPreflightSubscription(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	ns := testCluster.NewNamespace(t, "preflight")
	csv := installDemo(t, ns)
	rbac := olmRBAC(t, ns)
	require.NotEmpty(t, rbac, "OLM made the operator's ClusterRole and binding")
	gadgets, err := testCluster.Create(ctx, cluster.Fill(`
apiVersion: demo.operator-sweeper.io/v1
kind: Gadget
metadata: {name: g1, namespace: NAMESPACE, finalizers: [`+gadgetFinalizer+`]}
---
apiVersion: demo.operator-sweeper.io/v1
kind: Gadget
metadata: {name: g2, namespace: NAMESPACE, finalizers: [`+gadgetFinalizer+`]}
---
apiVersion: demo.operator-sweeper.io/v1
kind: Gadget
metadata: {name: plain, namespace: NAMESPACE}
`, ns))
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, g := range gadgets {
			client, _, err := testCluster.Resource(g)
			if assert.NoError(t, err) {
				_, _ = client.Patch(ctx, g.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			}
		}
	})

	rep, stderr, code := sweeperBinary.RunReport(t, "preflight", "subscription/sweeper-demo", "-n", ns,
		"--kubeconfig", testCluster.Kubeconfig, "-o", "json", "--log-level=warn")
	require.Equal(t, 3, code, "something would be blocked\n%s", stderr)

	found := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		assert.Equal(t, rules.PreflightName, f.Rule)
		found[f.Object.String()] = f
	}
	for _, name := range []string{"g1", "g2"} {
		f, ok := found["Gadget "+ns+"/"+name]
		if assert.True(t, ok, "Gadget %s is listed", name) {
			assert.Contains(t, f.Reason, gadgetFinalizer)
			assert.Contains(t, strings.Join(f.Evidence, "\n"), "in the API domain of CRD "+cluster.DemoCRD)
		}
	}
	assert.NotContains(t, found, "Gadget "+ns+"/plain", "no finalizer: not blocked")
	assert.Contains(t, found, "Namespace "+ns)
	assert.Contains(t, found, "CustomResourceDefinition "+cluster.DemoCRD)
	cleanup, ok := found["ClusterServiceVersion "+ns+"/"+csv.GetName()]
	if assert.True(t, ok, "the CSV's csv-cleanup finalizer is reported") {
		assert.Contains(t, cleanup.Reason, csvCleanup)
		for _, obj := range rbac {
			assert.Contains(t, strings.Join(cleanup.Evidence, "\n"), obj.GetKind()+" "+obj.GetName(), "what csv-cleanup deletes")
		}
	}
	assert.Len(t, rep.Findings, 5, "nothing unrelated: %v", found)
	assert.Len(t, olmRBAC(t, ns), len(rbac), "a preflight changes nothing")
}
