package operators

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// statusCleanup is the finalizer prometheus-operator puts on every Prometheus it reconciles, with
// feature gate StatusForConfigurationResources.
const statusCleanup = "monitoring.coreos.com/status-cleanup"

// prometheusOperatorDeployment is the operator's Deployment as upstream ships it
// (example/rbac/prometheus-operator): kwok runs its pod, so the cluster sees it available; the
// operator itself runs out of cluster, as a process of the test.
const prometheusOperatorDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: prometheus-operator
  namespace: NAMESPACE
  labels: {app.kubernetes.io/component: controller, app.kubernetes.io/name: prometheus-operator, app.kubernetes.io/version: 0.85.0}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/component: controller, app.kubernetes.io/name: prometheus-operator}}
  template:
    metadata: {labels: {app.kubernetes.io/component: controller, app.kubernetes.io/name: prometheus-operator}}
    spec: {containers: [{name: prometheus-operator, image: ` + cluster.PrometheusOperatorImage + `}]}
`

// TestPrometheusOperatorStatusCleanup runs the real prometheus-operator v0.85.0 against the real
// control plane. It puts status-cleanup on every Prometheus. While its Deployment is available, a
// Prometheus being deleted is kept, and the finding names the Deployment; the operator then
// removes its finalizer itself. Scaled to 0, it is warned about, nothing released. Uninstalled
// (its Deployment deleted, as helm uninstall does), the stuck Prometheus is released by the
// shipped config, as the CronJob's ServiceAccount.
func TestPrometheusOperatorStatusCleanup(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	require.NoError(t, testCluster.InstallPrometheusOperatorCRDs(ctx))
	op := operator{namespace: testCluster.NewNamespace(t, "prom"), kind: "Deployment", name: "prometheus-operator", finalizer: statusCleanup,
		resource: schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}}
	_, err := testCluster.Create(ctx, cluster.Fill(prometheusOperatorDeployment, op.namespace))
	require.NoError(t, err)
	op.workloadHas(t, "availableReplicas", 1)
	process, err := testCluster.StartPrometheusOperator(op.namespace)
	require.NoError(t, err)
	t.Cleanup(func() { _ = process.Stop() })

	var promethei []*unstructured.Unstructured
	for _, name := range []string{"lagging", "orphaned"} {
		objs, err := testCluster.Create(ctx, cluster.Fill(`{apiVersion: monitoring.coreos.com/v1, kind: Prometheus, metadata: {name: `+name+`, namespace: NAMESPACE}, spec: {replicas: 1}}`, op.namespace))
		require.NoError(t, err)
		promethei = append(promethei, objs[0])
	}
	op.releaseAtCleanup(t, promethei)
	for _, p := range promethei {
		testCluster.Eventually(t, time.Minute, "the operator puts "+statusCleanup+" on Prometheus "+p.GetName(), func() bool {
			now, err := op.objects().Get(ctx, p.GetName(), metav1.GetOptions{})
			return err == nil && slices.Contains(now.GetFinalizers(), statusCleanup)
		})
	}
	lagging, orphaned := promethei[0], promethei[1]

	// Running, as far as the cluster can tell (its Deployment available), but lagging: the
	// process is stopped while a Prometheus is deleted.
	require.NoError(t, process.Stop())
	op.keptWhileAvailable(t, lagging)

	// Back, the operator removes its finalizer itself.
	process, err = testCluster.StartPrometheusOperator(op.namespace)
	require.NoError(t, err)
	op.gone(t, lagging, "the operator finalizes the deleted Prometheus")
	require.NoError(t, process.Stop())

	op.warnedWhenScaledToZero(t, orphaned)
	op.releasedWhenUninstalled(t, orphaned)
}
