package options

import (
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/spf13/pflag"
)

// The log group's flags.
const (
	FlagLogFormat = "log-format"
	FlagLogLevel  = "log-level"
)

// LogOptions say how the run logs on standard error.
type LogOptions struct {
	// LogFormat is text or json; LogLevel is debug, info, warn or error.
	LogFormat string `json:"log-format,omitempty"`
	LogLevel  string `json:"log-level,omitempty"`
}

func defaultLogOptions() LogOptions { return LogOptions{LogFormat: "text", LogLevel: "info"} }

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *LogOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.LogFormat, FlagLogFormat, o.LogFormat, "Log format on standard error: text or json.")
	fs.StringVar(&o.LogLevel, FlagLogLevel, o.LogLevel, "Log level: debug, info, warn or error.")
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
