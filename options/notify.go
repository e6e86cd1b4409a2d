package options

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/notify"
)

// The notify group's flags.
const (
	FlagNotifyURL     = "notify-url"
	FlagNotifyURLFile = "notify-url-file"
	FlagNotifyFormat  = "notify-format"
	FlagNotifyOn      = "notify-on"
	FlagNotifyTimeout = "notify-timeout"
	FlagRequireNotify = "require-notify"
)

// NotifyOptions say whether, where and how a run is notified to a webhook (Slack, or anything that
// takes JSON), and whether a failed notification fails it. The URL is a secret: it never appears
// in logs, errors or the report, which show it as scheme://host/….
type NotifyOptions struct {
	// NotifyURL receives the notification: an http or https URL.
	NotifyURL string `json:"notify-url,omitempty"`
	// NotifyURLFile holds the URL instead (a Secret mounted as a file), read on every run.
	NotifyURLFile string `json:"notify-url-file,omitempty"`
	// NotifyFormat is the body posted: json (a notify.Notification) or slack.
	NotifyFormat notify.Format `json:"notify-format,omitempty"`
	// NotifyOn says which runs are notified: actions, findings, failure or always.
	NotifyOn notify.On `json:"notify-on,omitempty"`
	// NotifyTimeout bounds the notification, its retry included.
	NotifyTimeout metav1.Duration `json:"notify-timeout"`
	// RequireNotify makes a failed notification fail the run (exit 1); otherwise it is reported
	// and logged.
	RequireNotify bool `json:"require-notify"`
}

// defaultNotifyOptions are the notification's defaults: no URL, so no notification.
func defaultNotifyOptions() NotifyOptions {
	return NotifyOptions{NotifyFormat: notify.JSON, NotifyOn: notify.OnActions, NotifyTimeout: metav1.Duration{Duration: 10 * time.Second}}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *NotifyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.NotifyURL, FlagNotifyURL, o.NotifyURL, "POST a summary of the run to this http(s) URL, such as a Slack incoming webhook; never logged (a secret one is better in --notify-url-file).")
	fs.StringVar(&o.NotifyURLFile, FlagNotifyURLFile, o.NotifyURLFile, "File whose content is the notification URL (a mounted Secret), read on every run.")
	fs.StringVar((*string)(&o.NotifyFormat), FlagNotifyFormat, string(o.NotifyFormat), "Notification body: json (metadata, summary, errors and the findings with an action) or slack (an incoming-webhook message).")
	fs.StringVar((*string)(&o.NotifyOn), FlagNotifyOn, string(o.NotifyOn), "Notify when: actions (an action was applied or failed), findings, failure (the run failed) or always.")
	fs.DurationVar(&o.NotifyTimeout.Duration, FlagNotifyTimeout, o.NotifyTimeout.Duration, "Bound on the notification, its one retry included.")
	fs.BoolVar(&o.RequireNotify, FlagRequireNotify, o.RequireNotify, "Exit 1 when the notification fails (default: report and log it).")
}

// Validate returns every problem of the group. The URL file is read, so that a wrong Secret is
// bad input (exit 2) rather than a failed notification; it is read again when the notification
// is sent.
func (o *NotifyOptions) Validate() []error {
	var errs []error
	formatOK := slices.Contains([]notify.Format{notify.JSON, notify.Slack}, o.NotifyFormat)
	if !formatOK {
		errs = append(errs, invalid(FlagNotifyFormat, fmt.Sprintf("%q", o.NotifyFormat), "use json or slack"))
	}
	onOK := slices.Contains([]notify.On{notify.OnActions, notify.OnFindings, notify.OnFailure, notify.OnAlways}, o.NotifyOn)
	if !onOK {
		errs = append(errs, invalid(FlagNotifyOn, fmt.Sprintf("%q", o.NotifyOn), "use actions, findings, failure or always"))
	}
	if o.NotifyTimeout.Duration <= 0 {
		errs = append(errs, invalid(FlagNotifyTimeout, o.NotifyTimeout.Duration, "it must be positive"))
	}
	var cfg notify.Config
	o.ApplyTo(&cfg)
	switch {
	case o.NotifyURL != "" && o.NotifyURLFile != "":
		errs = append(errs, fmt.Errorf("use either --%s or --%s, not both", FlagNotifyURL, FlagNotifyURLFile))
	case o.NotifyURL != "":
		if err := notify.URLError(o.NotifyURL); err != nil {
			errs = append(errs, fmt.Errorf("--%s is invalid: %w", FlagNotifyURL, err))
		}
	case o.NotifyURLFile != "":
		if _, err := cfg.Target(); err != nil {
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

// ApplyTo sets where and how to notify.
func (o *NotifyOptions) ApplyTo(cfg *notify.Config) {
	*cfg = notify.Config{URL: o.NotifyURL, URLFile: o.NotifyURLFile, Format: o.NotifyFormat, On: o.NotifyOn, Timeout: o.NotifyTimeout.Duration}
}
