package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// TestStuckNamespace: `helm uninstall` of victoria-metrics-k8s-stack deleted the operator first,
// then the namespace (VictoriaMetrics/helm-charts#2726). The real namespace controller deletes
// what it can and says, in the namespace's conditions, which finalizers hold the rest; the report
// quotes it. The operator's validating webhook, left behind with its Service gone, refuses every
// release of those finalizers: without the dead-webhooks opt-in the sweeper sends none (each
// waits on the configuration, named), and the run succeeds; opted in, it deletes the configuration
// first, then releases the finalizers, and the namespace controller finishes.
func TestStuckNamespace(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	ns := testCluster.NewNamespace(t, "stuck")
	seeded, err := testCluster.SeedVictoriaMetrics(ctx, ns)
	require.NoError(t, err)
	webhook := seeded.Get("ValidatingWebhookConfiguration", ns+"-victoria-metrics-operator-admission")
	require.NotNil(t, webhook)
	t.Cleanup(func() { _, _ = testCluster.Delete(ctx, webhook) })
	stuckObjects := slices.DeleteFunc(slices.Clone(seeded.Objects), func(obj *unstructured.Unstructured) bool { return obj == webhook })
	testCluster.Eventually(t, time.Minute, "the namespace controller reports the finalizers it waits for", func() bool {
		namespace, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		return slices.ContainsFunc(namespace.Status.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceFinalizersRemaining && c.Status == corev1.ConditionTrue
		})
	})

	explained := explain(t, "namespace/"+ns)
	assert.Contains(t, explained, "Namespace "+ns+"\n")
	assert.Contains(t, explained, "\n  blocked by:\n    ")
	assert.Contains(t, explained, "\n    VMAgent "+ns+"/vm-stack\n")
	assert.Contains(t, explained, "orphaned-finalizers (warning): operator gone; releasing apps.victoriametrics.com/finalizer")

	// Not opted in: nothing is sent to be refused.
	rep := sweep(t)
	stuck := cluster.FindingAbout(rep, "stuck-terminating", namespaceObject(ns))
	require.NotNil(t, stuck, "the namespace is reported")
	assert.True(t, slices.ContainsFunc(stuck.Evidence, func(e string) bool {
		return strings.HasPrefix(e, "namespace condition NamespaceFinalizersRemaining: ") &&
			strings.Contains(e, "apps.victoriametrics.com/finalizer")
	}), "the namespace controller's word: %v", stuck.Evidence)
	for _, obj := range stuckObjects {
		f := cluster.FindingAbout(rep, "orphaned-finalizers", obj)
		if assert.NotNil(t, f, "%s %s is reported", obj.GetKind(), obj.GetName()) {
			assert.Equal(t, report.OutcomeSkipped, f.Outcome, "%s %s: %s %s", obj.GetKind(), obj.GetName(), f.Reason, f.Error)
			assert.Equal(t, report.ReasonDependency, f.SkipReason)
			assert.Contains(t, f.Error, "ValidatingWebhookConfiguration.admissionregistration.k8s.io "+webhook.GetName()+" would refuse the write")
		}
		assert.Equal(t, obj.GetFinalizers(), testCluster.Current(t, obj).GetFinalizers(), "%s %s keeps its finalizer", obj.GetKind(), obj.GetName())
	}
	dead := cluster.FindingAbout(rep, "dead-webhooks", webhook)
	require.NotNil(t, dead, "the webhook configuration is reported")
	assert.Equal(t, report.ReasonOptIn, dead.SkipReason)
	assert.Contains(t, rep.Summary.StuckNamespaces, "dead-webhooks", "a root cause of the stuck namespace")

	// Opted in: the configuration first, then the releases; the namespace controller finishes.
	rep = sweepConfigured(t, &optIn{Rule: "dead-webhooks", Delete: true})
	dead = cluster.FindingAbout(rep, "dead-webhooks", webhook)
	require.NotNil(t, dead)
	assert.Equal(t, report.OutcomeApplied, dead.Outcome, "%s %s", dead.Reason, dead.Error)
	for _, obj := range stuckObjects {
		f := cluster.FindingAbout(rep, "orphaned-finalizers", obj)
		if assert.NotNil(t, f, "%s %s is reported", obj.GetKind(), obj.GetName()) {
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s %s: %s %s", obj.GetKind(), obj.GetName(), f.Reason, f.Error)
		}
	}
	testCluster.Eventually(t, time.Minute, "the namespace controller finishes", func() bool {
		_, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	for _, obj := range seeded.Objects {
		assert.Nil(t, testCluster.Current(t, obj), "%s %s deleted", obj.GetKind(), obj.GetName())
	}
	assert.Empty(t, cluster.ActedOn(sweep(t), ns), "nothing left to do")
}

// TestNamespaceStuckOnDeadAPIService: OLM uninstalled, its packageserver's APIService left
// behind. The real namespace controller cannot discover packages.operators.coreos.com/v1, so a
// namespace deletion hangs (NamespaceDeletionDiscoveryFailure). The report chains the namespace
// to the APIService, and so does explain; opted in, the sweeper deletes the APIService, and the
// namespace controller finishes.
func TestNamespaceStuckOnDeadAPIService(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	uninstallOLM(t)
	api, err := testCluster.Create(ctx, cluster.PackageServerAPIService)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = testCluster.Delete(ctx, api[0]) })
	ns := testCluster.NewNamespace(t, "dead-api")
	_, err = testCluster.Create(ctx, cluster.Fill(`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: NAMESPACE}}`, ns))
	require.NoError(t, err)
	require.NoError(t, testCluster.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	testCluster.Eventually(t, 2*time.Minute, "the namespace controller cannot discover packages.operators.coreos.com/v1", func() bool {
		namespace, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		return slices.ContainsFunc(namespace.Status.Conditions, func(c corev1.NamespaceCondition) bool {
			return c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "packages.operators.coreos.com/v1")
		})
	})

	explained := explain(t, "namespace/"+ns)
	assert.Contains(t, explained, "Namespace "+ns+"\n")
	assert.Contains(t, explained, "  blocked by:\n    APIService v1.packages.operators.coreos.com\n")
	assert.Contains(t, explained, "with --dry-run=none: Delete, would be skipped (opt-in)")

	rep := sweepConfigured(t, &optIn{Rule: "dead-apiservices", Delete: true})

	stuck := cluster.FindingAbout(rep, "stuck-terminating", namespaceObject(ns))
	require.NotNil(t, stuck, "the namespace is reported")
	assert.Contains(t, blockers(stuck), "APIService v1.packages.operators.coreos.com", "chained to the APIService")
	dead := cluster.FindingAbout(rep, "dead-apiservices", api[0])
	require.NotNil(t, dead, "the APIService is reported")
	assert.Equal(t, report.OutcomeApplied, dead.Outcome, "%s %s", dead.Reason, dead.Error)
	assert.Contains(t, dead.Evidence, "blocks the deletion of namespaces "+ns+" (condition NamespaceDeletionDiscoveryFailure)")
	assert.GreaterOrEqual(t, rep.Summary.StuckNamespaces["dead-apiservices"], 1)
	testCluster.Eventually(t, 2*time.Minute, "the namespace controller finishes", func() bool {
		_, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// namespaceObject is a Namespace as the report helpers take it.
func namespaceObject(name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("Namespace")
	obj.SetName(name)
	return obj
}

// blockers are the objects a finding names as blocking it, as "Kind namespace/name".
func blockers(f *report.FindingResult) []string {
	var out []string
	for _, b := range f.BlockedBy {
		out = append(out, strings.TrimSpace(b.Kind+" "+strings.TrimPrefix(b.Namespace+"/"+b.Name, "/")))
	}
	return out
}

// explain runs `operator-sweeper explain target` as the shipped ServiceAccount, with the shipped
// config, and returns what it prints.
func explain(t *testing.T, target string) string {
	t.Helper()
	base := deploy.Render(t, "base")
	deploy.Apply(t, testCluster, base, false)
	_, kubeconfig := deploy.ServiceAccountConfig(t, testCluster)
	// The CronJob's args but --dry-run, which explain does not take: it never writes.
	cronJob := slices.DeleteFunc(deploy.CronJobArgs(t, base), func(arg string) bool { return strings.HasPrefix(arg, "--dry-run") })
	args := slices.Concat([]string{"explain", target}, cronJob, deploy.Young(), []string{"--kubeconfig", kubeconfig, "-o", "table"})
	stdout, stderr, code := sweeperBinary.Run(t, args...)
	if code != 0 {
		t.Fatalf("explain %s: exit status %d\n%s", target, code, stderr)
	}
	return stdout
}
