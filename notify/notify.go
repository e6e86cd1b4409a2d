package sweeper

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// The notification's flag names.
const (
	FlagNotifyURL     = "notify-url"
	FlagNotifyURLFile = "notify-url-file"
	FlagNotifyFormat  = "notify-format"
	FlagNotifyOn      = "notify-on"
	FlagNotifyTimeout = "notify-timeout"
	FlagRequireNotify = "require-notify"
)

// NotifyFormat is the body of a notification.
type NotifyFormat string

// The notification formats.
const (
	// NotifyJSON posts a Notification.
	NotifyJSON NotifyFormat = "json"
	// NotifySlack posts a Slack incoming-webhook message.
	NotifySlack NotifyFormat = "slack"
)

// NotifyOn says which runs are worth a notification.
type NotifyOn string

// When to notify.
const (
	// NotifyOnActions notifies when an action was applied or failed: when the cluster changed, or
	// should have. Actions only planned (--dry-run=client or server) are not news: every dry run
	// of a cluster with debris plans them, and would notify every time.
	NotifyOnActions NotifyOn = "actions"
	// NotifyOnFindings notifies when there are findings, with or without actions.
	NotifyOnFindings NotifyOn = "findings"
	// NotifyOnFailure notifies when the run failed (Report.Failed) before the notification: a push
	// that fails after it, even with --require-push, is not in it.
	NotifyOnFailure NotifyOn = "failure"
	// NotifyOnAlways notifies of every run.
	NotifyOnAlways NotifyOn = "always"
)

// NotificationKind identifies the body of a --notify-format=json notification; its apiVersion
// is the report's.
const NotificationKind = "SweepNotification"

// NotifyOptions say whether, where and how a run is notified to a webhook (Slack, or anything that
// takes JSON). The URL is a secret (a Slack webhook's URL is its credential): it never appears in
// logs, errors or the report, which show it as scheme://host/….
type NotifyOptions struct {
	// NotifyURL receives the notification: an http or https URL.
	NotifyURL string `json:"notify-url,omitempty"`
	// NotifyURLFile holds the URL instead (a Secret mounted as a file), read on every run.
	NotifyURLFile string `json:"notify-url-file,omitempty"`
	// NotifyFormat is the body posted: json (a Notification) or slack.
	NotifyFormat NotifyFormat `json:"notify-format,omitempty"`
	// NotifyOn says which runs are notified: actions, findings, failure or always.
	NotifyOn NotifyOn `json:"notify-on,omitempty"`
	// NotifyTimeout bounds the notification, its retry included.
	NotifyTimeout metav1.Duration `json:"notify-timeout"`
	// RequireNotify makes a failed notification fail the run (exit 1); otherwise it is reported
	// and logged.
	RequireNotify bool `json:"require-notify"`
}

// defaultNotifyOptions are the notification's defaults: no URL, so no notification.
func defaultNotifyOptions() NotifyOptions {
	return NotifyOptions{NotifyFormat: NotifyJSON, NotifyOn: NotifyOnActions, NotifyTimeout: metav1.Duration{Duration: 10 * time.Second}}
}

// AddFlags binds the notification's flags to o.
func (o *NotifyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NotifyURL, FlagNotifyURL, o.NotifyURL, "POST a summary of the run to this http(s) URL, such as a Slack incoming webhook; never logged (a secret one is better in --notify-url-file).")
	fs.StringVar(&o.NotifyURLFile, FlagNotifyURLFile, o.NotifyURLFile, "File whose content is the notification URL (a mounted Secret), read on every run.")
	fs.StringVar((*string)(&o.NotifyFormat), FlagNotifyFormat, string(o.NotifyFormat), "Notification body: json (metadata, summary, errors and the findings with an action) or slack (an incoming-webhook message).")
	fs.StringVar((*string)(&o.NotifyOn), FlagNotifyOn, string(o.NotifyOn), "Notify when: actions (an action was applied or failed), findings, failure (the run failed) or always.")
	fs.DurationVar(&o.NotifyTimeout.Duration, FlagNotifyTimeout, o.NotifyTimeout.Duration, "Bound on the notification, its one retry included.")
	fs.BoolVar(&o.RequireNotify, FlagRequireNotify, o.RequireNotify, "Exit 1 when the notification fails (default: report and log it).")
}

