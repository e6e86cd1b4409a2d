package operators

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// loggingsNeedATeam is a ClusterPolicy that fails closed: Kyverno registers a webhook with
// failurePolicy Fail for the writes of Loggings, and refuses a Logging without label team.
const loggingsNeedATeam = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: loggings-need-a-team}
spec:
  background: false
  failurePolicy: Fail
  rules:
  - name: team-label
    match: {any: [{resources: {kinds: [logging.banzaicloud.io/v1beta1/Logging]}}]}
    validate:
      failureAction: Enforce
      message: a Logging needs label team
      pattern: {metadata: {labels: {team: "?*"}}}
`

// kyvernoLogging is logging-operator's Logging with its finalizers, of team NAME (logging-operator
// is not installed: deleted, it stays, as F4 leaves it).
const kyvernoLogging = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata:
  name: NAME
  labels: {team: NAME}
  finalizers:
  - fluentdconfig.logging.banzaicloud.io/finalizer
  - syslogngconfig.logging.banzaicloud.io/finalizer
  - telemetrycontroller.logging.banzaicloud.io/finalizer
spec: {controlNamespace: NAME}
`

var (
	validatingWebhookConfigurations = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingWebhookConfigurations   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	loggings                        = schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"}
)

// kyvernoWebhooks returns the webhook configurations Kyverno registered (by its label) that have
// webhooks, as they are now.
func kyvernoWebhooks(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{validatingWebhookConfigurations, mutatingWebhookConfigurations} {
		list, err := testCluster.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{LabelSelector: cluster.KyvernoWebhookLabel})
		require.NoError(t, err)
		for i := range list.Items {
			if hooks, _, _ := unstructured.NestedSlice(list.Items[i].Object, "webhooks"); len(hooks) > 0 {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out
}

// TestKyvernoDeadWebhooks runs the real Kyverno v1.19.1 admission controller: it makes its own
// certificates and registers its own webhook configurations, with failurePolicy Fail for a policy
// on Loggings, and answers the API server's calls. While it runs, the sweeper reports none of them.
// Uninstalled as `helm uninstall` leaves it when Kyverno's clean-up cannot run (its RBAC deleted
// with the rest, the process stopped, the namespace deleted), its configurations stay and refuse
// the writes they match: the release of a Logging that logging-operator, gone too, left stuck. The
// sweeper reports each configuration, its Service and namespace gone, and the release as waiting
// for it; opted in to dead-webhooks, it deletes them, then releases the Logging, in one run; and
// restore of that run puts the configurations and the Logging back.
func TestKyvernoDeadWebhooks(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	require.NoError(t, testCluster.InstallKyvernoCRDs(ctx))
	require.NoError(t, testCluster.InstallKyverno(ctx))
	process, err := testCluster.StartKyverno(ctx)
	require.NoError(t, err)
	var logging *unstructured.Unstructured
	kyvernoCleanup(t, process, &logging)
	testCluster.Eventually(t, time.Minute, "Kyverno's Deployment is available", func() bool {
		d, err := testCluster.Kube.AppsV1().Deployments(cluster.KyvernoNamespace).Get(ctx, cluster.KyvernoDeployment, metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 1
	})
	_, err = testCluster.Create(ctx, loggingsNeedATeam)
	require.NoError(t, err)

	// Kyverno registers a webhook for Loggings, failing closed, and answers: a Logging without a
	// team is refused, with the policy's message.
	testCluster.Eventually(t, 2*time.Minute, "Kyverno registers a webhook for Loggings that fails closed", func() bool {
		return slices.ContainsFunc(kyvernoWebhooks(t), func(config *unstructured.Unstructured) bool {
			return matchesLoggingsFailingClosed(t, config)
		})
	})
	unlabelled := strings.Replace(kyvernoLogging, "labels: {team: NAME}", "labels: {}", 1)
	testCluster.Eventually(t, time.Minute, "Kyverno refuses a Logging without a team", func() bool {
		objs, err := cluster.Decode(strings.ReplaceAll(unlabelled, "NAME", "no-team"))
		require.NoError(t, err)
		_, err = testCluster.Dynamic.Resource(loggings).Create(ctx, objs[0], metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "a Logging needs label team")
	})
	registered := kyvernoWebhooks(t)
	require.NotEmpty(t, registered)
	for _, config := range registered {
		t.Logf("Kyverno registered %s %s", config.GetKind(), config.GetName())
	}

	// A Logging of a team, created and deleted while Kyverno runs (it admits both): logging-operator
	// is not there, so it stays.
	team := testCluster.NewNamespace(t, "team")
	created, err := testCluster.Create(ctx, strings.ReplaceAll(kyvernoLogging, "NAME", team))
	require.NoError(t, err)
	logging = created[0]

	// Kyverno runs: none of its configurations is reported.
	rep := sweep(t)
	for _, config := range registered {
		assert.Nil(t, cluster.FindingAbout(rep, "dead-webhooks", config), "%s %s: Kyverno serves it", config.GetKind(), config.GetName())
	}
	assert.Empty(t, cluster.ActedOn(rep, cluster.KyvernoNamespace))

	_, err = testCluster.Delete(ctx, logging)
	require.NoError(t, err)
	logging = testCluster.Current(t, logging)
	require.NotNil(t, logging, "held by logging-operator's finalizers")

	require.NoError(t, testCluster.UninstallKyverno(ctx, process))
	// Kyverno, its Deployment gone, tried to delete its configurations, and no longer could.
	refused := slices.DeleteFunc(strings.Split(testCluster.Log("kyverno"), "\n"), func(line string) bool {
		return !strings.Contains(line, "failed to clean up validating webhook configuration") || !strings.Contains(line, "forbidden")
	})
	if assert.NotEmpty(t, refused, "Kyverno's clean-up is refused") {
		t.Logf("Kyverno: %s", refused[0])
	}
	left := kyvernoWebhooks(t)
	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, obj := range objs {
			out = append(out, obj.GetKind()+" "+obj.GetName())
		}
		return out
	}
	require.Equal(t, names(registered), names(left), "Kyverno's configurations are left behind")
	registered = left
	_, err = testCluster.Dynamic.Resource(loggings).Patch(ctx, logging.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
		metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	require.Error(t, err, "the dead webhook refuses the release")
	assert.Contains(t, err.Error(), "kyverno-svc", "refused calling Kyverno's Service")

	// Not opted in: every configuration is reported, the release waits for them.
	rep = sweep(t)
	for _, config := range registered {
		f := cluster.FindingAbout(rep, "dead-webhooks", config)
		if !assert.NotNil(t, f, "%s %s is reported", config.GetKind(), config.GetName()) {
			continue
		}
		assert.Contains(t, f.Reason, "its Services and whoever registered it are gone", "%s %s", config.GetKind(), config.GetName())
		assert.Contains(t, f.Evidence, "namespace "+cluster.KyvernoNamespace+" no longer exists: what was installed there is gone")
		assert.Equal(t, report.OutcomeSkipped, f.Outcome)
		assert.Equal(t, report.ReasonOptIn, f.SkipReason)
	}
	released := cluster.FindingAbout(rep, "orphaned-finalizers", logging)
	require.NotNil(t, released, "the Logging is reported")
	assert.Equal(t, report.OutcomeSkipped, released.Outcome, "%s %s", released.Reason, released.Error)
	assert.Equal(t, report.ReasonDependency, released.SkipReason)
	assert.Contains(t, released.Error, "kyverno-resource-validating-webhook-cfg would refuse the write")
	assert.Equal(t, logging.GetFinalizers(), testCluster.Current(t, logging).GetFinalizers(), "not sent to be refused")

	// Opted in: the configurations first, then the release, in one run.
	rep = deploy.SweepAsCronJob(t, testCluster, sweeperBinary, deploy.OptedIn(t, testCluster, deploy.OptIn{Rule: "dead-webhooks", Delete: true}))
	var order []string
	for _, f := range rep.Findings {
		if f.Outcome == report.OutcomeApplied {
			order = append(order, f.Object.Kind+" "+f.Object.Name)
		}
	}
	t.Logf("applied, in order: %v", order)
	for _, config := range registered {
		f := cluster.FindingAbout(rep, "dead-webhooks", config)
		if assert.NotNil(t, f, "%s %s is reported", config.GetKind(), config.GetName()) {
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s %s: %s %s", config.GetKind(), config.GetName(), f.Reason, f.Error)
		}
		assert.Nil(t, testCluster.Current(t, config), "%s %s is deleted", config.GetKind(), config.GetName())
	}
	released = cluster.FindingAbout(rep, "orphaned-finalizers", logging)
	require.NotNil(t, released)
	assert.Equal(t, report.OutcomeApplied, released.Outcome, "%s %s", released.Reason, released.Error)
	blocker := slices.Index(order, "ValidatingWebhookConfiguration kyverno-resource-validating-webhook-cfg")
	assert.True(t, blocker >= 0 && blocker < slices.Index(order, "Logging "+logging.GetName()), "the configuration that refuses the release goes first: %v", order)
	testCluster.Eventually(t, time.Minute, "the released Logging is gone", func() bool { return testCluster.Current(t, logging) == nil })

	// Undone: the configurations and the Logging come back.
	restored, stderr, code := sweeperBinary.RunReport(t, "restore", "--dry-run=none", "--run", rep.Metadata.RunID,
		"--kubeconfig", testCluster.Kubeconfig, "-o", "json", "--log-level=warn")
	require.Equal(t, 0, code, "restore: %s", stderr)
	assert.Equal(t, len(order), restored.Summary.Applied, "every action undone: %v", restored.Findings)
	for _, config := range registered {
		back := testCluster.Current(t, config)
		if assert.NotNil(t, back, "%s %s is back", config.GetKind(), config.GetName()) {
			assert.Equal(t, config.Object["webhooks"], back.Object["webhooks"], "%s %s: as Kyverno registered it", config.GetKind(), config.GetName())
		}
	}
	if back := testCluster.Current(t, logging); assert.NotNil(t, back, "the Logging is back") {
		assert.Equal(t, logging.GetFinalizers(), back.GetFinalizers())
	}
}

// matchesLoggingsFailingClosed reports whether a webhook configuration has a webhook with
// failurePolicy Fail whose rules match Loggings.
func matchesLoggingsFailingClosed(t *testing.T, config *unstructured.Unstructured) bool {
	t.Helper()
	var c admissionregistrationv1.ValidatingWebhookConfiguration
	data, err := config.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &c))
	for _, hook := range c.Webhooks {
		if hook.FailurePolicy == nil || *hook.FailurePolicy != admissionregistrationv1.Fail {
			continue
		}
		for _, rule := range hook.Rules {
			if slices.Contains(rule.APIGroups, "logging.banzaicloud.io") && slices.Contains(rule.Resources, "loggings") {
				return true
			}
		}
	}
	return false
}

// kyvernoCleanup removes, when the test ends, what Kyverno and the test left, in an order that
// leaves nothing stuck: the process; the webhook configurations Kyverno registered (a dead one
// would refuse later tests' writes); the Logging *logging, if any, released; the policy; Kyverno's
// namespace.
func kyvernoCleanup(t *testing.T, process *cluster.Process, logging **unstructured.Unstructured) {
	t.Cleanup(func() {
		ctx := context.Background()
		_ = process.Stop()
		for _, gvr := range []schema.GroupVersionResource{validatingWebhookConfigurations, mutatingWebhookConfigurations} {
			_ = testCluster.Dynamic.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: cluster.KyvernoWebhookLabel})
		}
		if *logging != nil {
			// A webhook configuration deleted a moment ago may still be called for a while.
			testCluster.Eventually(t, 30*time.Second, "release the Logging", func() bool {
				_, err := testCluster.Dynamic.Resource(loggings).Patch(ctx, (*logging).GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				return err == nil || apierrors.IsNotFound(err)
			})
		}
		policies := schema.GroupVersionResource{Group: "kyverno.io", Version: "v1", Resource: "clusterpolicies"}
		_ = testCluster.Dynamic.Resource(policies).Delete(ctx, "loggings-need-a-team", metav1.DeleteOptions{})
		if err := testCluster.Kube.CoreV1().Namespaces().Delete(ctx, cluster.KyvernoNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("delete namespace %s: %v", cluster.KyvernoNamespace, err)
		}
	})
}
