package integration

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// The field cases walk the whole cluster, as the sweeper does: whether an operator is gone can
// only be told from every namespace. Their clock is an hour ahead, past --min-terminating-age.

const (
	syslogNGFinalizer  = "syslogngconfig.logging.banzaicloud.io/finalizer"
	fluentdFinalizer   = "fluentdconfig.logging.banzaicloud.io/finalizer"
	telemetryFinalizer = "telemetrycontroller.logging.banzaicloud.io/finalizer"
	csvCleanup         = "operators.coreos.com/csv-cleanup"
)

// deployment is a Deployment manifest of cluster with its replicas.
func deployment(manifest string, replicas string) string {
	return strings.ReplaceAll(manifest, "REPLICAS", replicas)
}

// sweepOptions walk the whole cluster with every rule and apply.
func sweepOptions() options.Options {
	opts := testOptions("")
	opts.DryRun = report.DryRunNone
	return opts
}

// sweep runs the configured rules an hour from now.
func sweep(t *testing.T, opts options.Options, rec *recorder) *report.Report {
	t.Helper()
	return sweepChanging(t, opts, rec, nil)
}

// sweepChanging runs the configured rules an hour from now, and change, if not nil, between the
// view and the first read that confirms an action or write: where a controller may change the
// cluster under the sweeper. The engine plans every rule before it acts: change runs as the plan
// of a rule of its own.
func sweepChanging(t *testing.T, opts options.Options, rec *recorder, change func()) *report.Report {
	t.Helper()
	ruleSet, err := opts.RuleSet()
	require.NoError(t, err)
	if change != nil {
		ruleSet = append(ruleSet, changeBeforeActing{change: change})
	}
	return newEngine(t, opts, rec, clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour)), ruleSet...).Run(context.Background())
}

// changeBeforeActing is a rule that plans nothing and changes the cluster.
type changeBeforeActing struct{ change func() }

func (changeBeforeActing) Name() string { return "change-before-acting" }

func (r changeBeforeActing) Plan(context.Context, *rules.View) []rules.Finding {
	r.change()
	return nil
}

// ruleFindings returns the findings of rule about objects in namespace, or named namespace.
func ruleFindings(rep *report.Report, rule, namespace string) []report.FindingResult {
	var out []report.FindingResult
	for _, f := range rep.Findings {
		if f.Rule == rule && (f.Object.Namespace == namespace || f.Object.Name == namespace || slices.Contains([]string{namespace + "-role", namespace + "-binding", namespace + "-webhook"}, f.Object.Name)) {
			out = append(out, f)
		}
	}
	return out
}

func byKind(findings []report.FindingResult) map[string]report.FindingResult {
	out := map[string]report.FindingResult{}
	for _, f := range findings {
		out[f.Object.Kind] = f
	}
	return out
}

