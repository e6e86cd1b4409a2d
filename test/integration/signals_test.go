package integration

import (
	"context"
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/push"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/pushgateway"
)

// The signal tests interrupt the binary while it applies: Kubernetes sends SIGTERM to a Job's pod
// that is deleted or runs past activeDeadlineSeconds, and SIGKILL after the grace period, or
// when the node dies. Whatever the signal, every action is one request that is done or not, and
// the next run finishes the job.

// slowApply are flags that make the binary apply about ten actions a second (a patch and an
// Event each, under one rate limit): a thousand take well over a minute, time enough to
// interrupt it mid-apply.
var slowApply = []string{"--qps=20", "--burst=20"}

// fastApply are flags for the run that finishes the job: at the default rate the remaining
// hundreds of actions would take most of a minute.
var fastApply = []string{"--qps=500", "--burst=1000"}

// TestSIGTERMWhileApplying: SIGTERM in the middle of a thousand releases. The binary stops taking
// actions, lets the one in flight finish, prints the whole report (what was done applied, the
// rest skipped as interrupted, the interruption a fatal error of the apply stage), pushes its
// metrics although its context is cancelled, and exits 1 within seconds. What the report says
// was applied is exactly what the API server shows released; a second run does the rest, and
// nothing twice.
func TestSIGTERMWhileApplying(t *testing.T) {
	const total = 1000
	ns := testCluster.NewNamespace(t)
	seedOrphans(t, ns, total, func(int) []string { return []string{syslogNGFinalizer} })
	gw := startGateway(t, pushgateway.Options{})
	clusterName := "sigterm-" + ns
	args := []string{"--config", orphansConfig(t, ns), "--dry-run=none", "--max-actions=0", "--include-namespaces=" + ns,
		"--min-terminating-age=0s", "--min-age=0s", "--cluster", clusterName, "--pushgateway-url", gw.URL, "--log-level=warn"}

	first := sweeperBinary.Start(t, asAdmin(slices.Concat(args, slowApply, []string{"-o", "json"})...)...)
	releasedAtSignal := waitReleased(t, first, ns, total, 50, 60*time.Second)
	require.NoError(t, first.Signal(syscall.SIGTERM))
	signalled := time.Now()
	code := first.Wait(t, 10*time.Second)
	t.Logf("SIGTERM with %d released; exit %d after %s", releasedAtSignal, code, time.Since(signalled).Round(time.Millisecond))
	assert.Equal(t, 1, code, "an interrupted run fails; stderr:\n%s", first.Stderr())

	rep := first.Report(t)
	onServer := finalizersOnServer(t, ns)
	findings := orphanFindings(t, rep, ns)
	require.Len(t, findings, total, "every object was observed before the signal, so every one has its finding")
	groups := byOutcome(findings)
	applied, skipped := groups[string(report.OutcomeApplied)], groups[string(report.OutcomeSkipped)+"/"+string(report.ReasonInterrupted)]
	assert.Equal(t, total, len(applied)+len(skipped), "applied or skipped as interrupted, nothing else: %v", outcomeCounts(groups))
	assert.GreaterOrEqual(t, len(applied), releasedAtSignal, "what was released before the signal is in the report")
	assert.Equal(t, len(applied), rep.Summary.Applied)
	assert.Equal(t, len(skipped), rep.Summary.Skipped, "only the interrupted are skipped")
	assert.Zero(t, rep.Summary.Failed, "an in-flight write finishes: it is not failed")
	// The report and the API server agree, object by object: the write in flight at the signal
	// finished and is reported applied; nothing reported skipped was written.
	assert.Equal(t, total-len(onServer), len(applied), "applied in the report = released on the server")
	for _, name := range applied {
		assert.NotContains(t, onServer, name, "reported applied: released")
	}
	for _, name := range skipped {
		assert.Equal(t, []string{syslogNGFinalizer}, onServer[name], "%s reported interrupted: untouched", name)
		assert.NotEmpty(t, findings[name].Error, "%s: the report says why it was skipped", name)
	}

	var interruption []report.Error
	for _, e := range rep.Errors {
		if e.Stage == report.StageApply {
			interruption = append(interruption, e)
		}
		assert.NotEqual(t, report.StagePush, e.Stage, "the push is not cancelled with the run: %s", e.Message)
	}
	if assert.Len(t, interruption, 1, "one error says the apply stage was interrupted: %v", rep.Errors) {
		assert.True(t, interruption[0].Fatal, "the interruption fails the run")
		assert.NotEmpty(t, interruption[0].Message)
		t.Logf("errors[apply]: %s", interruption[0].Message)
	}

	// The Pushgateway has the interrupted run: when it ran, how it ended, what it did.
	families := scrape(t, gw)
	group := map[string]string{"job": push.Job, "cluster": clusterName}
	lastRun := pushgateway.Series(families, "operator_sweeper_last_run_timestamp_seconds", group)
	if assert.Len(t, lastRun, 1, "the interrupted run pushed its metrics") {
		for _, v := range lastRun {
			assert.InDelta(t, float64(rep.Metadata.EndTime.Unix()), v, 1)
		}
	}
	assert.Empty(t, pushgateway.Series(families, "operator_sweeper_last_success_timestamp_seconds", group), "an interrupted run is no success")
	releases := func(outcome, reason string) string {
		return labelString(map[string]string{"job": push.Job, "cluster": clusterName, "instance": "",
			"rule": "orphaned-finalizers", "action": "RemoveFinalizers", "outcome": outcome, "reason": reason})
	}
	assert.Equal(t, nonZero(map[string]float64{
		releases("applied", ""):                               float64(len(applied)),
		releases("skipped", string(report.ReasonInterrupted)): float64(len(skipped)),
	}), nonZero(pushgateway.Series(families, "operator_sweeper_actions", map[string]string{"cluster": clusterName, "rule": "orphaned-finalizers"})),
		"the actions family counts what the report says")

	// The next run does the rest: exactly what the first did not, none of what it did.
	second, stderr, code := runReport(t, slices.Concat(args, fastApply)...)
	require.Equal(t, 0, code, stderr)
	again := orphanFindings(t, second, ns)
	for _, name := range applied {
		assert.NotContains(t, again, name, "released by the first run: not acted on again")
	}
	secondGroups := byOutcome(again)
	assert.Len(t, secondGroups[string(report.OutcomeApplied)], total-len(applied), "the remainder is applied: %v", outcomeCounts(secondGroups))
	assert.Equal(t, skipped, secondGroups[string(report.OutcomeApplied)], "the interrupted ones, and only they")
	assert.Equal(t, total-len(applied), second.Summary.Applied)
	assert.Zero(t, countOnServer(t, ns), "all released")
	assert.Len(t, pushgateway.Series(scrape(t, gw), "operator_sweeper_last_success_timestamp_seconds", group), 1, "the second run succeeded")
}