// notifies says whether a notification is configured; whether a run is notified is NotifyOn's.
func (o NotifyOptions) notifies() bool { return o.NotifyURL != "" || o.NotifyURLFile != "" }

// Validate returns every problem of the notification options. The URL file is read, so that a
// wrong Secret is bad input (exit 2) rather than a failed notification; it is read again when
// the notification is sent.
func (o NotifyOptions) Validate() []error {
	var errs []error
	formatOK := slices.Contains([]NotifyFormat{NotifyJSON, NotifySlack}, o.NotifyFormat)
	if !formatOK {
		errs = append(errs, fmt.Errorf("--%s %q is invalid: use json or slack", FlagNotifyFormat, o.NotifyFormat))
	}
	onOK := slices.Contains([]NotifyOn{NotifyOnActions, NotifyOnFindings, NotifyOnFailure, NotifyOnAlways}, o.NotifyOn)
	if !onOK {
		errs = append(errs, fmt.Errorf("--%s %q is invalid: use actions, findings, failure or always", FlagNotifyOn, o.NotifyOn))
	}
	if o.NotifyTimeout.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s is invalid: it must be positive", FlagNotifyTimeout, o.NotifyTimeout.Duration))
	}
	switch {
	case o.NotifyURL != "" && o.NotifyURLFile != "":
		errs = append(errs, fmt.Errorf("use either --%s or --%s, not both", FlagNotifyURL, FlagNotifyURLFile))
	case o.NotifyURL != "":
		if err := notifyURLError(o.NotifyURL); err != nil {
			errs = append(errs, fmt.Errorf("--%s is invalid: %w", FlagNotifyURL, err))
		}
	case o.NotifyURLFile != "":
		if _, err := o.target(); err != nil {
			errs = append(errs, err)
		}
	default:
		// Settings of a notification that will not happen are a slip: the URL is missing, or they are.
		defaults := defaultNotifyOptions()
		for _, set := range []struct {
			flag string
			set  bool
		}{
			{FlagRequireNotify, o.RequireNotify},
			{FlagNotifyTimeout, o.NotifyTimeout != defaults.NotifyTimeout},
			{FlagNotifyFormat, formatOK && o.NotifyFormat != defaults.NotifyFormat},
			{FlagNotifyOn, onOK && o.NotifyOn != defaults.NotifyOn},
		} {
			if set.set {
				errs = append(errs, fmt.Errorf("--%s needs --%s or --%s", set.flag, FlagNotifyURL, FlagNotifyURLFile))
			}
		}
	}
	return errs
}

// maxNotifyURLFileSize bounds a --notify-url-file: a URL is short; anything larger is the wrong file.
const maxNotifyURLFileSize = 64 << 10

// target is the URL to notify: --notify-url, or the content of --notify-url-file, trimmed.
// Errors never show the URL.
func (o NotifyOptions) target() (string, error) {
	if o.NotifyURLFile == "" {
		return o.NotifyURL, nil
	}
	f, err := os.Open(o.NotifyURLFile)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", FlagNotifyURLFile, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxNotifyURLFileSize+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("--%s: read %s: %w", FlagNotifyURLFile, o.NotifyURLFile, err)
	case len(data) > maxNotifyURLFileSize:
		return "", fmt.Errorf("--%s %s is larger than %d KiB: is it the right file?", FlagNotifyURLFile, o.NotifyURLFile, maxNotifyURLFileSize>>10)
	}
	raw := strings.TrimSpace(string(data))
	if err := notifyURLError(raw); err != nil {
		return "", fmt.Errorf("--%s %s holds an invalid URL: %w", FlagNotifyURLFile, o.NotifyURLFile, err)
	}
	return raw, nil
}

// notifyURLError says what is wrong with a notification URL, if anything, showing no more of it
// than redactURL does.
func notifyURLError(raw string) error {
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
		return fmt.Errorf("%s: use an http:// or https:// URL", redactURL(raw))
	case u.Host == "":
		return fmt.Errorf("%s names no host", redactURL(raw))
	}
	return nil
}

