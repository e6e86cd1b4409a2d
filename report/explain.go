package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// chainOf returns the findings about an object, about what keeps it stuck (down to the root
// causes) and about what it keeps stuck (up to the top), in table order.
func (r *Report) chainOf(uid types.UID) []row {
	c := r.chains()
	keep := map[types.UID]bool{}
	var down, up func(types.UID)
	down = func(u types.UID) {
		if !keep[u] {
			keep[u] = true
			for _, b := range c.blockers[u] {
				down(b)
			}
		}
	}
	up = func(u types.UID) {
		for blocked, blockers := range c.blockers {
			if slices.Contains(blockers, u) && !keep[blocked] {
				keep[blocked] = true
				up(blocked)
			}
		}
	}
	down(uid)
	up(uid)
	return slices.DeleteFunc(r.rows(), func(rw row) bool { return !keep[r.Findings[rw.finding].Object.UID] })
}

// Chain is the report of one object: only the findings about it, about what keeps it stuck (down
// to the root causes) and about what it keeps stuck (up to the top), in table order, with the
// summary counted again.
func (r *Report) Chain(uid types.UID) *Report {
	out := *r
	rows := r.chainOf(uid)
	out.Findings = make([]FindingResult, 0, len(rows))
	out.Summary = Summary{Resources: r.Summary.Resources, Scanned: r.Summary.Scanned}
	for _, rw := range rows {
		f := r.Findings[rw.finding]
		out.Findings = append(out.Findings, f)
		out.Summary.count(f)
	}
	out.CountStuckNamespaces(EveryNamespace)
	return &out
}

// PrintExplanation prints the report of a Chain as text: each object once, what blocks it indented below it,
// each finding with what --dry-run=none would do and its evidence.
func (r *Report) PrintExplanation(w io.Writer, what string) {
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "%s: no rule has anything to say about it (unless --include-*/--exclude-* kept it from being walked).\n", what)
		return
	}
	var last types.UID
	depth := 0
	for i, rw := range r.rows() {
		f := r.Findings[rw.finding]
		pad := strings.Repeat("    ", rw.depth)
		if i == 0 || f.Object.UID != last {
			if rw.depth > depth {
				fmt.Fprintf(w, "%s  blocked by:\n", strings.Repeat("    ", rw.depth-1))
			}
			fmt.Fprintf(w, "%s%s %s\n", pad, f.Object.Kind, f.Object.NamespacedName())
			last, depth = f.Object.UID, rw.depth
		}
		fmt.Fprintf(w, "%s  %s (%s): %s\n", pad, f.Rule, f.Severity, f.Reason)
		if f.Action != nil {
			fmt.Fprintf(w, "%s    with --dry-run=none: %s, %s\n", pad, f.Action.Type, wouldDo(f))
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "%s    - %s\n", pad, e)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error (%s): %s\n", e.StageText(), e.Message)
	}
}

// wouldDo says what a run with --dry-run=none would do with a planned action.
func wouldDo(f FindingResult) string {
	switch {
	case f.Outcome == OutcomePlanned:
		return "would be applied"
	case f.Error != "":
		return fmt.Sprintf("would be %s: %s", f.OutcomeText(), f.Error)
	default:
		return "would be " + f.OutcomeText()
	}
}
