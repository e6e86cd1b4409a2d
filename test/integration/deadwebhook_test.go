package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// The widget operator, uninstalled by `helm uninstall` that left its admission webhook's
// configuration behind (as VictoriaMetrics' and Kyverno's are left): the webhook fails closed on
// every update of a Widget in the namespace, and its Service is gone; the namespace stays.
const (
	widgetFinalizer = "widgets.deadhook-test.io/finalizer"
	widgetCRD       = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.deadhook-test.io}
spec:
  group: deadhook-test.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	widget = `
apiVersion: deadhook-test.io/v1
kind: Widget
metadata: {name: NAME, namespace: NAMESPACE, finalizers: [widgets.deadhook-test.io/finalizer]}
`
	// deadWidgetWebhook refuses updates of Widgets in NAMESPACE only: its Service is gone.
	deadWidgetWebhook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: widget-operator-NAMESPACE
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: widget-operator, meta.helm.sh/release-namespace: NAMESPACE}
webhooks:
- name: validate.widgets.deadhook-test.io
  clientConfig: {service: {namespace: NAMESPACE, name: widget-operator-webhook, path: /validate}}
  rules: [{apiGroups: [deadhook-test.io], apiVersions: ["*"], operations: [UPDATE], resources: [widgets]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NAMESPACE}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
`
	// widgetConfig says what the widget operator's finalizer stands for, and who serves it.
	widgetConfig = `
finalizers:
- pattern: widgets.deadhook-test.io/finalizer
  resources: [widgets.deadhook-test.io]
  controllers: [{kind: Deployment, namespace: NAMESPACE, name: widget-operator}]
  consequence: local
`
)

// TestDeadWebhookIsDeletedBeforeTheReleaseItRefuses: a release that a dead webhook with
// failurePolicy Fail would refuse is never sent to fail. Without the dead-webhooks opt-in, it is
// skipped (dependency), naming the configuration, and the run succeeds; with it, the
// configuration — whose Helm release is uninstalled, though its namespace remains — is deleted
// first, then the Widgets are released, in one run; restore of that run puts both back.
func TestDeadWebhookIsDeletedBeforeTheReleaseItRefuses(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	create(t, "", widgetCRD)
	var widgets []*unstructured.Unstructured
	for _, name := range []string{"w1", "w2"} {
		widgets = append(widgets, createWhenServed(t, ns, fill(widget, ns, name))...)
	}
	for _, w := range widgets {
		_, err := testCluster.Delete(ctx, w)
		require.NoError(t, err)
	}
	// Registered after the Widgets, so removed before them when the test ends.
	webhook := create(t, ns, deadWidgetWebhook)[0]
	refused := func() bool {
		_, err := testCluster.Dynamic.Resource(widgetResource()).Namespace(ns).Patch(ctx, "w1", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"probe":"x"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "validate.widgets.deadhook-test.io")
	}
	require.Eventually(t, refused, 30*time.Second, 100*time.Millisecond, "the API server calls the dead webhook, which refuses")

	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fill(widgetConfig, ns, "")), 0o600))
	args := []string{"--config", config, "--dry-run=none", "--min-terminating-age=0s", "--min-age=0s", "--max-actions=0",
		"--rules=dead-webhooks,orphaned-finalizers"}
	time.Sleep(2 * time.Second) // nothing created in the second a sweep begins is deleted

	// Not opted in: the configuration is reported, the releases wait for it.
	rep, stderr, code := runReport(t, args...)
	require.Equal(t, 0, code, "a skipped action fails nothing: %s%s", stderr, failures(rep))
	found := byObject(rep)
	hook := found["ValidatingWebhookConfiguration widget-operator-"+ns]
	assert.Equal(t, report.OutcomeSkipped, hook.Outcome, why(hook))
	assert.Equal(t, report.ReasonOptIn, hook.SkipReason)
	assert.Contains(t, hook.Evidence, "registered by Helm release "+ns+"/widget-operator (meta.helm.sh annotations): Helm release "+ns+
		"/widget-operator is uninstalled: no Secret or ConfigMap labelled owner=helm, name=widget-operator in "+ns)
	for _, name := range []string{"w1", "w2"} {
		f := found["Widget "+ns+"/"+name]
		assert.Equal(t, report.OutcomeSkipped, f.Outcome, "%s: %s", name, why(f))
		assert.Equal(t, report.ReasonDependency, f.SkipReason, name)
		assert.Contains(t, f.Error, "ValidatingWebhookConfiguration.admissionregistration.k8s.io widget-operator-"+ns+" would refuse the write", name)
		assert.Contains(t, f.Error, "Service "+ns+"/widget-operator-webhook is gone", name)
	}
	for _, w := range widgets {
		assert.Equal(t, []string{widgetFinalizer}, testCluster.Current(t, w).GetFinalizers(), "%s was not sent", w.GetName())
	}

	// Opted in: the configuration first, then the releases, in one run.
	require.NoError(t, os.WriteFile(config, []byte(fill(widgetConfig, ns, "")+"rules: {dead-webhooks: {delete: true}}\n"), 0o600))
	rep, stderr, code = runReport(t, args...)
	require.Equal(t, 0, code, "%s%s", stderr, failures(rep))
	found = byObject(rep)
	assert.Equal(t, report.OutcomeApplied, found["ValidatingWebhookConfiguration widget-operator-"+ns].Outcome, why(found["ValidatingWebhookConfiguration widget-operator-"+ns]))
	var order []string
	for _, f := range rep.Findings {
		if f.Outcome == report.OutcomeApplied {
			order = append(order, f.Object.Kind+" "+f.Object.Name)
		}
	}
	assert.Equal(t, []string{"ValidatingWebhookConfiguration widget-operator-" + ns, "Widget w1", "Widget w2"}, order, "the webhook's configuration goes first")
	assert.Nil(t, testCluster.Current(t, webhook), "the configuration is deleted")
	for _, w := range widgets {
		assert.Nil(t, testCluster.Current(t, w), "%s is released, and gone", w.GetName())
	}

	// Undone: both come back.
	restored := restoreFrom(t, "--run", rep.Metadata.RunID)
	assert.Equal(t, 3, restored.Summary.Applied, "%v", restored.Findings)
	assert.NotNil(t, testCluster.Current(t, webhook), "the configuration is back")
	for _, w := range widgets {
		back := testCluster.Current(t, w)
		if assert.NotNil(t, back, "%s is back", w.GetName()) {
			assert.Equal(t, []string{widgetFinalizer}, back.GetFinalizers())
		}
	}
}

func widgetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "deadhook-test.io", Version: "v1", Resource: "widgets"}
}
