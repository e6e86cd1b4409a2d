package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Early is what a rule finds of an object once its thresholds of age are set aside
// (--min-terminating-age and --min-age at 0), which a sweep does not report yet: what an object
// terminating for less than --min-terminating-age waits on, why an APIService unavailable for
// less than --min-age is. explain shows it, marked as such, where the sweep would say nothing.
type Early struct {
	// Finding is the rule's, with its action as planned; nothing is done about it.
	Finding FindingResult
	// Below says which threshold keeps it out of a sweep's report: "not yet counted as stuck:
	// terminating for 5s of the 15m0s --min-terminating-age".
	Below string
}

// Explanation is what `operator-sweeper explain` says of one object: the chain through it, from
// what it keeps stuck at the top down to the root causes of what keeps it, with every finding's
// evidence.
type Explanation struct {
	// What names the object: "Namespace logging".
	What string
	// Report is the sweep's report of the chain: only the findings of the sweep in it, with the
	// summary counted again. -o json and yaml print it, and --report-file gets it.
	Report *Report
	// chain is the chain as printed: the sweep's findings and the early ones, in table order.
	chain *Report
	// below says, by index in chain.Findings, which findings are early, and below what.
	below map[int]string
	// unknown are the objects the chain's findings name in blockedBy that no finding, the sweep's
	// or early, is about: printed as such, so that every object of blockedBy is.
	unknown map[types.UID]bool
}

// ruleObject is one rule's say about one object.
type ruleObject struct {
	rule string
	uid  types.UID
}

// Explain explains the object uid, named what: the chain through it of the report's findings and
// of those early findings that are about an object no finding of the same rule in the report is
// about. The chain follows blockedBy through both, so that an object the sweep does not count yet
// (a Namespace terminating for seconds, the APIService that keeps it) is in it, with what its
// rules say.
func (r *Report) Explain(uid types.UID, what string, early []Early) *Explanation {
	all := &Report{Findings: slices.Clip(r.Findings)}
	reported := make(map[ruleObject]bool, len(r.Findings))
	for _, f := range r.Findings {
		reported[ruleObject{f.Rule, f.Object.UID}] = true
	}
	below := map[int]string{}
	for _, e := range early {
		if !reported[ruleObject{e.Finding.Rule, e.Finding.Object.UID}] {
			below[len(all.Findings)] = e.Below
			all.Findings = append(all.Findings, e.Finding)
		}
	}
	known := make(map[types.UID]bool, len(all.Findings)) // objects with findings
	for _, f := range all.Findings {
		known[f.Object.UID] = true
	}

	x := &Explanation{What: what, chain: &Report{}, below: map[int]string{}, unknown: map[types.UID]bool{}}
	rep := *r
	rep.Findings = []FindingResult{}
	rep.Summary = Summary{Resources: r.Summary.Resources, Scanned: r.Summary.Scanned, Incomplete: r.Summary.Incomplete}
	for _, i := range all.chainOf(uid) {
		f := all.Findings[i]
		if why, ok := below[i]; ok {
			x.below[len(x.chain.Findings)] = why
		} else {
			rep.Add(f)
		}
		x.chain.Findings = append(x.chain.Findings, f)
		for _, b := range f.BlockedBy {
			if !known[b.UID] {
				x.unknown[b.UID] = true
			}
		}
	}
	rep.CountStuckNamespaces(EveryNamespace)
	x.Report = &rep
	return x
}

// chainOf returns, in table order, the indexes of the findings about an object, about what keeps
// it stuck (down to the root causes) and about what it keeps stuck (up to the top). Up goes by
// blockedBy itself, so that an object without findings still has the chains it is in.
func (r *Report) chainOf(uid types.UID) []int {
	c := r.chains()
	keeps := map[types.UID]map[types.UID]bool{} // what each object keeps stuck
	for _, f := range r.Findings {
		for _, b := range f.BlockedBy {
			if b.UID == f.Object.UID {
				continue
			}
			if keeps[b.UID] == nil {
				keeps[b.UID] = map[types.UID]bool{}
			}
			keeps[b.UID][f.Object.UID] = true
		}
	}
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
		for blocked := range keeps[u] {
			if !keep[blocked] {
				keep[blocked] = true
				up(blocked)
			}
		}
	}
	down(uid)
	up(uid)
	var out []int
	for _, rw := range r.rowsOf(c) {
		if keep[r.Findings[rw.finding].Object.UID] {
			out = append(out, rw.finding)
		}
	}
	return out
}

// Print prints the explanation as text: each object once, what blocks it indented below it, each
// finding with what --dry-run=none would do and its evidence; an early finding after the threshold
// it is below; an object blockedBy names that no finding is about, as such; then how to prevent it
// next time, and the errors of the sweep.
func (x *Explanation) Print(w io.Writer) {
	r := x.chain
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "%s: no rule has anything to say about it (unless --include-*/--exclude-* kept it from being walked).\n", x.What)
	}
	rows := r.rows()
	depth := 0 // of the last object printed
	for i, rw := range rows {
		f := r.Findings[rw.finding]
		pad := strings.Repeat("    ", rw.depth)
		first := i == 0 || r.Findings[rows[i-1].finding].Object.UID != f.Object.UID
		if first {
			if rw.depth > depth {
				fmt.Fprintf(w, "%s  blocked by:\n", strings.Repeat("    ", rw.depth-1))
			}
			fmt.Fprintf(w, "%s%s %s\n", pad, f.Object.Kind, f.Object.NamespacedName())
			depth = rw.depth
		}
		below, early := x.below[rw.finding]
		if early && (first || x.below[rows[i-1].finding] == "") {
			fmt.Fprintf(w, "%s  %s; without thresholds, the rules say:\n", pad, below)
		}
		fmt.Fprintf(w, "%s  %s (%s): %s\n", pad, f.Rule, f.Severity, f.Reason)
		if f.Action != nil && !early {
			fmt.Fprintf(w, "%s    with --dry-run=none: %s, %s\n", pad, f.Action.Type, wouldDo(f))
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "%s    - %s\n", pad, e)
		}
		if last := i == len(rows)-1 || r.Findings[rows[i+1].finding].Object.UID != f.Object.UID; last && x.printUnknown(w, r, rows, i) {
			depth = rw.depth + 1 // what blocks it with findings follows under the same heading
		}
	}
	for _, hint := range x.hints() {
		fmt.Fprintln(w, hint)
	}
	for _, e := range x.Report.Errors {
		fmt.Fprintf(w, "error (%s): %s\n", e.StageText(), e.Message)
	}
}

