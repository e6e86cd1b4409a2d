package integration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/pushgateway"
)

func startGateway(t *testing.T, opts pushgateway.Options) *pushgateway.Gateway {
	t.Helper()
	gw, err := pushgateway.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, gw.Stop()) })
	return gw
}

func scrape(t *testing.T, gw *pushgateway.Gateway) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := gw.Metrics(context.Background())
	require.NoError(t, err)
	return families
}

// single returns the value of the one series of a family in a group.
func single(t *testing.T, families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	series := pushgateway.Series(families, name, labels)
	require.Len(t, series, 1, "%s%v", name, labels)
	for _, v := range series {
		return v
	}
	return 0
}

// wantSeries is what the findings and actions families must hold for a report: a count per
// label set, and explicit zeros for the rules' unused severities.
func wantSeries(t *testing.T, rep *report.Report, group map[string]string) (findings, actions map[string]float64) {
	t.Helper()
	key := func(extra ...string) string {
		labels := map[string]string{}
		for k, v := range group {
			labels[k] = v
		}
		for i := 0; i < len(extra); i += 2 {
			labels[extra[i]] = extra[i+1]
		}
		return labelString(labels)
	}
	findings, actions = map[string]float64{}, map[string]float64{}
	ruleSet, err := options.Default().RuleSet() // every rule runs by default
	require.NoError(t, err)
	done := map[report.DryRunMode]report.Outcome{report.DryRunClient: report.OutcomePlanned, report.DryRunServer: report.OutcomeDryRun,
		report.DryRunNone: report.OutcomeApplied}[rep.Metadata.Mode]
	for _, rule := range ruleSet {
		for _, severity := range []string{"info", "warning"} {
			findings[key("rule", rule.Name(), "severity", severity)] = 0
		}
		// Each action a rule may take is there, 0 if none was.
		if acting, ok := rule.(rules.Authorized); ok {
			for _, action := range rules.ActionTypes(acting) {
				for _, outcome := range []report.Outcome{done, report.OutcomeFailed, report.OutcomeSkipped} {
					actions[key("rule", rule.Name(), "action", action, "outcome", string(outcome), "reason", "")] = 0
				}
			}
		}
	}
	for _, f := range rep.Findings {
		findings[key("rule", f.Rule, "severity", string(f.Severity))]++
		if f.Action != nil {
			actions[key("rule", f.Rule, "action", f.Action.Type, "outcome", string(f.Outcome), "reason", string(cmp.Or(f.SkipReason, f.FailReason)))]++
		}
	}
	return findings, actions
}

func labelString(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(pairs)
	return "{" + strings.Join(pairs, ", ") + "}"
}

// TestMetricsArePushed: what the gateway shows is what the report says; a second run with fewer
// findings leaves nothing of the first; a failed run keeps the last success time.
func TestMetricsArePushed(t *testing.T) {
	gw := startGateway(t, pushgateway.Options{})
	ns := testCluster.NewNamespace(t)
	debris := append(seeded(t)(testCluster.SeedF4(context.Background(), ns)).Objects, terminate(t, ns, loggingConfigDebris)...)
	cluster := "metrics-" + ns
	group := map[string]string{"job": "operator-sweeper", "cluster": cluster, "region": "eu", "instance": ""}
	args := []string{"--pushgateway-url", gw.URL, "--cluster", cluster, "--push-grouping", "region=eu", "--min-terminating-age=0s",
		"--config", loggingConfigsFile(t, "")}

	first, stderr, code := runReport(t, args...)
	require.Equal(t, 0, code, stderr)
	families := scrape(t, gw)
	wantFindings, wantActions := wantSeries(t, first, group)
	assert.Equal(t, wantFindings, pushgateway.Series(families, "operator_sweeper_findings", group))
	assert.Equal(t, wantActions, pushgateway.Series(families, "operator_sweeper_actions", group))
	assert.GreaterOrEqual(t, wantActions[labelString(map[string]string{"job": "operator-sweeper", "cluster": cluster, "region": "eu", "instance": "",
		"rule": "orphaned-finalizers", "action": "RemoveFinalizers", "outcome": "planned", "reason": ""})], 3.0, "the Logging's, SyslogNGConfig's and FluentdConfig's releases are planned")
	assert.Equal(t, float64(first.Summary.Scanned), single(t, families, "operator_sweeper_objects_scanned", group))
	assert.Equal(t, float64(first.Summary.Resources), single(t, families, "operator_sweeper_resources_scanned", group))
	assert.Equal(t, 1.0, single(t, families, "operator_sweeper_info", map[string]string{"cluster": cluster, "version": "dev", "mode": "client"}))
	assert.Equal(t, 0.0, single(t, families, "operator_sweeper_errors", map[string]string{"cluster": cluster, "stage": "observe"}))
	lastSuccess := single(t, families, "operator_sweeper_last_success_timestamp_seconds", group)
	assert.InDelta(t, float64(first.Metadata.EndTime.Unix()), lastSuccess, 1)
	assert.Equal(t, lastSuccess, single(t, families, "operator_sweeper_last_run_timestamp_seconds", group))
	assert.Greater(t, single(t, families, "operator_sweeper_run_duration_seconds", group), 0.0)

	// Fewer findings: F4's debris released. Nothing of the first run may linger.
	remove(t, debris)
	second, stderr, code := runReport(t, args...)
	require.Equal(t, 0, code, stderr)
	families = scrape(t, gw)
	wantFindings, wantActions = wantSeries(t, second, group)
	assert.Less(t, len(second.Findings), len(first.Findings))
	assert.Equal(t, wantFindings, pushgateway.Series(families, "operator_sweeper_findings", group), "no stale findings")
	assert.Equal(t, wantActions, pushgateway.Series(families, "operator_sweeper_actions", group), "no stale actions")
	lastSuccess = single(t, families, "operator_sweeper_last_success_timestamp_seconds", group)

	// A failed run: a webhook that nothing serves refuses the finalizer patch. The last success
	// time survives; every family the failed run pushes is replaced whole.
	time.Sleep(1100 * time.Millisecond) // timestamps are in seconds
	failing := testCluster.NewNamespace(t, "failing")
	terminate(t, failing, loggingConfigDebris)
	create(t, failing, brokenWebhook) // after the debris: it is removed first at cleanup
	third, stderr, code := runReport(t, append(args, "--dry-run=none")...)
	require.Equal(t, 1, code, "a failed action fails the run: %s", stderr)
	require.Positive(t, third.Summary.Failed)
	families = scrape(t, gw)
	assert.Equal(t, lastSuccess, single(t, families, "operator_sweeper_last_success_timestamp_seconds", group), "the last success survives")
	assert.Greater(t, single(t, families, "operator_sweeper_last_run_timestamp_seconds", group), lastSuccess)
	wantFindings, wantActions = wantSeries(t, third, group)
	assert.Equal(t, wantFindings, pushgateway.Series(families, "operator_sweeper_findings", group))
	assert.Equal(t, wantActions, pushgateway.Series(families, "operator_sweeper_actions", group))
	assert.NotEmpty(t, pushgateway.Series(families, "operator_sweeper_actions", map[string]string{"cluster": cluster, "outcome": "failed", "reason": "api-error"}))
	assert.Equal(t, 1.0, single(t, families, "operator_sweeper_info", map[string]string{"cluster": cluster, "mode": "none"}))
	assert.Empty(t, pushgateway.Series(families, "operator_sweeper_info", map[string]string{"cluster": cluster, "mode": "client"}), "no stale label set")
}