// TestF4LoggingOperatorUninstalled: the Logging keeps logging-operator's finalizers after `helm
// uninstall`. The catalog says what each stands for (a deletion order, and the telemetry
// controller's routing): released, gone, and a second run has nothing left to do.
func TestF4LoggingOperatorUninstalled(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	debris := seeded(t)(testCluster.SeedF4(context.Background(), ns)).Objects

	// --dry-run=server sends the writes and changes nothing.
	serverOpts := sweepOptions()
	serverOpts.DryRun = report.DryRunServer
	rep := sweep(t, serverOpts, nil)
	for _, f := range ruleFindings(rep, "orphaned-finalizers", ns) {
		assert.Equal(t, report.OutcomeDryRun, f.Outcome, "%s %s", f.Object.Kind, f.Error)
	}
	for _, obj := range debris {
		assert.NotNil(t, testCluster.Current(t, obj), "%s survives a server-side dry run", obj.GetKind())
	}

	rep = sweep(t, sweepOptions(), nil)
	findings := byKind(ruleFindings(rep, "orphaned-finalizers", ns))
	require.Len(t, findings, 1)
	want := map[string][]string{
		"Logging": {fluentdFinalizer, syslogNGFinalizer, telemetryFinalizer},
	}
	for kind, finalizers := range want {
		f := findings[kind]
		assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", kind, f.Error)
		assert.Equal(t, "warning", string(f.Severity))
		require.NotNil(t, f.Action)
		assert.Equal(t, "RemoveFinalizers", f.Action.Type)
		assert.Equal(t, finalizers, f.Action.Finalizers)
		assert.Contains(t, f.Evidence, "no Deployment matches app.kubernetes.io/name=logging-operator in any namespace")
	}
	for _, obj := range debris {
		assert.Nil(t, testCluster.Current(t, obj), "%s is gone", obj.GetKind())
	}
	// The Event of the cluster-scoped Logging is in default.
	logging := findings["Logging"]
	events, err := testCluster.Kube.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(logging.Object.UID)})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	event := events.Items[0]
	assert.Equal(t, "OperatorSweeperRemoveFinalizers", event.Reason)
	assert.Equal(t, "Normal", event.Type)
	assert.Equal(t, sweeper.ReportingController, event.ReportingController)
	assert.Equal(t, "remove finalizers "+fluentdFinalizer+", "+syslogNGFinalizer+", "+telemetryFinalizer+": "+logging.Reason, event.Message)

	second := sweep(t, sweepOptions(), nil)
	assert.Empty(t, ruleFindings(second, "orphaned-finalizers", ns))
	assert.Zero(t, second.Summary.Applied, "a second run applies nothing")
}

// TestF4OperatorStillRunning: the same debris with logging-operator running is left alone, and
// the finding names the controller.
func TestF4OperatorStillRunning(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, deployment(cluster.LoggingOperator, "1"))
	debris := seeded(t)(testCluster.SeedF4(context.Background(), ns)).Objects

	rep := sweep(t, sweepOptions(), nil)

	findings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, findings, 1)
	for _, f := range findings {
		assert.Nil(t, f.Action, "%s: no action", f.Object.Kind)
		assert.Equal(t, "info", string(f.Severity))
		assert.Contains(t, f.Reason, "Deployment "+ns+"/logging-operator")
	}
	for _, obj := range debris {
		got := testCluster.Current(t, obj)
		require.NotNil(t, got)
		assert.Equal(t, obj.GetFinalizers(), got.GetFinalizers())
	}
}

// TestF1OLMScaledToZero: olm-operator exists with replicas 0. The CSV is not orphaned: a
// warning, and nothing is touched.
func TestF1OLMScaledToZero(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, cluster.OLMDeployment("olm-operator", ns, 0))
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	csv := f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")
	rbac := f1.Objects[:3]
	opts := sweepOptions()
	opts.RuleConfigs = map[string]rules.RuleConfig{"olm-rbac": {Args: rules.OLMRBACArgs{Delete: true}}}

	rep := sweep(t, opts, nil)

	findings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, findings, 1)
	assert.Equal(t, "warning", string(findings[0].Severity))
	assert.Equal(t, "controller scaled to 0; scale it up instead of removing "+csvCleanup+": Deployment "+ns+"/olm-operator", findings[0].Reason)
	assert.Nil(t, findings[0].Action)
	assert.Empty(t, ruleFindings(rep, "olm-rbac", ns), "OLM will clean up its RBAC when it is back")
	assert.Equal(t, []string{csvCleanup}, testCluster.Current(t, csv).GetFinalizers())
	for _, obj := range rbac {
		assert.NotNil(t, testCluster.Current(t, obj), "%s untouched", obj.GetKind())
	}
}