// redactURL shows of a URL what may be logged: scheme://host/…. The path and query of a webhook's
// URL are its credential, and a user in it is a credential too.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(URL not shown)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// wants says whether --notify-on wants a notification of report.
func (on NotifyOn) wants(report *Report) bool {
	switch on {
	case NotifyOnAlways:
		return true
	case NotifyOnFailure:
		return report.Failed()
	case NotifyOnFindings:
		return report.Summary.Findings > 0
	default: // NotifyOnActions: not planned ones (see NotifyOnActions).
		return report.Summary.Applied > 0 || report.Summary.Failed > 0
	}
}

// sendNotification notifies of report if --notify-on wants it. A failed notification is logged
// and recorded in the report's errors (stage notify), fatal with --require-notify; it fails
// nothing else.
func (o NotifyOptions) sendNotification(ctx context.Context, report *Report, logger *slog.Logger) {
	if !o.NotifyOn.wants(report) {
		logger.DebugContext(ctx, "no notification", "notify-on", o.NotifyOn)
		return
	}
	to, err := o.notify(ctx, report)
	if err != nil {
		logger.ErrorContext(ctx, "notification not sent", "error", err)
		report.Errors = append(report.Errors, ReportError{Stage: StageNotify, Message: err.Error(), Fatal: o.RequireNotify})
		return
	}
	logger.InfoContext(ctx, "notification sent", "url", to, "format", o.NotifyFormat)
}

// notifyRetryDelay is the pause before the one retry of a notification.
const notifyRetryDelay = time.Second

