package action

import (
	"context"
	"log/slog"

	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/push"
	"github.com/operator-sweeper/operator-sweeper/redact"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
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
