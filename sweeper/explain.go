package sweeper

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Explain is what `operator-sweeper explain` asks of a sweep: one object, and the run's rules
// with their thresholds of age set aside.
type Explain struct {
	// UID is the object's, and What names it: "Namespace logging".
	UID  types.UID
	What string
	// Early are the engine's rules built with --min-terminating-age and --min-age at 0. A sweep
	// says nothing of an object terminating for less than --min-terminating-age, nor of an
	// APIService unavailable for less than --min-age; these say what it waits on, and what keeps
	// it, before the sweep counts it.
	Early []rules.Rule
	// MinTerminatingAge is the --min-terminating-age the engine's rules were built with (its
	// Config.MinAge is their --min-age): what an early finding is below.
	MinTerminatingAge time.Duration
}

// Explain sweeps as Run does, writing nothing (a client dry run, whatever Config.DryRun says),
// then plans x.Early on the same view, and explains x's object: the chain through it of the
// sweep's findings and of the early findings the sweep has no finding of the same rule for.
func (e *Engine) Explain(ctx context.Context, x Explain) *report.Explanation {
	e.Config.DryRun = report.DryRunClient
	r, view := e.run(ctx)
	var early []report.Early
	if view != nil {
		early = e.early(ctx, view, x)
	}
	return r.Explain(x.UID, x.What, early)
}

// early plans x.Early on view: every finding, with why a sweep does not report it. The report
// keeps those no finding of the sweep already makes.
func (e *Engine) early(ctx context.Context, view *rules.View, x Explain) []report.Early {
	var out []report.Early
	below := map[types.UID]string{} // by object: thousands of findings may be about few objects
	for _, rule := range x.Early {
		findings, err := planSafely(ctx, rule, view)
		if err != nil {
			// The sweep's own plan of the rule records a panic; this one only misses its part.
			e.Logger.WarnContext(ctx, "rule failed without its thresholds; explain leaves out what it would say", "rule", rule.Name(), "error", err)
			continue
		}
		for _, f := range findings {
			f.Rule = rule.Name()
			why, ok := below[f.Object.UID]
			if !ok {
				why = belowThresholds(view, f.Object, x.MinTerminatingAge, e.Config.MinAge)
				below[f.Object.UID] = why
			}
			out = append(out, report.Early{Finding: NewFindingResult(f, Result{}), Below: why})
		}
	}
	e.Logger.DebugContext(ctx, "planned without thresholds", "findings", len(out))
	return out
}

// belowThresholds says which threshold keeps a sweep from reporting what a rule finds of obj
// once its thresholds of age are set aside: its own deletion, if it is younger than
// --min-terminating-age; else --min-age, the threshold of the state of what rules read.
func belowThresholds(view *rules.View, obj rules.ObjectRef, minTerminatingAge, minAge time.Duration) string {
	if o, ok := view.ByUID(obj.UID); ok && o.DeletionTimestamp != nil {
		if age := view.Now().Sub(o.DeletionTimestamp.Time); age < minTerminatingAge {
			return fmt.Sprintf("not yet counted as stuck: terminating for %s of the %s --min-terminating-age", duration.HumanDuration(max(age, 0)), minTerminatingAge)
		}
	}
	return fmt.Sprintf("not yet reported by a sweep: what it rests on changed less than the %s --min-age ago", minAge)
}
