// Package notify tells a webhook (Slack, or anything that takes JSON) about a finished run: a
// summary of its report and its actions, never an object's body. The URL is a secret (a Slack
// webhook's URL is its credential): it never appears in logs, errors or the report, which show it
// as scheme://host/….
package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/operator-sweeper/operator-sweeper/redact"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Format is the body of a notification.
type Format string

// The notification formats.
const (
	// JSON posts a Notification.
	JSON Format = "json"
	// Slack posts a Slack incoming-webhook message.
	Slack Format = "slack"
)

// On says which runs are worth a notification.
type On string

// When to notify.
const (
	// OnActions notifies when an action was applied or failed: when the cluster changed, or
	// should have. Actions only planned (--dry-run=client or server) are not news: every dry run
	// of a cluster with debris plans them, and would notify every time.
	OnActions On = "actions"
	// OnFindings notifies when there are findings, with or without actions.
	OnFindings On = "findings"
	// OnFailure notifies when the run failed (Report.Failed) before the notification: a push
	// that fails after it, even with --require-push, is not in it.
	OnFailure On = "failure"
	// OnAlways notifies of every run.
	OnAlways On = "always"
)

// NotificationKind identifies the body of a --notify-format=json notification; its apiVersion
// is the report's.
const NotificationKind = "SweepNotification"

// Config says where and how a run is notified.
type Config struct {
	// URL receives the notification: an http or https URL.
	URL string
	// URLFile holds the URL instead (a Secret mounted as a file), read on every run.
	URLFile string
	// Format is the body posted: json (a Notification) or slack.
	Format Format
	// On says which runs are notified: actions, findings, failure or always.
	On On
	// Timeout bounds the notification, its retry included.
	Timeout time.Duration
}

// Enabled says whether a notification is configured; whether a run is notified is On's.
func (cfg Config) Enabled() bool { return cfg.URL != "" || cfg.URLFile != "" }

// maxNotifyURLFileSize bounds a --notify-url-file: a URL is short; anything larger is the wrong file.
const maxNotifyURLFileSize = 64 << 10

// Target is the URL to notify: URL, or the content of URLFile, trimmed. Errors never show the URL;
// they name the file by the flag that gives it.
func (cfg Config) Target() (string, error) {
	if cfg.URLFile == "" {
		return cfg.URL, nil
	}
	f, err := os.Open(cfg.URLFile)
	if err != nil {
		return "", fmt.Errorf("--notify-url-file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNotifyURLFileSize+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("--notify-url-file: read %s: %w", cfg.URLFile, err)
	case len(data) > maxNotifyURLFileSize:
		return "", fmt.Errorf("--notify-url-file %s is larger than %d KiB: is it the right file?", cfg.URLFile, maxNotifyURLFileSize>>10)
	}
	raw := strings.TrimSpace(string(data))
	if err := URLError(raw); err != nil {
		return "", fmt.Errorf("--notify-url-file %s holds an invalid URL: %w", cfg.URLFile, err)
	}
	return raw, nil
}

// URLError says what is wrong with a notification URL, if anything, showing no more of it than
// redact.URL does.
func URLError(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return errors.New("it is empty")
	case err != nil:
		// url.Parse's error quotes the URL.
		return errors.New("it is not a URL (it is not shown: it may hold a secret)")
	case u.Scheme == "":
		return errors.New("it is not an absolute URL: use an http:// or https:// URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s: use an http:// or https:// URL", redact.URL(raw))
	case u.Host == "":
		return fmt.Errorf("%s names no host", redact.URL(raw))
	}
	return nil
}

// Wants says whether a run that reported r is worth a notification.
func (on On) Wants(r *report.Report) bool {
	switch on {
	case OnAlways:
		return true
	case OnFailure:
		return r.Failed()
	case OnFindings:
		return r.Summary.Findings > 0
	default: // OnActions: not planned ones (see OnActions).
		return r.Summary.Applied > 0 || r.Summary.Failed > 0
	}
}

// notifyRetryDelay is the pause before the one retry of a notification.
const notifyRetryDelay = time.Second

