package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/pushgateway"
)

// notifySecret is the part of a webhook's URL that is its credential, as in Slack's: it must show
// nowhere, neither in the logs nor in the report.
const notifySecret = "/services/T0000/B0000/XXXXsecretXXXX"

// notifyReceiver is a webhook on a local HTTP server: it records what is posted to it and answers
// with status.
type notifyReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []notifyRequest
}

type notifyRequest struct {
	method, path, contentType string
	body                      []byte
}

func startNotifyReceiver(t *testing.T, status int) *notifyReceiver {
	t.Helper()
	rcv := &notifyReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		assert.NoError(t, err)
		rcv.mu.Lock()
		rcv.requests = append(rcv.requests, notifyRequest{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), body: body})
		rcv.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}))
	t.Cleanup(rcv.Close)
	return rcv
}

func (r *notifyReceiver) received() []notifyRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notifyRequest{}, r.requests...)
}

// TestNotify: a run that applies actions posts one notification of them; the Pushgateway counts
// the notification's errors from 0.
func TestNotify(t *testing.T) {
	rcv := startNotifyReceiver(t, http.StatusOK)
	gw := startGateway(t, pushgateway.Options{})
	ns := testCluster.NewNamespace(t)
	seeded(t)(testCluster.SeedF4(context.Background(), ns))
	terminate(t, ns, loggingConfigDebris)
	cluster := "notify-" + ns

	rep, stderr, code := runReport(t, "--config", orphansConfig(t, ns), "--include-namespaces", ns, "--rules=orphaned-finalizers", "--dry-run=none", "--min-terminating-age=0s",
		"--min-age=0s", "--cluster", cluster, "--pushgateway-url", gw.URL, "--notify-url", rcv.URL+notifySecret)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, rep.Errors)
	require.GreaterOrEqual(t, rep.Summary.Applied, 3, "the Logging, SyslogNGConfig and FluentdConfig are released")

	got := rcv.received()
	require.Len(t, got, 1, "one notification")
	assert.Equal(t, http.MethodPost, got[0].method)
	assert.Equal(t, notifySecret, got[0].path)
	assert.Equal(t, "application/json", got[0].contentType)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got[0].body, &raw))
	var n notify.Notification
	require.NoError(t, json.Unmarshal(got[0].body, &n))
	assert.Equal(t, notify.NotificationKind, n.Kind)
	assert.Equal(t, cluster, n.Metadata.Cluster)
	assert.Equal(t, report.DryRunNone, n.Metadata.Mode)
	assert.Equal(t, rep.Summary, n.Summary)
	assert.Empty(t, n.Errors)
	var actions []report.FindingResult
	for _, f := range rep.Findings {
		if f.Action != nil {
			require.NotNil(t, f.Before, "the report keeps the pre-image of %s", f.Object)
			actions = append(actions, f)
		}
	}
	require.Len(t, n.Findings, len(actions), "the findings with an action")
	var findings []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw["findings"], &findings))
	for i, f := range n.Findings {
		assert.Equal(t, actions[i].Object, f.Object)
		assert.Equal(t, actions[i].Outcome, f.Outcome)
		assert.NotContains(t, findings[i], "before", "no pre-image in a notification")
	}
	released := 0
	for _, f := range n.Findings {
		if f.Rule == "orphaned-finalizers" && f.Outcome == report.OutcomeApplied && (f.Object.Namespace == ns || f.Object.Name == ns) {
			released++
		}
	}
	assert.Equal(t, 3, released, "Logging, SyslogNGConfig and FluentdConfig")

	group := map[string]string{"cluster": cluster, "stage": "notify"}
	assert.Equal(t, 0.0, single(t, scrape(t, gw), "operator_sweeper_errors", group), "counted from 0 when notifying")

	// Nothing left to do: with the default --notify-on=actions, no notification.
	_, stderr, code = runReport(t, "--config", orphansConfig(t, ns), "--include-namespaces", ns, "--rules=orphaned-finalizers", "--dry-run=none", "--min-terminating-age=0s",
		"--min-age=0s", "--cluster", cluster, "--notify-url", rcv.URL+notifySecret)
	require.Equal(t, 0, code, stderr)
	assert.Len(t, rcv.received(), 1, "a run without actions is not news")
}