// TestF1OLMUninstalled: no olm-operator anywhere. The RBAC the finalizer stood for is deleted
// first, then the finalizer is released.
func TestF1OLMUninstalled(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	csv := f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")
	rbac := f1.Objects[:3]
	opts := sweepOptions()
	opts.RuleConfigs = map[string]rules.RuleConfig{"olm-rbac": {Args: rules.OLMRBACArgs{Delete: true}}}
	rec := &recorder{}

	rep := sweep(t, opts, rec)

	rbacFindings := byKind(ruleFindings(rep, "olm-rbac", ns))
	require.Len(t, rbacFindings, 3)
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration"} {
		f := rbacFindings[kind]
		assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", kind, f.Error)
		assert.Equal(t, "Delete", f.Action.Type)
		assert.Equal(t, "ClusterServiceVersion "+ns+"/etcdoperator.v0.9.4 is terminating and OLM is gone; its "+kind+" is left behind", f.Reason)
	}
	csvFindings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, csvFindings, 1)
	assert.Equal(t, report.OutcomeApplied, csvFindings[0].Outcome, csvFindings[0].Error)
	assert.Equal(t, []string{csvCleanup}, csvFindings[0].Action.Finalizers)

	for _, obj := range append(rbac, csv) {
		assert.Nil(t, testCluster.Current(t, obj), "%s is gone", obj.GetKind())
	}
	// The order of the writes: the deletes (the binding before the role it binds), then the patch.
	var writes []string
	rec.mu.Lock()
	for _, req := range rec.requests {
		if req.Method == "DELETE" || req.Method == "PATCH" {
			writes = append(writes, req.Method+" "+req.Path)
		}
	}
	rec.mu.Unlock()
	assert.Equal(t, []string{
		"DELETE /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" + ns + "-binding",
		"DELETE /apis/rbac.authorization.k8s.io/v1/clusterroles/" + ns + "-role",
		"DELETE /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/" + ns + "-webhook",
		"PATCH /apis/operators.coreos.com/v1alpha1/namespaces/" + ns + "/clusterserviceversions/etcdoperator.v0.9.4",
	}, writes)
}

// TestF1WithoutOptIn: without rules.olm-rbac.delete the RBAC stays, and so does the finalizer
// that stands for it.
func TestF1WithoutOptIn(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	csv := f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")
	rbac := f1.Objects[:3]

	rep := sweep(t, sweepOptions(), nil)

	for _, f := range ruleFindings(rep, "olm-rbac", ns) {
		assert.Equal(t, report.OutcomeSkipped, f.Outcome)
		assert.Equal(t, "opt-in: set rules.olm-rbac.delete to act", why(f))
	}
	csvFindings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, csvFindings, 1)
	assert.Equal(t, report.OutcomeSkipped, csvFindings[0].Outcome)
	assert.Equal(t, "dependency: ClusterRoleBinding.rbac.authorization.k8s.io "+ns+"-binding was not acted on first", why(csvFindings[0]))
	assert.Equal(t, []string{csvCleanup}, testCluster.Current(t, csv).GetFinalizers())
	for _, obj := range rbac {
		assert.NotNil(t, testCluster.Current(t, obj))
	}
}

// TestOnlyTheOrphanedFinalizerIsRemoved: an orphaned, a built-in and a live finalizer on one
// object; the live one is served by a controller from a config-file mapping.
func TestOnlyTheOrphanedFinalizerIsRemoved(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: live-operator, namespace: NAMESPACE}
spec:
  replicas: 1
  selector: {matchLabels: {app: live}}
  template:
    metadata: {labels: {app: live}}
    spec: {containers: [{name: c, image: busybox}]}
`)
	obj := terminate(t, ns, `
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata:
  name: NAMESPACE
  finalizers: [kubernetes, syslogngconfig.logging.banzaicloud.io/finalizer, live.test.operator-sweeper.io/keep]
