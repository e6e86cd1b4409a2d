package push

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistry(t *testing.T) {
	r := reporttest.Sample()
	r.Summary.Incomplete = true
	r.Summary.HoldBack(50) // its one action held back by --max-actions: one more run
	enabled := []Rule{
		{Name: "stuck-terminating"},
		{Name: "orphans", Actions: []string{"RemoveFinalizers"}},
		{Name: "quiet", Actions: []string{"Delete"}},
		{Name: "broken", Actions: []string{"Delete"}}, // failed in plan: nothing of it is pushed
	}
	reg := Registry(r, enabled, report.SweepStages(), true)

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP operator_sweeper_actions Actions of the last run, by rule, action type, outcome (planned, dry-run, applied, failed, skipped) and, for skipped and failed ones, reason.
# TYPE operator_sweeper_actions gauge
operator_sweeper_actions{action="Delete",outcome="failed",reason="",rule="quiet"} 0
operator_sweeper_actions{action="Delete",outcome="planned",reason="",rule="quiet"} 0
operator_sweeper_actions{action="Delete",outcome="skipped",reason="",rule="quiet"} 0
operator_sweeper_actions{action="Delete",outcome="skipped",reason="limit",rule="orphans"} 1
operator_sweeper_actions{action="RemoveFinalizers",outcome="applied",reason="",rule="orphans"} 1
operator_sweeper_actions{action="RemoveFinalizers",outcome="dry-run",reason="",rule="orphans"} 1
operator_sweeper_actions{action="RemoveFinalizers",outcome="failed",reason="",rule="orphans"} 0
operator_sweeper_actions{action="RemoveFinalizers",outcome="planned",reason="",rule="orphans"} 0
operator_sweeper_actions{action="RemoveFinalizers",outcome="skipped",reason="",rule="orphans"} 0
operator_sweeper_actions{action="SetOwnerReferences",outcome="failed",reason="api-error",rule="orphans"} 1
# HELP operator_sweeper_actions_held_back Actions --max-actions held back in the last run: the next runs take them.
# TYPE operator_sweeper_actions_held_back gauge
operator_sweeper_actions_held_back 1
# HELP operator_sweeper_errors Problems of the last run, by stage; a resource that could not be listed counts under observe.
# TYPE operator_sweeper_errors gauge
operator_sweeper_errors{stage="apply"} 0
operator_sweeper_errors{stage="inventory"} 0
operator_sweeper_errors{stage="observe"} 1
operator_sweeper_errors{stage="plan"} 1
# HELP operator_sweeper_findings Findings of the last run, by rule and severity.
# TYPE operator_sweeper_findings gauge
operator_sweeper_findings{rule="orphans",severity="info"} 0
operator_sweeper_findings{rule="orphans",severity="warning"} 4
operator_sweeper_findings{rule="quiet",severity="info"} 0
operator_sweeper_findings{rule="quiet",severity="warning"} 0
operator_sweeper_findings{rule="stuck-terminating",severity="info"} 1
operator_sweeper_findings{rule="stuck-terminating",severity="warning"} 0
# HELP operator_sweeper_incomplete 1 when the last run could not observe everything (a list or an API group's discovery failed after retries; see the report's errors), else 0.
# TYPE operator_sweeper_incomplete gauge
operator_sweeper_incomplete 1
# HELP operator_sweeper_info The last run's version and dry-run mode; always 1.
# TYPE operator_sweeper_info gauge
operator_sweeper_info{mode="client",version="v1.2.3"} 1
# HELP operator_sweeper_last_run_timestamp_seconds When the last run ended, in Unix seconds.
# TYPE operator_sweeper_last_run_timestamp_seconds gauge
operator_sweeper_last_run_timestamp_seconds 1.795435201e+09
# HELP operator_sweeper_last_success_timestamp_seconds When the last run that had no failed stage or action ended, in Unix seconds.
# TYPE operator_sweeper_last_success_timestamp_seconds gauge
operator_sweeper_last_success_timestamp_seconds 1.795435201e+09
# HELP operator_sweeper_objects_scanned Objects listed by the last run.
# TYPE operator_sweeper_objects_scanned gauge
operator_sweeper_objects_scanned 42
# HELP operator_sweeper_resources_scanned Resource types listed by the last run.
# TYPE operator_sweeper_resources_scanned gauge
operator_sweeper_resources_scanned 3
# HELP operator_sweeper_run_duration_seconds How long the last run took.
# TYPE operator_sweeper_run_duration_seconds gauge
operator_sweeper_run_duration_seconds 1.5
# HELP operator_sweeper_runs_to_finish Runs like the last one that the actions --max-actions held back need, at that cap; 0 when none was held back.
# TYPE operator_sweeper_runs_to_finish gauge
operator_sweeper_runs_to_finish 1
`))
	require.NoError(t, err)

	failed := Registry(r, nil, report.SweepStages(), false)
	assert.NotContains(t, familyNames(t, failed), "operator_sweeper_last_success_timestamp_seconds", "a failed run leaves the last success out")
}

// TestRegistryLeavesOutWhatAFailedStageDidNotMeasure: a false drop to 0 would look like debris
// cleared, and would fire or resolve alerts on nothing.
func TestRegistryLeavesOutWhatAFailedStageDidNotMeasure(t *testing.T) {
	always := []string{"operator_sweeper_errors", "operator_sweeper_incomplete", "operator_sweeper_info",
		"operator_sweeper_last_run_timestamp_seconds", "operator_sweeper_run_duration_seconds"}
	tests := []struct {
		stage string
		want  []string
	}{
		{report.StageInventory, always},
		{report.StageObserve, append(slices.Clone(always), "operator_sweeper_resources_scanned")},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			r := reporttest.New(time.Now())
			r.Errors = append(r.Errors, report.Error{Stage: tt.stage, Message: "unreachable", Fatal: true})
			reg := Registry(r, []Rule{{Name: "orphans", Actions: []string{"RemoveFinalizers"}}}, report.SweepStages(), false)
			assert.ElementsMatch(t, tt.want, familyNames(t, reg))
		})
	}
}

// TestRegistryCountsNotifyErrorsWhenNotifying: a run that notifies counts the notification's
// errors from 0; one that does not has no such series.
func TestRegistryCountsNotifyErrorsWhenNotifying(t *testing.T) {
	errorSeries := func(reg *prometheus.Registry) map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		series := map[string]float64{}
		for _, mf := range families {
			if mf.GetName() != "operator_sweeper_errors" {
				continue
			}
			for _, m := range mf.GetMetric() {
				series[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return series
	}
	rule := Rule{Name: "orphans", Actions: []string{"RemoveFinalizers"}}
	r := reporttest.New(time.Now())

	enabled := []Rule{rule}
	assert.Equal(t, map[string]float64{"inventory": 0, "observe": 0, "plan": 0, "apply": 0}, errorSeries(Registry(r, enabled, report.SweepStages(), true)))
	notifying := append(report.SweepStages(), report.StageNotify)
	assert.Equal(t, map[string]float64{"inventory": 0, "observe": 0, "plan": 0, "apply": 0, "notify": 0}, errorSeries(Registry(r, enabled, notifying, true)))
	r.Errors = append(r.Errors, report.Error{Stage: report.StageNotify, Message: "refused"})
	reg := Registry(r, enabled, notifying, true)
	assert.Equal(t, 1.0, errorSeries(reg)["notify"])
	assert.Equal(t, 1, testutil.CollectAndCount(reg, "operator_sweeper_info"))
	for _, name := range []string{"operator_sweeper_findings", "operator_sweeper_actions"} {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range families {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "rule" {
						assert.Equal(t, "orphans", l.GetValue(), "%s: a stage is no rule", name)
					}
				}
			}
		}
	}
}

func familyNames(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range families {
		names = append(names, mf.GetName())
	}
	return names
}

// TestPushOverTLSWithBearerToken checks the client side of a push: the CA file verifies the
// gateway's certificate, the token file becomes the Authorization header, and PUT is used.
func TestPushOverTLSWithBearerToken(t *testing.T) {
	var method, auth string
	gw := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, auth = r.Method, r.Header.Get("Authorization")
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()
	dir := t.TempDir()
	caFile, tokenFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gw.Certificate().Raw}), 0o600))
	require.NoError(t, os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600))

	cfg := Config{URL: gw.URL, Timeout: 10 * time.Second, BearerTokenFile: tokenFile, CAFile: caFile}
	succeeded := reporttest.New(time.Now())
	succeeded.Metadata.Cluster = "prod"
	require.False(t, succeeded.Failed())
	require.NoError(t, Push(context.Background(), cfg, succeeded, nil, report.SweepStages()))
	assert.Equal(t, http.MethodPut, method, "a run without failures replaces its group")
	assert.Equal(t, "Bearer t0ken", auth)

	cfg.CAFile = ""
	err := Push(context.Background(), cfg, succeeded, nil, report.SweepStages())
	require.Error(t, err, "without the CA, the certificate is not trusted")
	assert.Contains(t, err.Error(), "certificate")

	cfg.InsecureSkipVerify = true
	failed := reporttest.Sample()
	require.True(t, failed.Failed())
	require.NoError(t, Push(context.Background(), cfg, failed, nil, report.SweepStages()))
	assert.Equal(t, http.MethodPost, method, "a failed run replaces only what it pushes")
}