// TestNotifySlackFromURLFile: the URL from a file (a mounted Secret), a Slack message.
func TestNotifySlackFromURLFile(t *testing.T) {
	rcv := startNotifyReceiver(t, http.StatusOK)
	ns := testCluster.NewNamespace(t)
	seeded(t)(testCluster.SeedF4(context.Background(), ns))
	terminate(t, ns, loggingConfigDebris)
	urlFile := filepath.Join(t.TempDir(), "url")
	require.NoError(t, os.WriteFile(urlFile, []byte(rcv.URL+notifySecret+"\n"), 0o600))

	stdout, stderr, code := runBinary(t, "--config", orphansConfig(t, ns), "--include-namespaces", ns, "--rules=orphaned-finalizers", "--min-terminating-age=0s", "--cluster", "slack-"+ns,
		"--notify-url-file", urlFile, "--notify-format=slack", "--notify-on=findings", "-o", "json", "--log-level=debug")
	require.Equal(t, 0, code, stderr)
	for _, out := range []string{stdout, stderr} {
		assert.NotContains(t, out, notifySecret)
	}
	assert.Contains(t, stderr, `msg="notification sent" cluster=slack-`+ns+` url=`+rcv.URL+"/… format=slack")

	got := rcv.received()
	require.Len(t, got, 1)
	assert.Equal(t, notifySecret, got[0].path)
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(got[0].body, &msg))
	assert.Regexp(t, `^operator-sweeper on \*slack-`+ns+`\*, mode client: \d+ findings, 0 applied, 0 failed, 0 skipped, \d+ planned\.$`, msg.Text)
	require.GreaterOrEqual(t, len(msg.Blocks), 2)
	assert.Equal(t, msg.Text, msg.Blocks[0].Text.Text)
	assert.Contains(t, msg.Blocks[1].Text.Text, "• *planned* `orphaned-finalizers` SyslogNGConfig "+ns+"/syslog-ng: ")
}

// TestNotifyFailing: a webhook that refuses is an error of stage notify in the report and the
// metrics, and the run succeeds all the same, but with --require-notify.
func TestNotifyFailing(t *testing.T) {
	rcv := startNotifyReceiver(t, http.StatusInternalServerError)
	gw := startGateway(t, pushgateway.Options{})
	ns := testCluster.NewNamespace(t)
	cluster := "notify-failing-" + ns
	args := []string{"--include-namespaces", ns, "--rules=stuck-terminating", "--cluster", cluster, "--pushgateway-url", gw.URL,
		"--notify-url", rcv.URL + notifySecret, "--notify-on=always"}

	rep, stderr, code := runReport(t, args...)
	assert.Equal(t, 0, code, "a failed notification alone does not fail the run: %s", stderr)
	assert.Equal(t, []report.Error{{Stage: "notify", Message: "send the notification to " + rcv.URL + "/…: 500 Internal Server Error: Internal Server Error"}},
		notifyErrors(rep))
	assert.Len(t, rcv.received(), 2, "a 5xx is tried once more")
	assert.Contains(t, stderr, "notification not sent")
	assert.NotContains(t, stderr, notifySecret)
	assert.Equal(t, 1.0, single(t, scrape(t, gw), "operator_sweeper_errors", map[string]string{"cluster": cluster, "stage": "notify"}),
		"notified before the push")

	stdout, stderr, code := runBinary(t, append(args, "--require-notify", "-o", "json")...)
	assert.Equal(t, 1, code)
	rep = &report.Report{}
	require.NoError(t, json.Unmarshal([]byte(stdout), rep), "the report is printed in full")
	errs := notifyErrors(rep)
	require.Len(t, errs, 1)
	assert.True(t, errs[0].Fatal, "--require-notify")
	assert.Contains(t, stderr, "error: sweep incomplete: notify: send the notification to "+rcv.URL+"/…: 500 Internal Server Error")
	for _, out := range []string{stdout, stderr} {
		assert.NotContains(t, out, notifySecret)
	}
}

// notifyErrors are the report's errors of stage notify.
func notifyErrors(rep *report.Report) []report.Error {
	var errs []report.Error
	for _, e := range rep.Errors {
		if e.Stage == report.StageNotify {
			errs = append(errs, e)
		}
	}
	return errs
}
