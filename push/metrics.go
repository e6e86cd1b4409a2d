package sweeper

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// ruleMetrics is what the metrics need of an enabled rule: its name and the types of action it
// may plan, whatever the config opts in.
type ruleMetrics struct {
	name    string
	actions []string
}

// engineStages are the stages every sweep goes through; finish adds those the options ask for
// (notify), so that their errors are counted from 0 too.
func engineStages() []string { return []string{StageInventory, StageObserve, StagePlan, StageApply} }

func enabledRules(ruleSet []rules.Rule) []ruleMetrics {
	out := make([]ruleMetrics, 0, len(ruleSet))
	for _, r := range ruleSet {
		m := ruleMetrics{name: r.Name()}
		if acting, ok := r.(rules.Authorized); ok {
			m.actions = acting.ActionTypes()
		}
		out = append(out, m)
	}
	return out
}

// registry fills a fresh registry, never the global one, with what the report says. What was
// measured is pushed in full: a rule, severity, stage and action that saw nothing is pushed as 0,
// so that a series never just disappears between runs. What a failed stage kept from being
// measured is left out rather than pushed as a false drop to 0: after a failed inventory or
// observe stage, no findings, actions or objects, so that the gateway keeps the last measured
// families (a failed run is pushed with POST, which replaces only the families it pushes); of a
// rule that failed, no series (its earlier ones go with the rest of its family). The last success
// timestamp is set only when the run succeeded.
func registry(report *Report, enabled []ruleMetrics, stages []string, succeeded bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "operator_sweeper", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	fatal := func(stage, rule string) bool {
		return slices.ContainsFunc(report.Errors, func(e ReportError) bool {
			return e.Fatal && e.Stage == stage && (rule == "" || e.Rule == rule)
		})
	}
	inventoried := !fatal(StageInventory, "")
	observed := inventoried && !fatal(StageObserve, "")

	gauge("info", "The last run's version and dry-run mode; always 1.", "version", "mode").
		WithLabelValues(report.Metadata.Version, string(report.Metadata.Mode)).Set(1)
	end := report.Metadata.EndTime.Time
	gauge("run_duration_seconds", "How long the last run took.").WithLabelValues().Set(end.Sub(report.Metadata.StartTime.Time).Seconds())
	gauge("last_run_timestamp_seconds", "When the last run ended, in Unix seconds.").WithLabelValues().Set(float64(end.Unix()))
	if succeeded {
		gauge("last_success_timestamp_seconds", "When the last run that had no failed stage or action ended, in Unix seconds.").
			WithLabelValues().Set(float64(end.Unix()))
	}
	incomplete := 0.0
	if report.Summary.Incomplete {
		incomplete = 1
	}
	gauge("incomplete", "1 when the last run could not observe everything (a list or an API group's discovery failed after retries; see the report's errors), else 0.").
		WithLabelValues().Set(incomplete)
	errs := gauge("errors", "Problems of the last run, by stage; a resource that could not be listed counts under observe.", "stage")
	for _, stage := range stages {
		errs.WithLabelValues(stage)
	}
	for _, e := range report.Errors {
		errs.WithLabelValues(e.Stage).Inc()
	}
	if inventoried {
		gauge("resources_scanned", "Resource types listed by the last run.").WithLabelValues().Set(float64(report.Summary.Resources))
	}
	if !observed {
		return reg
	}
	gauge("objects_scanned", "Objects listed by the last run.").WithLabelValues().Set(float64(report.Summary.Scanned))

	findings := gauge("findings", "Findings of the last run, by rule and severity.", "rule", "severity")
	actions := gauge("actions", "Actions of the last run, by rule, action type, outcome (planned, dry-run, applied, failed, skipped) and, for skipped and failed ones, reason.",
		"rule", "action", "outcome", "reason")
	done := doneOutcome(report.Metadata.Mode)
	for _, rule := range enabled {
		if fatal(StagePlan, rule.name) {
			continue
		}
		for _, severity := range []rules.Severity{rules.SeverityInfo, rules.SeverityWarning} {
			findings.WithLabelValues(rule.name, string(severity))
		}
		for _, action := range rule.actions {
			for _, outcome := range []Outcome{done, OutcomeFailed, OutcomeSkipped} {
				actions.WithLabelValues(rule.name, action, string(outcome), "")
			}
		}
	}
	for _, f := range report.Findings {
		findings.WithLabelValues(f.Rule, string(f.Severity)).Inc()
		if f.Action != nil {
			actions.WithLabelValues(f.Rule, f.Action.Type, string(f.Outcome), string(cmp.Or(f.SkipReason, f.FailReason))).Inc()
		}
	}
	return reg
}

// doneOutcome is the outcome of an action carried out in mode.
func doneOutcome(mode DryRunMode) Outcome {
	switch mode {
	case DryRunNone:
		return OutcomeApplied
	case DryRunServer:
		return OutcomeDryRun
	default:
		return OutcomePlanned
	}
}