// brokenWebhook refuses every update of logging-operator's objects in NAMESPACE: nothing serves it.
const brokenWebhook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: NAMESPACE-broken}
webhooks:
- name: broken.test.operator-sweeper.io
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 2
  clientConfig: {url: "https://127.0.0.1:1/validate"}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: NAMESPACE}}
  rules: [{apiGroups: [logging.banzaicloud.io], apiVersions: ["*"], resources: ["*"], operations: [UPDATE]}]
`

func TestPushgatewayDown(t *testing.T) {
	gw := startGateway(t, pushgateway.Options{})
	url := gw.URL
	require.NoError(t, gw.Stop()) // down, from the start
	args := []string{"--pushgateway-url", url, "--include-namespaces", testCluster.NewNamespace(t), "--rules=stuck-terminating"}

	rep, stderr, code := runReport(t, args...)
	assert.Equal(t, 0, code, "a failed push alone does not fail the run: %s", stderr)
	require.NotEmpty(t, rep.Errors)
	last := rep.Errors[len(rep.Errors)-1]
	assert.Equal(t, "push", last.Stage)
	assert.Contains(t, last.Message, "push metrics to "+url)
	assert.Contains(t, last.Message, "connection refused")

	rep, stderr, code = runReport(t, append(args, "--require-push")...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "push", rep.Errors[len(rep.Errors)-1].Stage, "the report is printed in full")
	assert.Contains(t, stderr, "error: sweep incomplete: push metrics to "+url)
	assert.Contains(t, stderr, "(--require-push)")
}

func TestPushgatewayBasicAuth(t *testing.T) {
	gw := startGateway(t, pushgateway.Options{Username: "sweeper", Password: "s3cret"})
	dir := t.TempDir()
	right, wrong := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
	require.NoError(t, os.WriteFile(right, []byte("s3cret\n"), 0o600))
	require.NoError(t, os.WriteFile(wrong, []byte("guess\n"), 0o600))
	ns := testCluster.NewNamespace(t)
	args := []string{"--pushgateway-url", gw.URL, "--pushgateway-username", "sweeper", "--include-namespaces", ns, "--rules=stuck-terminating", "--cluster", "auth-" + ns}

	rep, stderr, code := runReport(t, append(args, "--pushgateway-password-file", right)...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, rep.Errors)
	families := scrape(t, gw)
	assert.Equal(t, float64(rep.Summary.Scanned), single(t, families, "operator_sweeper_objects_scanned", map[string]string{"cluster": "auth-" + ns}))

	rep, stderr, code = runReport(t, append(args, "--pushgateway-password-file", wrong, "--require-push")...)
	assert.Equal(t, 1, code)
	require.NotEmpty(t, rep.Errors)
	assert.Contains(t, rep.Errors[len(rep.Errors)-1].Message, "unexpected status code 401")
	assert.Contains(t, stderr, "unexpected status code 401")
}
