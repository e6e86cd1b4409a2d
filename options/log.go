package options

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// The log group's flags.
const (
	FlagLogFormat     = "log-format"
	FlagLogLevel      = "log-level"
	FlagProfile       = "profile"
	FlagProfileOutput = "profile-output"
)

// Profiles are the profiles --profile writes, as kubectl's --profile names them.
var Profiles = []string{"none", "cpu", "heap", "allocs"}

// LogOptions say how the run logs on standard error, and what it tells of itself besides.
type LogOptions struct {
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string `json:"log-format,omitempty"`
	LogLevel  string `json:"log-level,omitempty"`
	// Profile, if not none, is the Go runtime profile written to ProfileOutput when the command
	// ends (cpu: over the whole run), for whoever looks into what a run costs.
	Profile       string `json:"profile,omitempty"`
	ProfileOutput string `json:"profile-output,omitempty"`
}

func defaultLogOptions() LogOptions {
	return LogOptions{LogFormat: "text", LogLevel: "info", Profile: "none", ProfileOutput: "profile.pprof"}
}

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogFormat, FlagLogFormat, o.LogFormat, "Log format on standard error: text or json.")
	fs.StringVar(&o.LogLevel, FlagLogLevel, o.LogLevel, "Log level: debug, info, warn or error.")
	fs.StringVar(&o.Profile, FlagProfile, o.Profile, "Go profile to write when the command ends: "+strings.Join(Profiles, ", ")+" (read it with go tool pprof).")
	fs.StringVar(&o.ProfileOutput, FlagProfileOutput, o.ProfileOutput, "The file --profile writes.")
}

// Validate returns every problem of the group.
func (o *LogOptions) Validate() []error {
	var errs []error
	if !slices.Contains([]string{"text", "json"}, o.LogFormat) {
		errs = append(errs, invalid(FlagLogFormat, fmt.Sprintf("%q", o.LogFormat), "use text or json"))
	}
	if _, err := o.level(); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains(Profiles, o.Profile) {
		errs = append(errs, invalid(FlagProfile, fmt.Sprintf("%q", o.Profile), "use "+strings.Join(Profiles, ", ")))
	}
	if o.Profile != "none" && o.ProfileOutput == "" {
		errs = append(errs, fmt.Errorf("--%s is empty: name the file --%s=%s writes", FlagProfileOutput, FlagProfile, o.Profile))
	}
	return errs
}

func (o *LogOptions) level() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return level, fmt.Errorf("--%s %q is invalid: use debug, info, warn or error", FlagLogLevel, o.LogLevel)
	}
	return level, nil
}

// Logger is the run's logger, writing to w.
func (o *LogOptions) Logger(w io.Writer) *slog.Logger {
	level, _ := o.level() // validated
	handlerOpts := &slog.HandlerOptions{Level: level}
	if o.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, handlerOpts))
	}
	return slog.New(slog.NewTextHandler(w, handlerOpts))
}
