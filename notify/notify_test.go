package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// webhookSecret is the part of a webhook's URL that is its credential: it must never show.
const webhookSecret = "/services/T0000/B0000/XXXXsecretXXXX"

// webhook is a local HTTP server that records what is posted to it and answers with the next of
// its statuses (the last one, once they run out).
type webhook struct {
	*httptest.Server
	mu       sync.Mutex
	requests []webhookRequest
	statuses []int
}

type webhookRequest struct {
	method, path, contentType, userAgent string
	body                                 []byte
}

func newWebhook(t *testing.T, statuses ...int) *webhook {
	t.Helper()
	w := &webhook{statuses: append([]int{}, statuses...)}
	if len(w.statuses) == 0 {
		w.statuses = []int{http.StatusOK}
	}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.requests = append(w.requests, webhookRequest{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"),
			userAgent: r.Header.Get("User-Agent"), body: body})
		status := w.statuses[0]
		if len(w.statuses) > 1 {
			w.statuses = w.statuses[1:]
		}
		w.mu.Unlock()
		rw.WriteHeader(status)
		if status >= 300 {
			fmt.Fprintln(rw, "no_service\n(the webhook is gone)")
		} else {
			fmt.Fprint(rw, "ok")
		}
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhook) received() []webhookRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]webhookRequest{}, w.requests...)
}

// secretURL is the webhook's URL with a secret path, as Slack's are.
func (w *webhook) secretURL() string { return w.URL + webhookSecret }

func notifyOptions(url string) Config {
	return Config{URL: url, Format: JSON, On: OnAlways, Timeout: 10 * time.Second}
}

func TestJSON(t *testing.T) {
	hook := newWebhook(t)
	r := reporttest.Sample()
	// What restore reads; never notified.
	r.Findings[1].Before, r.Findings[1].Signature = &report.PreImage{Resource: "loggings", Kept: "secret:operator-sweeper/x"}, "4c69"
	opts := notifyOptions(hook.secretURL())

	to, err := Send(context.Background(), opts, r)
	require.NoError(t, err)
	assert.Equal(t, hook.URL+"/…", to, "redacted")

	got := hook.received()
	require.Len(t, got, 1)
	assert.Equal(t, http.MethodPost, got[0].method)
	assert.Equal(t, webhookSecret, got[0].path)
	assert.Equal(t, "application/json", got[0].contentType)
	assert.Equal(t, "operator-sweeper/v1.2.3", got[0].userAgent)

	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got[0].body, &raw))
	assert.Equal(t, []string{"apiVersion", "errors", "findings", "kind", "metadata", "summary"}, keys(t, got[0].body))
	var n Notification
	require.NoError(t, json.Unmarshal(got[0].body, &n))
	assert.Equal(t, NotificationKind, n.Kind)
	assert.Equal(t, report.APIVersion, n.APIVersion)
	assert.Equal(t, r.Metadata.Cluster, n.Metadata.Cluster)
	assert.True(t, r.Metadata.StartTime.Equal(&n.Metadata.StartTime))
	assert.Equal(t, r.Summary, n.Summary)
	assert.Equal(t, r.Errors, n.Errors)
	require.Len(t, n.Findings, 4, "the findings with an action, whatever became of it")
	for _, f := range n.Findings {
		assert.NotNil(t, f.Action)
		assert.Nil(t, f.Before)
		assert.Empty(t, f.Signature)
	}
	assert.Equal(t, report.OutcomeFailed, n.Findings[0].Outcome, "failed actions first")
	assert.Equal(t, report.ReasonAPIError, n.Findings[0].FailReason)
	assert.Zero(t, n.More)
	var findings []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw["findings"], &findings))
	for _, f := range findings {
		assert.NotContains(t, f, "before", "pre-images may be large and hold a Secret's data")
	}

	// A run without findings or errors: empty lists, not null.
	require.NoError(t, json.Unmarshal(mustBody(t, opts, reporttest.New(time.Now())), &raw))
	assert.JSONEq(t, "[]", string(raw["findings"]))
	assert.JSONEq(t, "[]", string(raw["errors"]))
}

