package push

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Rule is what the metrics need of an enabled rule: its name and the types of action it may plan,
// whatever the config opts in, so that each of them is pushed, as 0 if nothing was done.
type Rule struct {
	Name    string
	Actions []string
}

// RulesOf are the metrics' view of a set of rules.
func RulesOf(ruleSet []rules.Rule) []Rule {
	out := make([]Rule, 0, len(ruleSet))
	for _, r := range ruleSet {
		m := Rule{Name: r.Name()}
		if acting, ok := r.(rules.Authorized); ok {
			m.Actions = rules.ActionTypes(acting)
		}
		out = append(out, m)
	}
	return out
}

// Registry fills a fresh registry, never the global one, with what the report says. What was
// measured is pushed in full: a rule, severity, stage and action that saw nothing is pushed as 0,
// so that a series never just disappears between runs. What a failed stage kept from being
// measured is left out rather than pushed as a false drop to 0: after a failed inventory or
// observe stage, no findings, actions or objects, so that the gateway keeps the last measured
// families (a failed run is pushed with POST, which replaces only the families it pushes); of a
// rule that failed, no series (its earlier ones go with the rest of its family). The last success
// timestamp is set only when the run succeeded.
func Registry(r *report.Report, enabled []Rule, stages []string, succeeded bool) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "operator_sweeper", Name: name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	fatal := func(stage, rule string) bool {
		return slices.ContainsFunc(r.Errors, func(e report.Error) bool {
			return e.Fatal && e.Stage == stage && (rule == "" || e.Rule == rule)
		})
	}
	inventoried := !fatal(report.StageInventory, "")
	observed := inventoried && !fatal(report.StageObserve, "")

	gauge("info", "The last run's version and dry-run mode; always 1.", "version", "mode").
		WithLabelValues(r.Metadata.Version, string(r.Metadata.Mode)).Set(1)
	end := r.Metadata.EndTime.Time
	gauge("run_duration_seconds", "How long the last run took.").WithLabelValues().Set(end.Sub(r.Metadata.StartTime.Time).Seconds())
	gauge("last_run_timestamp_seconds", "When the last run ended, in Unix seconds.").WithLabelValues().Set(float64(end.Unix()))
	if succeeded {
		gauge("last_success_timestamp_seconds", "When the last run that had no failed stage or action ended, in Unix seconds.").
			WithLabelValues().Set(float64(end.Unix()))
	}
	incomplete := 0.0
	if r.Summary.Incomplete {
		incomplete = 1
	}
	gauge("incomplete", "1 when the last run could not observe everything (a list or an API group's discovery failed after retries; see the report's errors), else 0.").
		WithLabelValues().Set(incomplete)
	errs := gauge("errors", "Problems of the last run, by stage; a resource that could not be listed counts under observe.", "stage")
	for _, stage := range stages {
		errs.WithLabelValues(stage)
	}
	for _, e := range r.Errors {
		errs.WithLabelValues(e.Stage).Inc()
	}
	if inventoried {
		gauge("resources_scanned", "Resource types listed by the last run.").WithLabelValues().Set(float64(r.Summary.Resources))
	}
	if !observed {
		return reg
	}
	gauge("objects_scanned", "Objects listed by the last run.").WithLabelValues().Set(float64(r.Summary.Scanned))

	gauge("actions_held_back", "Actions --max-actions held back in the last run: the next runs take them.").
		WithLabelValues().Set(float64(r.Summary.HeldBack))
	gauge("runs_to_finish", "Runs like the last one that the actions --max-actions held back need, at that cap; 0 when none was held back.").
		WithLabelValues().Set(float64(r.Summary.RunsToFinish))
	findings := gauge("findings", "Findings of the last run, by rule and severity.", "rule", "severity")
	actions := gauge("actions", "Actions of the last run, by rule, action type, outcome (planned, dry-run, applied, failed, skipped) and, for skipped and failed ones, reason.",
		"rule", "action", "outcome", "reason")
	done := r.Metadata.Mode.Done()
	for _, rule := range enabled {
		if fatal(report.StagePlan, rule.Name) {
			continue
		}
		for _, severity := range []rules.Severity{rules.SeverityInfo, rules.SeverityWarning} {
			findings.WithLabelValues(rule.Name, string(severity))
		}
		for _, action := range rule.Actions {
			for _, outcome := range []report.Outcome{done, report.OutcomeFailed, report.OutcomeSkipped} {
				actions.WithLabelValues(rule.Name, action, string(outcome), "")
			}
		}
	}
	for _, f := range r.Findings {
		findings.WithLabelValues(f.Rule, string(f.Severity)).Inc()
		if f.Action != nil {
			actions.WithLabelValues(f.Rule, f.Action.Type, string(f.Outcome), string(cmp.Or(f.SkipReason, f.FailReason))).Inc()
		}
	}
	return reg
}
