package operators

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
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

func prometheuses(namespace string) interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	Delete(context.Context, string, metav1.DeleteOptions, ...string) error
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
} {
	return testCluster.Dynamic.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}).Namespace(namespace)
}

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
	ns := testCluster.NewNamespace(t, "prom")
	_, err := testCluster.Create(ctx, cluster.Fill(prometheusOperatorDeployment, ns))
	require.NoError(t, err)
	testCluster.Eventually(t, time.Minute, "the operator's Deployment is available", func() bool {
		d, err := testCluster.Kube.AppsV1().Deployments(ns).Get(ctx, "prometheus-operator", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1
	})
	operator, err := testCluster.StartPrometheusOperator(ns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = operator.Stop() })

	var promethei []*unstructured.Unstructured
	for _, name := range []string{"lagging", "orphaned"} {
		objs, err := testCluster.Create(ctx, cluster.Fill(`{apiVersion: monitoring.coreos.com/v1, kind: Prometheus, metadata: {name: `+name+`, namespace: NAMESPACE}, spec: {replicas: 1}}`, ns))
		require.NoError(t, err)
		promethei = append(promethei, objs[0])
	}
	t.Cleanup(func() {
		for _, p := range promethei {
			_, _ = prometheuses(ns).Patch(ctx, p.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	for _, p := range promethei {
		testCluster.Eventually(t, time.Minute, "the operator puts "+statusCleanup+" on Prometheus "+p.GetName(), func() bool {
			now, err := prometheuses(ns).Get(ctx, p.GetName(), metav1.GetOptions{})
			return err == nil && slices.Contains(now.GetFinalizers(), statusCleanup)
		})
	}

	// Running, as far as the cluster can tell (its Deployment available), but lagging: the
	// process is stopped while a Prometheus is deleted.
	require.NoError(t, operator.Stop())
	lagging := promethei[0]
	require.NoError(t, prometheuses(ns).Delete(ctx, lagging.GetName(), metav1.DeleteOptions{}))
	rep := sweep(t)
	f := cluster.FindingAbout(rep, "orphaned-finalizers", lagging)
	require.NotNil(t, f, "the terminating Prometheus is reported")
	assert.Nil(t, f.Action, "its operator runs: nothing released")
	assert.Contains(t, strings.Join(f.Evidence, "\n"), "Deployment "+ns+"/prometheus-operator", "the finding names the controller")
	now, err := prometheuses(ns).Get(ctx, lagging.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{statusCleanup}, now.GetFinalizers())

	// Back, the operator removes its finalizer itself.
	operator, err = testCluster.StartPrometheusOperator(ns)
	require.NoError(t, err)
	testCluster.Eventually(t, time.Minute, "the operator finalizes the deleted Prometheus", func() bool {
		_, err := prometheuses(ns).Get(ctx, lagging.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	require.NoError(t, operator.Stop())

	// Scaled to 0: a warning, nothing released.
	_, err = testCluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "prometheus-operator", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testCluster.Eventually(t, time.Minute, "the operator's Deployment has no replica", func() bool {
		d, err := testCluster.Kube.AppsV1().Deployments(ns).Get(ctx, "prometheus-operator", metav1.GetOptions{})
		return err == nil && d.Status.Replicas == 0
	})
	orphaned := promethei[1]
	require.NoError(t, prometheuses(ns).Delete(ctx, orphaned.GetName(), metav1.DeleteOptions{}))
	rep = sweep(t)
	f = cluster.FindingAbout(rep, "orphaned-finalizers", orphaned)
	require.NotNil(t, f)
	assert.Nil(t, f.Action, "scaled to 0 is not uninstalled")
	assert.Equal(t, "controller scaled to 0; scale it up instead of removing "+statusCleanup+": Deployment "+ns+"/prometheus-operator", f.Reason)
	assert.Empty(t, cluster.ActedOn(rep, ns))

	// Uninstalled: the stuck Prometheus is released by the shipped config.
	require.NoError(t, testCluster.Kube.AppsV1().Deployments(ns).Delete(ctx, "prometheus-operator", metav1.DeleteOptions{}))
	testCluster.Eventually(t, time.Minute, "the operator's Deployment is gone", func() bool {
		_, err := testCluster.Kube.AppsV1().Deployments(ns).Get(ctx, "prometheus-operator", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	rep = sweep(t)
	f = cluster.FindingAbout(rep, "orphaned-finalizers", orphaned)
	require.NotNil(t, f)
	assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s %s", f.Reason, f.Error)
	assert.Equal(t, []string{"orphaned-finalizers Prometheus orphaned"}, cluster.ActedOn(rep, ns))
	testCluster.Eventually(t, time.Minute, "the released Prometheus is gone", func() bool {
		_, err := prometheuses(ns).Get(ctx, orphaned.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