func mustBody(t *testing.T, opts Config, r *report.Report) []byte {
	t.Helper()
	body, err := opts.body(r)
	require.NoError(t, err)
	return body
}

func TestSlack(t *testing.T) {
	hook := newWebhook(t)
	opts := notifyOptions(hook.secretURL())
	opts.Format = Slack
	r := reporttest.Sample()
	r.Errors = append(r.Errors, report.Error{Stage: report.StagePush, Message: "refused"})

	_, err := Send(context.Background(), opts, r)
	require.NoError(t, err)
	got := hook.received()
	require.Len(t, got, 1)
	assert.Equal(t, "application/json", got[0].contentType)
	msg := decodeSlack(t, got[0].body)

	header := "operator-sweeper on *prod*, mode client: 5 findings, 1 applied, 1 failed, 1 skipped, 1 planned; 3 errors. *The run failed.*"
	assert.Equal(t, header, msg.Text)
	require.Len(t, msg.Blocks, 3, "header, findings, errors: no note of more")
	assert.Equal(t, slackSection(header), msg.Blocks[0])
	assert.Equal(t, strings.Join([]string{
		"• *failed (api-error)* `orphans` ConfigMap shop/a|b: owner",
		"• *applied* `orphans` Logging all: operator gone",
		"• *dry-run* `orphans` ConfigMap shop/a|b: dry",
		"• *skipped (limit)* `orphans` ConfigMap shop/a|b: pod lost",
		"• *info* `stuck-terminating` ConfigMap shop/a|b: terminating for 1h",
	}, "\n"), msg.Blocks[1].Text.Text, "failed first, then applied, then the others")
	assert.Equal(t, "*Errors*\n• observe: pods: forbidden\n• plan (fatal): broken: rule panicked: boom\n• push: refused", msg.Blocks[2].Text.Text)
}

// TestSlackLimits: 500 findings with reasons far longer than a block may be, and characters
// Slack escapes, make a message within Slack's limits, cut on rune boundaries.
func TestSlackLimits(t *testing.T) {
	r := reporttest.New(time.Now())
	r.Metadata.Cluster = strings.Repeat("клúster<&>", 50)
	r.Metadata.Mode = report.DryRunNone
	longReason := strings.Repeat("finalizer <x> & ünïcödé 🧹 ", 400) // ~10 kB
	for i := range 500 {
		obj := rules.ObjectRef{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap",
			Namespace: strings.Repeat("n", 63), Name: fmt.Sprintf("%s-%03d", strings.Repeat("é", 120), i), UID: types.UID(fmt.Sprint(i))}
		res := reporttest.Result{Outcome: report.OutcomeApplied}
		if i%200 == 7 { // 7, 207, 407: failed ones come first all the same
			res = reporttest.Failed(report.ReasonAPIError, "forbidden")
		}
		reporttest.Add(r, rules.Finding{Rule: "orphaned-finalizers", Severity: rules.SeverityWarning, Object: obj, Reason: longReason,
			Action: rules.RemoveFinalizers{Finalizers: []string{"x"}}}, res)
	}
	for range 20 {
		r.Errors = append(r.Errors, report.Error{Stage: report.StageObserve, Resource: "pods", Message: longReason})
	}

	body := mustBody(t, Config{Format: Slack}, r)
	assert.Less(t, len(body), 20_000, "well under Slack's 40,000 characters")
	msg := decodeSlack(t, body)
	assert.LessOrEqual(t, len(msg.Blocks), 50)
	assert.LessOrEqual(t, len(msg.Text), slackSectionLimit)
	for i, block := range msg.Blocks {
		texts := block.Elements
		if block.Text != nil {
			texts = append(texts, *block.Text)
		}
		require.NotEmpty(t, texts, "block %d", i)
		for _, text := range texts {
			assert.LessOrEqual(t, len(text.Text), slackSectionLimit, "block %d", i)
			assert.True(t, utf8.ValidString(text.Text), "block %d", i)
			assert.NotContains(t, text.Text, "\uFFFD", "block %d: a rune cut in two", i)
			for _, tag := range []string{"<", ">"} {
				assert.NotContains(t, text.Text, tag, "block %d: escaped", i)
			}
		}
	}
	assert.Contains(t, msg.Text, ", mode none: 500 findings, 497 applied, 3 failed, 0 skipped; 20 errors. *The run failed.*")
	assert.Contains(t, msg.Text, "клúster&lt;&amp;&gt;")

	lines := strings.Split(msg.Blocks[1].Text.Text, "\n")
	require.Len(t, lines, slackFindings)
	for i, line := range lines {
		assert.LessOrEqual(t, len(line), slackLineLimit)
		assert.True(t, strings.HasSuffix(line, "…"), "the reason is cut: %q", line)
		assert.NotRegexp(t, `&[a-z]*…$`, line, "never inside an escape")
		want := "• *applied* "
		if i < 3 {
			want = "• *failed (api-error)* "
		}
		assert.True(t, strings.HasPrefix(line, want), "line %d: failed first: %q", i, line)
	}
	assert.Equal(t, slackContext("…and 490 more findings: the full report is in the run's output."), msg.Blocks[2])
	errLines := strings.Split(msg.Blocks[3].Text.Text, "\n")
	assert.Len(t, errLines, 1+slackErrors+1)
	assert.Equal(t, "…and 17 more errors.", errLines[len(errLines)-1])
}