// Send posts the notification of a finished run's report, and returns where to, redacted. A
// connection error, a 5xx or a 429 is tried once more, within the timeout. It has a deadline of its
// own, as the push does: a run that was interrupted or ran out of time still notifies.
func Send(ctx context.Context, cfg Config, r *report.Report) (string, error) {
	target, err := cfg.Target()
	if err != nil {
		return "", err
	}
	redacted := redact.URL(target)
	body, err := cfg.body(r)
	if err != nil {
		return redacted, fmt.Errorf("encode the notification: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Timeout)
	defer cancel()
	userAgent := "operator-sweeper/" + cmp.Or(r.Metadata.Version, "dev")
	retry, err := post(ctx, target, body, userAgent)
	if err != nil && retry {
		select {
		case <-ctx.Done():
		case <-time.After(notifyRetryDelay):
			_, err = post(ctx, target, body, userAgent)
		}
	}
	if err != nil {
		return redacted, fmt.Errorf("send the notification to %s: %s", redacted, redact.Message(err.Error(), target))
	}
	return redacted, nil
}

// post sends one attempt, and says whether its failure is worth a retry: a connection error (but
// for the deadline), a 5xx or a 429. Its errors do not quote the URL.
func post(ctx context.Context, target string, body []byte, userAgent string) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("the URL does not make a request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	// No redirect is followed: a 302 would turn the POST into a GET that "succeeds" without the
	// body, and a 307 would send the body on to wherever the answer says.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	// What a webhook says of a refusal is short ("invalid_payload", "no_service"): a line of it.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // to reuse the connection
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return false, fmt.Errorf("%s: redirected elsewhere, which is not followed: give the URL it redirects to", resp.Status)
	}
	status := resp.Status
	if line := truncate(strings.Join(strings.Fields(string(answer)), " "), 200); line != "" {
		status += ": " + line
	}
	return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, errors.New(status)
}

// body is the notification of r in the configured format.
func (cfg Config) body(r *report.Report) ([]byte, error) {
	var payload any = newNotification(r)
	if cfg.Format == Slack {
		payload = slackMessage(r)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // no page shows it; Slack's text is escaped as mrkdwn wants
	err := enc.Encode(payload)
	return b.Bytes(), err
}

// Notification is the body of a --notify-format=json notification: the report's metadata,
// summary and errors, and its findings that have an action, without what only restore reads
// (before: where the pre-image is kept; the signature).
type Notification struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   report.Metadata `json:"metadata"`
	Summary    report.Summary  `json:"summary"`
	Errors     []report.Error  `json:"errors"`
	// Findings are the findings that have an action, whatever became of it: failed ones first,
	// then applied ones, then the rest; at most notifyFindings.
	Findings []report.FindingResult `json:"findings"`
	// More counts the findings with an action left out past notifyFindings: the report has them.
	More int `json:"more,omitempty"`
}

// notifyFindings bounds the findings of a JSON notification, which a big dry run would otherwise
// fill with megabytes.
const notifyFindings = 100

func newNotification(r *report.Report) Notification {
	n := Notification{
		APIVersion: report.APIVersion,
		Kind:       NotificationKind,
		Metadata:   r.Metadata,
		Summary:    r.Summary,
		Errors:     r.Errors,
		Findings:   []report.FindingResult{},
	}
	if n.Errors == nil {
		n.Errors = []report.Error{}
	}
	for _, f := range topFindings(r.Findings) {
		switch {
		case f.Action == nil:
		case len(n.Findings) == notifyFindings:
			n.More++
		default:
			f.Before, f.Signature = nil, ""
			n.Findings = append(n.Findings, f)
		}
	}
	return n
}

// Slack's limits on a message (https://api.slack.com/reference/block-kit/blocks): a section's
// text is at most 3000 characters, a message at most 50 blocks; a message's text is truncated past
// 40,000. Lengths here are counted in bytes, which are never fewer than Slack's characters.
const (
	slackSectionLimit = 3000
	// slackFindings is how many findings a message lists, one line each, of at most slackLineLimit.
	slackFindings  = 10
	slackLineLimit = 280
	slackErrors    = 3
)

// slackPayload is an incoming-webhook message: text is the notification's, blocks the message.
type slackPayload struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func slackSection(text string) slackBlock {
	return slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: text}}
}

func slackContext(text string) slackBlock {
	return slackBlock{Type: "context", Elements: []slackText{{Type: "mrkdwn", Text: text}}}
}

