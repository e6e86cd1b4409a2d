package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

const threeWithFinalizerA = `
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a, test.operator-sweeper.io/b]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: NAMESPACE, finalizers: [test.operator-sweeper.io/a]}
`

func outcomes(findings []sweeper.FindingResult) map[string]sweeper.Outcome {
	out := map[string]sweeper.Outcome{}
	for _, f := range findings {
		out[f.Object.Name] = f.Outcome
	}
	return out
}

func TestMaxActionsSkipsTheRest(t *testing.T) {
	ns := newNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.MaxActions = 1
	opts.DryRun = sweeper.DryRunNone

	report := newEngine(t, opts, nil, nil, releaseA(ns)).Run(context.Background())

	require.Empty(t, report.Errors)
	findings := findingsIn(report, ns)
	require.Len(t, findings, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{findings[0].Object.Name, findings[1].Object.Name, findings[2].Object.Name}, "deterministic order")
	assert.Equal(t, map[string]sweeper.Outcome{"a": sweeper.OutcomeApplied, "b": sweeper.OutcomeSkipped, "c": sweeper.OutcomeSkipped}, outcomes(findings))
	for _, f := range findings[1:] {
		assert.Equal(t, "limit: --max-actions=1 reached", f.Error)
	}
	assert.Equal(t, sweeper.Summary{Resources: report.Summary.Resources, Scanned: report.Summary.Scanned, Findings: 3, Applied: 1, Skipped: 2}, report.Summary)

	cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, cm.Finalizers)
	for _, name := range []string{"b", "c"} {
		cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, cm.Finalizers, finalizerA, "%s was skipped", name)
	}
}

// TestSecondRunAppliesNothing: actions are idempotent; what the first run fixed, the second
// finds fixed.
func TestSecondRunAppliesNothing(t *testing.T) {
	ns := newNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.DryRun = sweeper.DryRunNone

	first := newEngine(t, opts, nil, nil, releaseA(ns)).Run(context.Background())
	require.Equal(t, 3, first.Summary.Applied)

	rec := &recorder{}
	second := newEngine(t, opts, rec, nil, releaseA(ns)).Run(context.Background())
	assert.Empty(t, findingsIn(second, ns))
	assert.Zero(t, second.Summary.Applied)
	assert.Empty(t, rec.matching("PATCH", "."), "no write at all")

	cm, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "b", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{finalizerB}, cm.Finalizers)
}

func TestProtectedNamespacesAreNeverActedOn(t *testing.T) {
	ns := newNamespace(t)
	create(t, ns, threeWithFinalizerA)
	opts := testOptions(ns)
	opts.DryRun = sweeper.DryRunNone
	opts.ProtectedNamespaces = []string{"testprotected*"}

	rec := &recorder{}
	report := newEngine(t, opts, rec, nil, releaseA(ns)).Run(context.Background())

	findings := findingsIn(report, ns)
	require.Len(t, findings, 3)
	for _, f := range findings {
		assert.Equal(t, sweeper.OutcomeSkipped, f.Outcome)
		assert.Equal(t, "protected-namespace: "+ns+" is in --protected-namespaces", f.Error)
	}
	assert.Empty(t, rec.matching("PATCH", "."))
}

// panickingRule stands for a buggy rule.
type panickingRule struct{}

func (panickingRule) Name() string { return "panicking" }

func (panickingRule) Plan(context.Context, *rules.View) []rules.Finding { panic("boom") }

func TestAPanickingRuleIsReportedAndTheOthersRun(t *testing.T) {
	ns := newNamespace(t)
	terminate(t, ns, stuckPair)

	report := newEngine(t, testOptions(ns), nil, nil, panickingRule{}, rules.StuckTerminating{}).Run(context.Background())

	require.Len(t, report.Errors, 1)
	assert.Equal(t, sweeper.ReportError{Stage: "plan", Resource: "panicking", Message: "rule panicked: boom"}, report.Errors[0])
	assert.Len(t, findingsIn(report, ns), 2)
}

func TestRequestsCarryTheUserAgent(t *testing.T) {
	ns := newNamespace(t)
	rec := &recorder{}
	opts := testOptions(ns)
	opts.Version = "v9.8.7"
	newEngine(t, opts, rec, nil).Run(context.Background())

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.requests)
	for _, req := range rec.requests {
		assert.Equal(t, "operator-sweeper/v9.8.7", req.UserAgent, "%s %s", req.Method, req.Path)
	}
}