func decodeSlack(t *testing.T, body []byte) slackPayload {
	t.Helper()
	assert.Equal(t, []string{"blocks", "text"}, keys(t, body))
	var msg slackPayload
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&msg))
	for _, block := range msg.Blocks {
		assert.Contains(t, []string{"section", "context"}, block.Type)
	}
	return msg
}

func TestSlackEscape(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"plain", 10, "plain"},
		{"a<b>&c", 20, "a&lt;b&gt;&amp;c"},
		{"line\nbreak\ttab", 20, "line break tab"},
		{"a<b>&c", 9, "a&lt;b…"},         // "&gt;" does not fit whole
		{"ééééé", 8, "éé…"},              // 2 bytes a rune, 3 the ellipsis
		{"🧹🧹🧹", 8, "🧹…"},                 // 4 bytes a rune
		{"abcdef", 2, ""},                // no room even for the ellipsis
		{"abc\xffdef", 20, "abc\xffdef"}, // fits: left alone
	}
	for _, tt := range tests {
		got := slackEscape(tt.in, tt.limit)
		assert.Equal(t, tt.want, got, "%q/%d", tt.in, tt.limit)
		assert.LessOrEqual(t, len(got), max(tt.limit, 0))
	}
	assert.Equal(t, "ab…", truncate("abcdef", 5))
	assert.Equal(t, "é…", truncate("ééé", 5))
	assert.Equal(t, "abc", truncate("abc", 3))
}