// slackMessage is the Slack message of report: a header line with the cluster, the mode and the
// counts; the top findings, one line each; how many more there are; the first errors. The report
// itself is in the Job's logs.
func slackMessage(r *report.Report) slackPayload {
	header := slackHeader(r)
	msg := slackPayload{Text: header, Blocks: []slackBlock{slackSection(header)}}

	var lines []string
	size := 0
	for _, f := range topFindings(r.Findings) {
		line := slackLine(f)
		if len(lines) == slackFindings || size+len(line)+1 > slackSectionLimit {
			break
		}
		lines = append(lines, line)
		size += len(line) + 1
	}
	if len(lines) > 0 {
		msg.Blocks = append(msg.Blocks, slackSection(strings.Join(lines, "\n")))
	}
	if more := len(r.Findings) - len(lines); more > 0 && len(lines) > 0 {
		msg.Blocks = append(msg.Blocks, slackContext(fmt.Sprintf("…and %d more findings: the full report is in the run's output.", more)))
	}

	if len(r.Errors) > 0 {
		errLines := []string{"*Errors*"}
		for _, e := range r.Errors[:min(len(r.Errors), slackErrors)] {
			what := e.StageText() + ": "
			for _, about := range []string{e.Rule, e.Resource} {
				if about != "" {
					what += about + ": "
				}
			}
			errLines = append(errLines, "• "+slackEscape(what+e.Message, slackLineLimit))
		}
		if more := len(r.Errors) - slackErrors; more > 0 {
			errLines = append(errLines, fmt.Sprintf("…and %d more errors.", more))
		}
		msg.Blocks = append(msg.Blocks, slackSection(strings.Join(errLines, "\n")))
	}
	return msg
}

// slackHeader is the message's first line: where, how, and the counts.
func slackHeader(r *report.Report) string {
	m, s := r.Metadata, r.Summary
	where := "*" + slackEscape(cmp.Or(m.Cluster, "-"), 100) + "*"
	if m.Shard != "" {
		where += " (shard " + slackEscape(m.Shard, 20) + ")"
	}
	counts := fmt.Sprintf("%d findings, %d applied, %d failed, %d skipped", s.Findings, s.Applied, s.Failed, s.Skipped)
	if s.Planned > 0 {
		counts += fmt.Sprintf(", %d planned", s.Planned)
	}
	if n := len(r.Errors); n > 0 {
		counts += fmt.Sprintf("; %d errors", n)
	}
	header := fmt.Sprintf("operator-sweeper on %s, mode %s: %s.", where, slackEscape(string(m.Mode), 20), counts)
	if r.Failed() {
		header += " *The run failed.*"
	}
	return header
}

// topFindings orders findings by what a reader needs first: failed actions, applied ones, planned
// ones, skipped ones, then findings without action (warnings first); the report's order otherwise.
func topFindings(findings []report.FindingResult) []report.FindingResult {
	rank := func(f report.FindingResult) int {
		switch {
		case f.Action == nil && f.Severity == "warning":
			return 4
		case f.Action == nil:
			return 5
		case f.Outcome == report.OutcomeFailed:
			return 0
		case f.Outcome == report.OutcomeApplied:
			return 1
		case f.Outcome == report.OutcomeSkipped:
			return 3
		default: // planned, dry-run
			return 2
		}
	}
	sorted := slices.Clone(findings)
	slices.SortStableFunc(sorted, func(a, b report.FindingResult) int { return cmp.Compare(rank(a), rank(b)) })
	return sorted
}

// slackLine is a finding on one line of at most slackLineLimit bytes: outcome, rule, object and
// reason, the reason cut first.
func slackLine(f report.FindingResult) string {
	outcome := f.OutcomeText()
	if f.Action == nil {
		outcome = cmp.Or(string(f.Severity), string(rules.SeverityInfo))
	}
	prefix := "• *" + slackEscape(outcome, 40) + "* `" + slackEscape(f.Rule, 40) + "` " + slackEscape(f.Object.String(), 120)
	if f.Reason == "" {
		return prefix
	}
	return prefix + ": " + slackEscape(f.Reason, slackLineLimit-len(prefix)-2)
}

// slackEscape escapes s for Slack's mrkdwn (&, <, >; line breaks become spaces) and cuts it to at
// most limit bytes, on a rune boundary and never inside an escape, marking the cut with "…".
func slackEscape(s string, limit int) string {
	escape := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", " ", "\r", " ", "\t", " ")
	if escaped := escape.Replace(s); len(escaped) <= limit {
		return escaped
	}
	const ellipsis = "…"
	var b strings.Builder
	for _, r := range s {
		piece := escape.Replace(string(r))
		if b.Len()+len(piece) > limit-len(ellipsis) {
			break
		}
		b.WriteString(piece)
	}
	if limit < len(ellipsis) {
		return b.String()
	}
	return b.String() + ellipsis
}

// truncate cuts s to at most limit bytes on a rune boundary, marking the cut with "…".
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	cut := max(limit-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