// notify posts the notification of report, and returns where to, redacted. A connection error,
// a 5xx or a 429 is tried once more, within --notify-timeout. It has a deadline of its own, as the
// push does: a run that was interrupted or ran out of time still notifies.
func (o NotifyOptions) notify(ctx context.Context, report *Report) (string, error) {
	target, err := o.target()
	if err != nil {
		return "", err
	}
	redacted := redactURL(target)
	body, err := o.body(report)
	if err != nil {
		return redacted, fmt.Errorf("encode the notification: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.NotifyTimeout.Duration)
	defer cancel()
	userAgent := "operator-sweeper/" + cmp.Or(report.Metadata.Version, "dev")
	retry, err := post(ctx, target, body, userAgent)
	if err != nil && retry {
		select {
		case <-ctx.Done():
		case <-time.After(notifyRetryDelay):
			_, err = post(ctx, target, body, userAgent)
		}
	}
	if err != nil {
		return redacted, fmt.Errorf("send the notification to %s: %s", redacted, scrubURL(err.Error(), target))
	}
	return redacted, nil
}

// scrubURL takes out of message every part of the URL target that is a secret: the whole URL (the
// http package's errors quote it), its path, query and user (a server's answer may quote the path
// it was asked for, "Cannot POST /services/T000/B000/secret").
func scrubURL(message, target string) string {
	message = strings.ReplaceAll(message, target, redactURL(target))
	u, err := url.Parse(target)
	if err != nil {
		return message
	}
	for _, secret := range []string{u.RawQuery, u.EscapedPath(), u.Path, u.User.String()} {
		if len(secret) > 1 { // a path of "/" holds nothing
			message = strings.ReplaceAll(message, secret, "…")
		}
	}
	return message
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

// body is the notification of report in --notify-format.
func (o NotifyOptions) body(report *Report) ([]byte, error) {
	var payload any = newNotification(report)
	if o.NotifyFormat == NotifySlack {
		payload = slackMessage(report)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // no page shows it; Slack's text is escaped as mrkdwn wants
	err := enc.Encode(payload)
	return b.Bytes(), err
}

// Notification is the body of a --notify-format=json notification: the report's metadata,
// summary and errors, and its findings that have an action, without their pre-images (before),
// which may be large and hold a Secret's data.
type Notification struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ReportMetadata `json:"metadata"`
	Summary    Summary        `json:"summary"`
	Errors     []ReportError  `json:"errors"`
	// Findings are the findings that have an action, whatever became of it: failed ones first,
	// then applied ones, then the rest; at most notifyFindings.
	Findings []FindingResult `json:"findings"`
	// More counts the findings with an action left out past notifyFindings: the report has them.
	More int `json:"more,omitempty"`
}

// notifyFindings bounds the findings of a JSON notification, which a big dry run would otherwise
// fill with megabytes.
const notifyFindings = 100

func newNotification(report *Report) Notification {
	n := Notification{
		APIVersion: ReportAPIVersion,
		Kind:       NotificationKind,
		Metadata:   report.Metadata,
		Summary:    report.Summary,
		Errors:     report.Errors,
		Findings:   []FindingResult{},
	}
	if n.Errors == nil {
		n.Errors = []ReportError{}
	}
	for _, f := range topFindings(report.Findings) {
		switch {
		case f.Action == nil:
		case len(n.Findings) == notifyFindings:
			n.More++
		default:
			f.Before = nil
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
func slackMessage(report *Report) slackPayload {
	header := slackHeader(report)
	msg := slackPayload{Text: header, Blocks: []slackBlock{slackSection(header)}}

	var lines []string
	size := 0
	for _, f := range topFindings(report.Findings) {
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
	if more := len(report.Findings) - len(lines); more > 0 && len(lines) > 0 {
		msg.Blocks = append(msg.Blocks, slackContext(fmt.Sprintf("…and %d more findings: the full report is in the run's output.", more)))
	}

	if len(report.Errors) > 0 {
		errLines := []string{"*Errors*"}
		for _, e := range report.Errors[:min(len(report.Errors), slackErrors)] {
			what := e.stage() + ": "
			for _, about := range []string{e.Rule, e.Resource} {
				if about != "" {
					what += about + ": "
				}
			}
			errLines = append(errLines, "• "+slackEscape(what+e.Message, slackLineLimit))
		}
		if more := len(report.Errors) - slackErrors; more > 0 {
			errLines = append(errLines, fmt.Sprintf("…and %d more errors.", more))
		}
		msg.Blocks = append(msg.Blocks, slackSection(strings.Join(errLines, "\n")))
	}
	return msg
}

// slackHeader is the message's first line: where, how, and the counts.
func slackHeader(report *Report) string {
	m, s := report.Metadata, report.Summary
	where := "*" + slackEscape(cmp.Or(m.Cluster, "-"), 100) + "*"
	if m.Shard != "" {
		where += " (shard " + slackEscape(m.Shard, 20) + ")"
	}
	counts := fmt.Sprintf("%d findings, %d applied, %d failed, %d skipped", s.Findings, s.Applied, s.Failed, s.Skipped)
	if s.Planned > 0 {
		counts += fmt.Sprintf(", %d planned", s.Planned)
	}
	if n := len(report.Errors); n > 0 {
		counts += fmt.Sprintf("; %d errors", n)
	}
	header := fmt.Sprintf("operator-sweeper on %s, mode %s: %s.", where, slackEscape(string(m.Mode), 20), counts)
	if report.Failed() {
		header += " *The run failed.*"
	}
	return header
}

// topFindings orders findings by what a reader needs first: failed actions, applied ones, planned
// ones, skipped ones, then findings without action (warnings first); the report's order otherwise.
func topFindings(findings []FindingResult) []FindingResult {
	rank := func(f FindingResult) int {
		switch {
		case f.Action == nil && f.Severity == "warning":
			return 4
		case f.Action == nil:
			return 5
		case f.Outcome == OutcomeFailed:
			return 0
		case f.Outcome == OutcomeApplied:
			return 1
		case f.Outcome == OutcomeSkipped:
			return 3
		default: // planned, dry-run
			return 2
		}
	}
	sorted := slices.Clone(findings)
	slices.SortStableFunc(sorted, func(a, b FindingResult) int { return cmp.Compare(rank(a), rank(b)) })
	return sorted
}

// slackLine is a finding on one line of at most slackLineLimit bytes: outcome, rule, object and
// reason, the reason cut first.
func slackLine(f FindingResult) string {
	outcome := f.outcome()
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