// TestNotifyOn: which runs each --notify-on notifies.
func TestNotifyOn(t *testing.T) {
	withFindings := func(add func(*report.Report)) *report.Report {
		r := reporttest.New(time.Now())
		add(r)
		return r
	}
	obj := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "ns", Name: "cm", UID: "u"}
	del := rules.Delete{}
	reports := map[string]*report.Report{
		"clean": withFindings(func(*report.Report) {}),
		"report only": withFindings(func(r *report.Report) {
			reporttest.Add(r, rules.Finding{Rule: "stuck-terminating", Object: obj}, reporttest.Result{})
		}),
		"planned (dry run)": withFindings(func(r *report.Report) {
			reporttest.Add(r, rules.Finding{Rule: "orphans", Object: obj, Action: del}, reporttest.Result{Outcome: report.OutcomePlanned})
			reporttest.Add(r, rules.Finding{Rule: "orphans", Object: obj, Action: del}, reporttest.Result{Outcome: report.OutcomeDryRun})
		}),
		"skipped": withFindings(func(r *report.Report) {
			reporttest.Add(r, rules.Finding{Rule: "orphans", Object: obj, Action: del}, reporttest.Skipped(report.ReasonLimit, "limit"))
		}),
		"applied": withFindings(func(r *report.Report) {
			reporttest.Add(r, rules.Finding{Rule: "orphans", Object: obj, Action: del}, reporttest.Result{Outcome: report.OutcomeApplied})
		}),
		"action failed": withFindings(func(r *report.Report) {
			reporttest.Add(r, rules.Finding{Rule: "orphans", Object: obj, Action: del}, reporttest.Failed(report.ReasonAPIError, "forbidden"))
		}),
		"stage failed": withFindings(func(r *report.Report) {
			r.Errors = append(r.Errors, report.Error{Stage: report.StageObserve, Message: "unreachable", Fatal: true})
		}),
		"warning only": withFindings(func(r *report.Report) {
			r.Errors = append(r.Errors, report.Error{Stage: report.StageObserve, Resource: "pods", Message: "forbidden"})
		}),
	}
	tests := []struct {
		on   On
		want []string // the reports notified
	}{
		{OnActions, []string{"applied", "action failed"}},
		{OnFindings, []string{"report only", "planned (dry run)", "skipped", "applied", "action failed"}},
		{OnFailure, []string{"action failed", "stage failed"}},
		{OnAlways, []string{"clean", "report only", "planned (dry run)", "skipped", "applied", "action failed", "stage failed", "warning only"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.on), func(t *testing.T) {
			for name, r := range reports {
				assert.Equal(t, slices.Contains(tt.want, name), tt.on.Wants(r), "%s", name)
			}
		})
	}
}

// TestNotifyFails: a refusal or an unreachable webhook is an error that names the redacted URL and
// what went wrong, never the URL; connection errors, 5xx and 429 are tried once more, the rest not.
func TestNotifyFails(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		attempts int
		wantErr  string // "" for success
	}{
		{"500 twice", []int{500}, 2, "500 Internal Server Error: no_service (the webhook is gone)"},
		{"503 then 200", []int{503, 200}, 2, ""},
		{"429 then 200", []int{429, 200}, 2, ""},
		{"404", []int{404}, 1, "404 Not Found: no_service"},
		{"400 then 200: not retried", []int{400, 200}, 1, "400 Bad Request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // a retry waits a second
			hook := newWebhook(t, tt.statuses...)
			opts := notifyOptions(hook.secretURL())
			_, err := Send(context.Background(), opts, reporttest.Sample())
			assert.Len(t, hook.received(), tt.attempts)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "send the notification to "+hook.URL+"/…: "+tt.wantErr)
			assert.NotContains(t, err.Error(), webhookSecret)
			assert.NotContains(t, err.Error(), "\n")
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		hook := newWebhook(t)
		url := hook.secretURL()
		hook.Close()
		start := time.Now()
		_, err := Send(context.Background(), notifyOptions(url), reporttest.Sample())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "send the notification to "+hook.URL+"/…: ")
		assert.Contains(t, err.Error(), "connection refused")
		assert.NotContains(t, err.Error(), webhookSecret)
		assert.GreaterOrEqual(t, time.Since(start), notifyRetryDelay, "tried once more")
	})

	t.Run("timeout", func(t *testing.T) {
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}))
		defer slow.Close()
		opts := notifyOptions(slow.URL + webhookSecret)
		opts.Timeout = 200 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the run was interrupted: the notification has its own deadline
		start := time.Now()
		_, err := Send(ctx, opts, reporttest.Sample())
		require.Error(t, err)
		assert.Less(t, time.Since(start), 2*time.Second, "--notify-timeout bounds it, retry included")
		assert.Contains(t, err.Error(), "context deadline exceeded")
		assert.NotContains(t, err.Error(), webhookSecret)
	})
}