// nonZero drops the series that are 0: a family may hold explicit zeros for what did not happen.
func nonZero(series map[string]float64) map[string]float64 {
	maps.DeleteFunc(series, func(_ string, v float64) bool { return v == 0 })
	return series
}

// TestKill9WhileApplying: SIGKILL leaves no report and no cleanup, only what the API server has:
// every object is released or untouched, never half released, because each release is one
// patch of all the finalizers it removes. A second run releases the rest.
func TestKill9WhileApplying(t *testing.T) {
	const total = 300
	ns := testCluster.NewNamespace(t)
	// Two of logging-operator's finalizers on each: a release that took them off one by one
	// could be killed between the two.
	original := []string{syslogNGFinalizer, fluentdFinalizer}
	seedOrphans(t, ns, total, func(int) []string { return original })
	args := []string{"--config", orphansConfig(t, ns), "--dry-run=none", "--max-actions=0", "--include-namespaces=" + ns,
		"--min-terminating-age=0s", "--min-age=0s"}

	first := sweeperBinary.Start(t, asAdmin(slices.Concat(args, slowApply, []string{"-o", "json"})...)...)
	releasedAtKill := waitReleased(t, first, ns, total, 30, 60*time.Second)
	require.NoError(t, first.Signal(syscall.SIGKILL))
	assert.Equal(t, -1, first.Wait(t, 10*time.Second), "killed")
	assert.Empty(t, first.Stdout(), "killed before it could print a report")

	onServer := finalizersOnServer(t, ns)
	remaining := len(onServer)
	t.Logf("SIGKILL with %d released; %d released when it died, %d remaining", releasedAtKill, total-remaining, remaining)
	require.Positive(t, remaining, "killed before it was done")
	for name, finalizers := range onServer {
		assert.Equal(t, original, finalizers, "%s: released or untouched, never half released", name)
	}

	rep, stderr, code := runReport(t, slices.Concat(args, fastApply)...)
	require.Equal(t, 0, code, stderr)
	findings := orphanFindings(t, rep, ns)
	groups := byOutcome(findings)
	assert.Len(t, findings, remaining, "the released ones are gone: no finding")
	assert.Len(t, groups[string(report.OutcomeApplied)], remaining, "the rest is applied: %v", outcomeCounts(groups))
	for name := range findings {
		assert.Contains(t, onServer, name)
	}
	assert.Equal(t, remaining, rep.Summary.Applied)
	assert.Zero(t, countOnServer(t, ns), "all %d released", total)
}

