package sweeper

import (
	"fmt"
	"slices"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Result is what became of one action.
type Result struct {
	Outcome report.Outcome
	// Reason says why the action was skipped or failed; empty otherwise.
	Reason report.Reason
	// Detail says it for a human: the error, or what the reason is about.
	Detail string
	// Replanned says the object changed after it was observed, and the action was re-planned
	// from a fresh read.
	Replanned bool
	// Action is the action that was carried out after a re-plan.
	Action rules.Action
	// Evidence are the live re-checks of the facts the action rested on.
	Evidence []string
	// BlockedBy are objects found to block the action: the webhook configuration whose webhook
	// refused the write.
	BlockedBy []rules.ObjectRef
	// Before says where the pre-image of the object, as read right before the last write sent,
	// is kept.
	Before *report.PreImage
}

func Skipped(reason report.Reason, format string, args ...any) Result {
	return Result{Outcome: report.OutcomeSkipped, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func Failed(reason report.Reason, format string, args ...any) Result {
	return Result{Outcome: report.OutcomeFailed, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Then is next, the end of an action, with what the attempts so far found: that it was
// re-planned, the evidence of the re-checks, the action last sent.
func (so Result) Then(next Result) Result {
	next.Replanned = next.Replanned || so.Replanned
	next.Evidence = append(slices.Clone(so.Evidence), next.Evidence...)
	if next.Action == nil {
		next.Action = so.Action
	}
	if next.Before == nil {
		next.Before = so.Before
	}
	return next
}

// NewFindingResult is a finding and what became of its action, as the report shows it.
func NewFindingResult(f rules.Finding, res Result) report.FindingResult {
	fr := report.FindingResult{
		Rule:         f.Rule,
		Severity:     f.Severity,
		Object:       report.ObjectOf(f.Object),
		Reason:       f.Reason,
		Evidence:     f.Evidence,
		Symptom:      f.Symptom,
		OperatorGone: f.OperatorGone,
	}
	for _, ref := range append(slices.Clone(f.BlockedBy), res.BlockedBy...) {
		fr.BlockedBy = append(fr.BlockedBy, report.ObjectOf(ref))
	}
	if res.Replanned {
		fr.Evidence = append(slices.Clone(fr.Evidence), "the object changed after it was observed; it was re-read and re-planned before acting")
	}
	if len(res.Evidence) > 0 {
		fr.Evidence = append(slices.Clone(fr.Evidence), res.Evidence...)
	}
	if fr.Evidence == nil {
		fr.Evidence = []string{}
	}
	if f.Action == nil {
		return fr
	}
	action := f.Action
	if res.Action != nil {
		action = res.Action
	}
	fr.Action = Summarize(action)
	fr.Outcome = res.Outcome
	fr.Error = res.Detail
	fr.Before = res.Before
	switch res.Outcome {
	case report.OutcomeFailed:
		fr.FailReason = res.Reason
	case report.OutcomeSkipped:
		fr.SkipReason = res.Reason
	}
	return fr
}