`)[0]
	opts := sweepOptions()
	opts.Finalizers = []rules.FinalizerOwner{{Pattern: "live.test.operator-sweeper.io/*", Controllers: []rules.Controller{{Kind: "Deployment", Namespace: ns, Name: "live-operator"}},
		Consequence: rules.ConsequenceLocal}}

	rep := sweep(t, opts, nil)

	findings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, findings, 1)
	require.NotNil(t, findings[0].Action, findings[0].Reason)
	assert.Equal(t, report.OutcomeApplied, findings[0].Outcome, findings[0].Error)
	assert.Equal(t, []string{syslogNGFinalizer}, findings[0].Action.Finalizers)
	assert.Equal(t, []string{"kubernetes", "live.test.operator-sweeper.io/keep"}, testCluster.Current(t, obj).GetFinalizers())
}

func TestYoungAndUndecidableObjectsAreNotTouched(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	young := terminate(t, ns, `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: young, namespace: NAMESPACE, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
`)[0]
	// Now, not an hour ahead: the object is seconds old.
	ruleSet, err := sweepOptions().RuleSet()
	require.NoError(t, err)
	rep := newEngine(t, sweepOptions(), nil, nil, ruleSet...).Run(context.Background())
	assert.Empty(t, ruleFindings(rep, "orphaned-finalizers", ns))
	assert.Equal(t, []string{syslogNGFinalizer}, testCluster.Current(t, young).GetFinalizers())

	mystery := terminate(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: mystery, namespace: NAMESPACE, finalizers: [mystery.example.com/hold]}
`)[0]
	rep = sweep(t, sweepOptions(), nil)
	var findings []report.FindingResult
	for _, f := range ruleFindings(rep, "orphaned-finalizers", ns) {
		if f.Object.Name == "mystery" {
			findings = append(findings, f)
		}
	}
	require.Len(t, findings, 1)
	assert.Equal(t, "info", string(findings[0].Severity))
	assert.Equal(t, "owner of mystery.example.com/hold unknown; not touched", findings[0].Reason)
	assert.Nil(t, findings[0].Action)
	assert.Contains(t, findings[0].Evidence, "configmaps is not a custom resource: no CRD to ask")
	assert.Equal(t, []string{"mystery.example.com/hold"}, testCluster.Current(t, mystery).GetFinalizers())
}

func TestMaxActionsWithThreeOrphans(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: a, namespace: NAMESPACE, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: b, namespace: NAMESPACE, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: c, namespace: NAMESPACE, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
`)
	opts := sweepOptions()
	opts.MaxActions = 1

	rep := sweep(t, opts, nil)

	findings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, findings, 3)
	assert.Equal(t, map[string]report.Outcome{"a": report.OutcomeApplied, "b": report.OutcomeSkipped, "c": report.OutcomeSkipped}, outcomes(findings))
	assert.Equal(t, "limit: --max-actions=1 reached", why(findings[1]))
	assert.Equal(t, 1, rep.Summary.Applied)
	assert.Equal(t, 2, rep.Summary.Skipped)
}

// TestFinalizersChangeBetweenPlanAndApply: another controller releases its own finalizer right
// before the sweeper's patch reaches the server. The patch's precondition fails, the object is
// re-read and re-planned, and the result is right: the orphaned finalizer gone, the other
// controller's choice kept, nothing re-added.
func TestFinalizersChangeBetweenPlanAndApply(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	obj := terminate(t, ns, `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata:
  name: raced
  namespace: NAMESPACE
  finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer, b.example.com/hold, c.example.com/hold]
`)[0]
	opts := sweepOptions()
	opts.Rules = []string{"orphaned-finalizers"}
	rec := &recorder{}
	rec.raceBefore("PATCH", "/syslogngconfigs/raced$", func() {
		client, _, err := testCluster.Resource(obj)
		require.NoError(t, err)
		_, err = client.Patch(context.Background(), "raced", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/1"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
	})

	rep := newEngine(t, opts, rec, clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour)), orphanedFinalizers(t)).Run(context.Background())

	findings := ruleFindings(rep, "orphaned-finalizers", ns)
	require.Len(t, findings, 1)
	f := findings[0]
	assert.Equal(t, report.OutcomeApplied, f.Outcome, f.Error)
	assert.Equal(t, []string{syslogNGFinalizer}, f.Action.Finalizers)
	assert.Contains(t, f.Evidence, "the object changed after it was observed; it was re-read and re-planned before acting")
	assert.Equal(t, []string{"c.example.com/hold"}, testCluster.Current(t, obj).GetFinalizers())
	patches := rec.matching("PATCH", "/syslogngconfigs/raced$")
	require.Len(t, patches, 2, "the first patch lost the race")
	assert.Equal(t, http.StatusUnprocessableEntity, patches[0].Status)
}