// TestNotifyURLFile: the URL is the file's content, trimmed, read on every notification.
func TestNotifyURLFile(t *testing.T) {
	first, second := newWebhook(t), newWebhook(t)
	file := filepath.Join(t.TempDir(), "url")
	require.NoError(t, os.WriteFile(file, []byte("  "+first.secretURL()+"\n"), 0o600))
	opts := notifyOptions("")
	opts.URLFile = file

	to, err := Send(context.Background(), opts, reporttest.Sample())
	require.NoError(t, err)
	assert.Equal(t, first.URL+"/…", to)
	require.Len(t, first.received(), 1)
	assert.Equal(t, webhookSecret, first.received()[0].path)

	require.NoError(t, os.WriteFile(file, []byte(second.secretURL()), 0o600)) // the Secret was rotated
	_, err = Send(context.Background(), opts, reporttest.Sample())
	require.NoError(t, err)
	assert.Len(t, first.received(), 1)
	assert.Len(t, second.received(), 1)

	require.NoError(t, os.WriteFile(file, []byte("ftp://files.example.com"+webhookSecret), 0o600))
	_, err = opts.Target()
	require.Error(t, err)
	assert.Equal(t, "--notify-url-file "+file+" holds an invalid URL: ftp://files.example.com/…: use an http:// or https:// URL", err.Error())
	_, err = Send(context.Background(), opts, reporttest.Sample())
	require.Error(t, err, "read again when sending")
	assert.NotContains(t, err.Error(), webhookSecret)

	require.NoError(t, os.Remove(file))
	_, err = opts.Target()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--notify-url-file: open "+file+": no such file or directory")
}

// TestNotifyKeepsTheURLOutOfWhatTheServerSays: a server that quotes the path it was asked for, a
// common 404 page, does not leak it into the error.
func TestNotifyKeepsTheURLOutOfWhatTheServerSays(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<pre>Cannot POST %s?%s</pre>", r.URL.Path, r.URL.RawQuery)
	}))
	defer echo.Close()
	_, err := Send(context.Background(), notifyOptions(echo.URL+webhookSecret+"?token=hunter2"), reporttest.Sample())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404 Not Found: <pre>Cannot POST …?…</pre>")
	assert.NotContains(t, err.Error(), "XXXXsecretXXXX")
	assert.NotContains(t, err.Error(), "hunter2")
}

// TestNotifyFollowsNoRedirect: a redirect is a failure that says what to do, not a success of a
// GET without the body, nor the body sent elsewhere.
func TestNotifyFollowsNoRedirect(t *testing.T) {
	elsewhere := newWebhook(t)
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/collect", status))
		_, err := Send(context.Background(), notifyOptions(redirect.URL+webhookSecret), reporttest.Sample())
		redirect.Close()
		require.Error(t, err, "%d", status)
		assert.Contains(t, err.Error(), "redirected elsewhere, which is not followed: give the URL it redirects to")
	}
	assert.Empty(t, elsewhere.received(), "nothing reached where the redirect pointed")
}

// TestNotificationIsBounded: a run with thousands of actions notifies the first notifyFindings of
// them, failed ones first, and how many more there are.
func TestNotificationIsBounded(t *testing.T) {
	r := reporttest.New(time.Now())
	for i := range 3 * notifyFindings {
		res := reporttest.Result{Outcome: report.OutcomeSkipped, Reason: report.ReasonLimit}
		if i == 2*notifyFindings {
			res = reporttest.Result{Outcome: report.OutcomeFailed, Reason: report.ReasonAPIError}
		}
		reporttest.Add(r, rules.Finding{Rule: "orphaned-finalizers", Object: rules.ObjectRef{Kind: "ConfigMap", Name: fmt.Sprint(i)},
			Action: rules.Delete{}}, res)
	}
	n := newNotification(r)
	assert.Len(t, n.Findings, notifyFindings)
	assert.Equal(t, 2*notifyFindings, n.More)
	assert.Equal(t, report.OutcomeFailed, n.Findings[0].Outcome, "what failed comes first")
}

// keys are the keys of a JSON object, sorted.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return slices.Sorted(maps.Keys(m))
}