// TestKill9KeepsEveryPreImage: SIGKILL in the middle of a repair that writes in parallel, in
// batches. Every write that reached the API server has its pre-image kept, signed, in the run's
// Secrets (a batch's Secret is created before any of its writes is sent), and restore --run of
// that run, which left no report, puts each released object back as it was; what the run kept
// but never wrote is left as it is.
func TestKill9KeepsEveryPreImage(t *testing.T) {
	const total = 400
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	original := []string{syslogNGFinalizer, fluentdFinalizer}
	seedOrphans(t, ns, total, func(int) []string { return original })
	args := []string{"--config", orphansConfig(t, ns), "--dry-run=none", "--max-actions=0", "--include-namespaces=" + ns,
		"--min-terminating-age=0s", "--min-age=0s", "--write-concurrency=8"}

	killed := sweeperBinary.Start(t, asAdmin(slices.Concat(args, slowApply, []string{"-o", "json"})...)...)
	waitReleased(t, killed, ns, total, 60, 60*time.Second)
	require.NoError(t, killed.Signal(syscall.SIGKILL))
	require.Equal(t, -1, killed.Wait(t, 10*time.Second), "killed")

	untouched := finalizersOnServer(t, ns)
	require.Positive(t, len(untouched), "killed before it was done")
	var released []string
	for i := range total {
		if _, ok := untouched[orphanName(i)]; !ok {
			released = append(released, orphanName(i))
		}
	}

	// The run printed nothing: its ID is on the Secrets it kept.
	secrets, err := testCluster.Kube.CoreV1().Secrets(cluster.SweeperNamespace).List(ctx, metav1.ListOptions{LabelSelector: backup.PreImageLabel + "=true"})
	require.NoError(t, err)
	kept := map[string]report.BackupRecord{}
	var runID string
	for _, id := range slices.Sorted(maps.Keys(runLabels(secrets.Items))) {
		records, err := backup.LoadRun(ctx, backupClient(t), cluster.SweeperNamespace, id)
		require.NoError(t, err)
		for _, rec := range records {
			if rec.Finding.Object.Namespace == ns {
				require.True(t, runID == "" || runID == id, "one run wrote in %s: %s and %s", ns, runID, id)
				runID = id
				kept[rec.Finding.Object.Name] = rec
			}
		}
	}
	require.NotEmpty(t, runID, "the killed run kept pre-images")
	t.Logf("SIGKILL with %d released, %d pre-images kept by run %s", len(released), len(kept), runID)
	for _, name := range released {
		rec, ok := kept[name]
		if assert.True(t, ok, "%s was released: its pre-image is kept", name) {
			assert.NotEmpty(t, rec.Finding.Signature, "%s: signed", name)
			assert.NotEmpty(t, rec.Finding.Before.Kept, name)
		}
	}

	restored := restoreFrom(t, "--run", runID)
	outcomes := map[string]report.FindingResult{}
	for _, f := range restored.Findings {
		outcomes[f.Object.Name] = f
	}
	assert.Equal(t, len(released), restored.Summary.Applied, "each released object is re-created: %v", outcomeCounts(byOutcome(outcomes)))
	after := finalizersOnServer(t, ns)
	assert.Len(t, after, total, "every object is there again")
	for name, finalizers := range after {
		assert.Equal(t, original, finalizers, "%s: as it was", name)
	}
}

// runLabels returns the runs Secrets are of.
func runLabels(secrets []corev1.Secret) map[string]bool {
	runs := map[string]bool{}
	for _, s := range secrets {
		runs[s.Labels[backup.RunLabel]] = true
	}
	return runs
}
