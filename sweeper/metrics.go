package sweeper

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// registry fills a fresh registry, never the global one, with what the report says. A rule,
// severity and stage that saw nothing is pushed as 0, so that a series never just disappears
// between runs. The last success timestamp is set only when the run succeeded.
func registry(report *Report, ruleNames []string, succeeded bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "operator_sweeper", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	gauge("objects_scanned", "Objects listed by the last run.").WithLabelValues().Set(float64(report.Summary.Scanned))
	gauge("resources_scanned", "Resource types listed by the last run.").WithLabelValues().Set(float64(report.Summary.Resources))
	gauge("info", "The last run's version and dry-run mode; always 1.", "version", "mode").
		WithLabelValues(report.Metadata.Version, string(report.Metadata.Mode)).Set(1)
	end := report.Metadata.EndTime.Time
	gauge("run_duration_seconds", "How long the last run took.").WithLabelValues().Set(end.Sub(report.Metadata.StartTime.Time).Seconds())
	gauge("last_run_timestamp_seconds", "When the last run ended, in Unix seconds.").WithLabelValues().Set(float64(end.Unix()))
	if succeeded {
		gauge("last_success_timestamp_seconds", "When the last run that had no failed stage or action ended, in Unix seconds.").
			WithLabelValues().Set(float64(end.Unix()))
	}

	findings := gauge("findings", "Findings of the last run, by rule and severity.", "rule", "severity")
	for _, rule := range ruleNames {
		for _, severity := range []rules.Severity{rules.SeverityInfo, rules.SeverityWarning} {
			findings.WithLabelValues(rule, string(severity))
		}
	}
	actions := gauge("actions", "Actions of the last run, by rule, action type, outcome (planned, dry-run, applied, failed, skipped) and, for skipped and failed ones, reason.",
		"rule", "action", "outcome", "reason")
	for _, f := range report.Findings {
		findings.WithLabelValues(f.Rule, string(f.Severity)).Inc()
		if f.Action != nil {
			actions.WithLabelValues(f.Rule, f.Action.Type, string(f.Outcome), string(cmp.Or(f.SkipReason, f.FailReason))).Inc()
		}
	}
	errs := gauge("errors", "Problems of the last run, by stage; a resource that could not be listed counts under observe.", "stage")
	for _, stage := range []string{StageInventory, StageObserve, StagePlan} {
		errs.WithLabelValues(stage)
	}
	for _, e := range report.Errors {
		errs.WithLabelValues(e.Stage).Inc()
	}
	return reg
}
