package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/push"
	"github.com/operator-sweeper/operator-sweeper/redact"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// sendToSinks notifies and pushes the metrics of a finished sweep. The notification goes first, so
// that its failure is in the metrics and the report. A failure of either is logged and recorded in
// the report's errors, fatal when --require-notify or --require-push says so; it fails nothing
// else.
func sendToSinks(ctx context.Context, o *options.Options, r *report.Report, ruleSet []rules.Rule, logger *slog.Logger) {
	stages := report.SweepStages()
	var nc notify.Config
	o.NotifyOptions.ApplyTo(&nc)
	if nc.Enabled() {
		stages = append(stages, report.StageNotify)
		if !nc.On.Wants(r) {
			logger.DebugContext(ctx, "no notification", "notify-on", nc.On)
		} else if to, err := notify.Send(ctx, nc, r); err != nil {
			logger.ErrorContext(ctx, "notification not sent", "error", err)
			r.Errors = append(r.Errors, report.Error{Stage: report.StageNotify, Message: err.Error(), Fatal: o.RequireNotify})
		} else {
			logger.InfoContext(ctx, "notification sent", "url", to, "format", nc.Format)
		}
	}
	if o.PushgatewayURL == "" {
		return
	}
	var pc push.Config
	o.PushOptions.ApplyTo(&pc)
	if err := push.Push(ctx, pc, r, push.RulesOf(ruleSet), stages); err != nil {
		logger.ErrorContext(ctx, "metrics not pushed", "error", err)
		r.Errors = append(r.Errors, report.Error{Stage: report.StagePush, Message: err.Error(), Fatal: o.RequirePush})
	} else {
		logger.InfoContext(ctx, "metrics pushed", "pushgateway", redact.Credentials(o.PushgatewayURL), "job", push.Job, "cluster", r.Metadata.Cluster, "shard", r.Metadata.Shard)
	}
}

// finish prints the report with print, writes the report file, and says how the run ended:
// errIncomplete when a stage or an action failed, errFindings when there are findings and
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
		return fmt.Errorf("%w: %s", errIncomplete, failure(r))
	case o.FailOnFindings && r.Summary.Findings > 0:
		return fmt.Errorf("%w: %d findings (--%s)", errFindings, r.Summary.Findings, options.FlagFailOnFindings)
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
		return &sweeper.InputError{Err: err}
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
		return fmt.Errorf("%w: the runs of %v failed", errIncomplete, fleet.Summary.FailedRuns)
	case o.FailOnFindings && fleet.Summary.Findings > 0:
		return fmt.Errorf("%w: %d findings (--%s)", errFindings, fleet.Summary.Findings, options.FlagFailOnFindings)
	}
	return nil
}
