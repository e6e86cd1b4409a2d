package options

import (
	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// Choices are the values of each flag that takes one of a few, as its Validate accepts them: for
// shell completion.
func Choices() map[string][]string {
	var outputs []string
	for _, f := range report.Formats() {
		outputs = append(outputs, string(f))
	}
	return map[string][]string{
		FlagOutput:       outputs,
		FlagDryRun:       {string(report.DryRunClient), string(report.DryRunServer), string(report.DryRunNone)},
		FlagLogFormat:    {"text", "json"},
		FlagLogLevel:     {"debug", "info", "warn", "error"},
		FlagProfile:      Profiles,
		FlagNotifyFormat: {string(notify.JSON), string(notify.Slack)},
		FlagNotifyOn:     {string(notify.OnActions), string(notify.OnFindings), string(notify.OnFailure), string(notify.OnAlways)},
	}
}
