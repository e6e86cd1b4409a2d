package options

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// The output group's flags.
const (
	FlagOutput         = "output"
	FlagReportFile     = "report-file"
	FlagFailOnFindings = "fail-on-findings"
	FlagNoGroup        = "no-group"
)

// OutputOptions say how the report is printed and kept, and what findings mean to the exit code.
type OutputOptions struct {
	// Output is the report format on standard output.
	Output report.Format `json:"output,omitempty"`
	// ReportFile, if set, also receives the report as JSON.
	ReportFile string `json:"report-file,omitempty"`
	// FailOnFindings makes a run with findings exit 3.
	FailOnFindings bool `json:"fail-on-findings"`
	// NoGroup shows every finding on a row of its own in the table, Markdown and HTML, which
	// otherwise show similar findings as one row.
	NoGroup bool `json:"no-group"`
}

func defaultOutputOptions() OutputOptions { return OutputOptions{Output: report.Table} }

// AddFlags binds the group's flags to o; the defaults shown are o's current values.
func (o *OutputOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVarP((*string)(&o.Output), FlagOutput, "o", string(o.Output), "Report format: "+formats()+".")
	fs.StringVar(&o.ReportFile, FlagReportFile, o.ReportFile, "Also write the report as JSON to this file.")
	fs.BoolVar(&o.FailOnFindings, FlagFailOnFindings, o.FailOnFindings, "Exit 3 when there are findings.")
	fs.BoolVar(&o.NoGroup, FlagNoGroup, o.NoGroup, "Show every finding on a row of its own in the table, markdown and html, which otherwise show similar findings as one row.")
}

// Printer is how r is printed: similar findings as one row, unless --no-group.
func (o *OutputOptions) Printer(r *report.Report) func(io.Writer, report.Format) error {
	if o.NoGroup {
		return r.PrintEach
	}
	return r.Print
}

// Validate returns every problem of the group.
func (o *OutputOptions) Validate() []error {
	var errs []error
	if !slices.Contains(report.Formats(), o.Output) {
		errs = append(errs, invalid(FlagOutput, fmt.Sprintf("%q", o.Output), "use "+formats()))
	}
	if o.ReportFile != "" {
		if info, err := os.Stat(filepath.Dir(o.ReportFile)); err != nil || !info.IsDir() {
			errs = append(errs, fmt.Errorf("--%s %s: its directory does not exist", FlagReportFile, o.ReportFile))
		}
	}
	return errs
}

// formats are the report's formats, as a user reads them: "table, json, yaml, markdown or html".
func formats() string {
	var names []string
	for _, f := range report.Formats() {
		names = append(names, string(f))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