// printUnknown prints, below the object of rows[i], the objects its findings name in blockedBy
// that no finding is about, and reports whether there were any.
func (x *Explanation) printUnknown(w io.Writer, r *Report, rows []row, i int) bool {
	obj := r.Findings[rows[i].finding].Object
	var unknown []ObjectSummary
	for j := i; j >= 0 && r.Findings[rows[j].finding].Object.UID == obj.UID; j-- {
		for _, b := range r.Findings[rows[j].finding].BlockedBy {
			if x.unknown[b.UID] && !slices.ContainsFunc(unknown, func(o ObjectSummary) bool { return o.UID == b.UID }) {
				unknown = append(unknown, b)
			}
		}
	}
	if len(unknown) == 0 {
		return false
	}
	pad := strings.Repeat("    ", rows[i].depth)
	fmt.Fprintf(w, "%s  blocked by:\n", pad)
	for _, b := range unknown {
		fmt.Fprintf(w, "%s    %s %s\n%s      no rule has a finding about it\n", pad, b.Kind, b.NamespacedName(), pad)
	}
	return true
}

// hints are the preflight hints of the chain's findings, once each, in table order.
func (x *Explanation) hints() []string {
	var out []string
	for _, f := range x.chain.Findings {
		if hint := preflightHint(f); hint != "" && !slices.Contains(out, hint) {
			out = append(out, hint)
		}
	}
	return out
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

// The preflight hint: `operator-sweeper preflight` of an operator, run before uninstalling it,
// says what the uninstall would leave stuck and, with --drain, deletes its custom resources
// while it still runs to finalize them (docs/preflight.md). A finding that blames an operator
// gone names the command that would have prevented it.

// preflightHint is the line that says how to prevent what f is about next time: the preflight of
// the operator whose uninstall left it, as f's rule names it; "" if f blames no operator gone (a
// live controller, a scaled-down one, nobody known).
func preflightHint(f FindingResult) string {
	gone := f.OperatorGone
	if gone == nil {
		return ""
	}
	drain := ""
	if gone.Drain {
		drain = " --drain" // its custom resources deleted while it runs: nothing held
	}
	target, note := preflightTarget(gone.Installer)
	return fmt.Sprintf("prevent it next time: operator-sweeper preflight %s%s (before uninstalling the operator%s)", target, drain, note)
}

// preflightTarget is the preflight's TYPE/NAME -n NAMESPACE of the operator's installer: the
// ClusterServiceVersion that registered what it left, the Helm release of its CRD, or the workload
// a controller mapping names (a placeholder for what the mapping leaves open, which note says);
// TYPE/NAME -n NAMESPACE where nothing names it.
func preflightTarget(installer *rules.Installer) (target, note string) {
	if installer == nil {
		return "TYPE/NAME -n NAMESPACE", "; TYPE: deployment, statefulset, daemonset, helm, subscription or csv; see docs/preflight.md"
	}
	switch installer.Kind {
	case rules.ClusterServiceVersions.Kind:
		return fmt.Sprintf("csv/%s -n %s", installer.Name, installer.Namespace), ""
	case rules.HelmReleaseKind:
		return fmt.Sprintf("helm/%s -n %s", installer.Name, installer.Namespace), ""
	}
	kind, name, namespace := installer.Kind, installer.Name, installer.Namespace
	var open []string
	if name == "" {
		matching := installer.Selector
		if installer.Image != "" {
			matching = "image " + installer.Image
		}
		name = "NAME"
		open = append(open, fmt.Sprintf("NAME: the %s that matches %s", kind, matching))
	}
	if namespace == "" {
		namespace = "NAMESPACE"
		open = append(open, fmt.Sprintf("NAMESPACE: the %s's", kind))
	}
	if len(open) > 0 {
		note = "; " + strings.Join(open, ", ")
	}
	return fmt.Sprintf("%s/%s -n %s", strings.ToLower(kind), name, namespace), note
}

// chainHints are the preflight hints of the findings about uid and about what keeps it stuck, down
// to the root causes, once each; memo keeps those of each object, for the many a chain shares.
func (r *Report) chainHints(c chains, uid types.UID, memo map[types.UID][]string) []string {
	if hints, done := memo[uid]; done {
		return hints
	}
	memo[uid] = nil // a cycle stops here
	var hints []string
	add := func(hint string) {
		if hint != "" && !slices.Contains(hints, hint) {
			hints = append(hints, hint)
		}
	}
	for _, i := range c.findings[uid] {
		add(preflightHint(r.Findings[i]))
	}
	for _, b := range c.blockers[uid] {
		for _, hint := range r.chainHints(c, b, memo) {
			add(hint)
		}
	}
	memo[uid] = hints
	return hints
}
