// Package action holds what each command of operator-sweeper does, as helm's pkg/action holds
// helm's: one type per command (Sweep, Fleet, Explain, Preflight, Restore, Merge), filled from the
// options the options package built, whose Run(ctx) does the work and returns the report as a
// Result. The command line (cmd/operator-sweeper) binds the flags, prints the Result and maps the
// error to an exit code; nothing here parses a flag or exits.
package action

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// Errors a Result's Print returns after the report was printed, when the exit status must say more
// than "done".
var (
	// ErrIncomplete means a stage or an action failed; the report says which.
	ErrIncomplete = errors.New("sweep incomplete")
	// ErrFindings means findings are present and --fail-on-findings is set, or, of a preflight,
	// that uninstalling now would leave objects blocked.
	ErrFindings = errors.New("findings present")
)

// Result is what an action leaves for its command to print: one cluster's report, or several as
// a FleetReport, and how the run ends once printed.
type Result struct {
	output options.OutputOptions
	// report is one cluster's, printed by print; reports are a fleet's, when fleet is set.
	report  *report.Report
	print   func(io.Writer, report.Format) error
	fleet   bool
	reports []*report.Report
	// verdict is how the run ends once printed, when the report's own state does not say it all
	// (a preflight's).
	verdict error
}

// single is the Result of one cluster's report r, printed as --output says (grouped unless
// --no-group).
func single(o options.OutputOptions, r *report.Report) *Result {
	return &Result{output: o, report: r, print: o.Printer(r)}
}

// Print writes the report to w in the format --output asks for, and as JSON to --report-file, and
// says how the run ended: ErrIncomplete when a stage or an action failed, ErrFindings when there
// are findings and --fail-on-findings is set (or a preflight's findings would be left blocked), an
// input.Error when a fleet's reports name one cluster twice.
func (r *Result) Print(w io.Writer) error {
	var err error
	if r.fleet {
		err = finishFleet(r.output, r.reports, w)
	} else {
		err = finish(r.output, r.report, w, r.print)
	}
	if err != nil {
		return err
	}
	return r.verdict
}

// finish prints the report with print, writes the report file, and says how the run ended:
// ErrIncomplete when a stage or an action failed, ErrFindings when there are findings and
// --fail-on-findings is set.
func finish(o options.OutputOptions, r *report.Report, out io.Writer, print func(io.Writer, report.Format) error) error {
	if err := print(out, o.Output); err != nil {
		return fmt.Errorf("print the report: %w", err)
	}
	if o.ReportFile != "" {
		if err := r.WriteFile(o.ReportFile); err != nil {
			return fmt.Errorf("write --%s %s: %w", options.FlagReportFile, o.ReportFile, err)
		}
	}
	switch {
	case r.Failed():
		return fmt.Errorf("%w: %s", ErrIncomplete, failure(r))
	case o.FailOnFindings && r.Summary.Findings > 0:
		return fmt.Errorf("%w: %d findings (--%s)", ErrFindings, r.Summary.Findings, options.FlagFailOnFindings)
	}
	return nil
}

// failure describes in one line why the run counts as failed.
func failure(r *report.Report) string {
	var parts []string
	for _, e := range r.Errors {
		switch {
		case e.Fatal && e.Stage == report.StagePush:
			parts = append(parts, fmt.Sprintf("%s (--%s)", e.Message, options.FlagRequirePush))
		case e.Fatal && e.Stage == report.StageNotify:
			parts = append(parts, fmt.Sprintf("%s: %s (--%s)", e.Stage, e.Message, options.FlagRequireNotify))
		case e.Fatal:
			parts = append(parts, e.Stage+": "+e.Message)
		}
	}
	if r.Summary.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d actions failed", r.Summary.Failed))
	}
	return strings.Join(parts, "; ")
}

// finishFleet is finish for the reports of several clusters, as one FleetReport: two reports of
// one cluster name are bad input; the run fails when a cluster's did.
func finishFleet(o options.OutputOptions, reports []*report.Report, out io.Writer) error {
	fleet, err := report.NewFleet(reports)
	if err != nil {
		return &input.Error{Err: err}
	}
	if err := fleet.Print(out, o.Output, o.NoGroup); err != nil {
		return fmt.Errorf("print the report: %w", err)
	}
	if o.ReportFile != "" {
		if err := report.WriteAtomically(o.ReportFile, func(w io.Writer) error { return fleet.Print(w, report.JSON, false) }); err != nil {
			return fmt.Errorf("write --%s %s: %w", options.FlagReportFile, o.ReportFile, err)
		}
	}
	switch {
	case fleet.Failed():
		return fmt.Errorf("%w: the runs of %v failed", ErrIncomplete, fleet.Summary.FailedRuns)
	case o.FailOnFindings && fleet.Summary.Findings > 0:
		return fmt.Errorf("%w: %d findings (--%s)", ErrFindings, fleet.Summary.Findings, options.FlagFailOnFindings)
	}
	return nil
}
