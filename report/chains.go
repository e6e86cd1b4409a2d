package report

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// causeUnexplained counts a stuck namespace no finding explains.
const causeUnexplained = "unexplained"

// chains links the findings by blockedBy: an object's blockers are the objects its findings name
// that have findings of their own.
type chains struct {
	findings map[types.UID][]int // the findings about each object, in report order
	blockers map[types.UID][]types.UID
	blocked  map[types.UID]bool // blocked by an object with findings
	blocking map[types.UID]bool // blocks an object with findings
}

func (r *Report) chains() chains {
	c := chains{findings: map[types.UID][]int{}, blockers: map[types.UID][]types.UID{}, blocked: map[types.UID]bool{}, blocking: map[types.UID]bool{}}
	for i, f := range r.Findings {
		c.findings[f.Object.UID] = append(c.findings[f.Object.UID], i)
	}
	for i, f := range r.Findings {
		for _, b := range f.BlockedBy {
			if _, known := c.findings[b.UID]; known && b.UID != f.Object.UID && !slices.Contains(c.blockers[f.Object.UID], b.UID) {
				c.blockers[f.Object.UID] = append(c.blockers[f.Object.UID], b.UID)
				c.blocked[r.Findings[i].Object.UID], c.blocking[b.UID] = true, true
			}
		}
	}
	return c
}

// row is a finding of the table, how deep in its chain it is, and the object it is below.
type row struct {
	finding, depth int
	parent         types.UID
}

// rows orders the findings for the table: each chain once, from the object stuck at its top
// (a Terminating namespace) down to the root causes, the findings of an object together; then
// the findings in no chain, in report order.
func (r *Report) rows() []row { return r.rowsOf(r.chains()) }

func (r *Report) rowsOf(c chains) []row {
	rows := make([]row, 0, len(r.Findings))
	shown := map[types.UID]bool{}
	var walk func(uid, parent types.UID, depth int)
	walk = func(uid, parent types.UID, depth int) {
		if shown[uid] {
			return
		}
		shown[uid] = true
		for _, i := range c.findings[uid] {
			rows = append(rows, row{i, depth, parent})
		}
		for _, b := range c.blockers[uid] {
			walk(b, uid, depth+1)
		}
	}
	for _, f := range r.Findings {
		if uid := f.Object.UID; c.blocked[uid] && !c.blocking[uid] {
			walk(uid, "", 0)
		}
	}
	for i, f := range r.Findings {
		if !shown[f.Object.UID] {
			rows = append(rows, row{finding: i})
		}
	}
	return rows
}

// causes are the rules of the findings at the ends of the chains below an object that call for
// an action or warn: what it is stuck because of. A finding that only says a live controller
// will finish, or that nobody knows, explains nothing.
func (c chains) causes(r *Report, uid types.UID, seen map[types.UID]bool) []string {
	if seen[uid] {
		return nil
	}
	seen[uid] = true
	if len(c.blockers[uid]) == 0 {
		var rulesOf []string
		for _, i := range c.findings[uid] {
			f := r.Findings[i]
			if (f.Action != nil || f.Severity == rules.SeverityWarning) && f.Rule != rules.StuckTerminatingName && !slices.Contains(rulesOf, f.Rule) {
				rulesOf = append(rulesOf, f.Rule)
			}
		}
		return rulesOf
	}
	var out []string
	for _, b := range c.blockers[uid] {
		for _, cause := range c.causes(r, b, seen) {
			if !slices.Contains(out, cause) {
				out = append(out, cause)
			}
		}
	}
	return out
}

// CountStuckNamespaces fills Summary.StuckNamespaces with the namespaces counted says to count.
func (r *Report) CountStuckNamespaces(counted func(namespace string) bool) {
	if !slices.ContainsFunc(r.Findings, isStuckNamespace) {
		return // no chain to build over tens of thousands of findings
	}
	c := r.chains()
	counts := map[string]int{}
	for _, f := range r.Findings {
		if !isStuckNamespace(f) || !counted(f.Object.Name) {
			continue
		}
		causes := c.causes(r, f.Object.UID, map[types.UID]bool{})
		if len(causes) == 0 {
			causes = []string{causeUnexplained}
		}
		for _, cause := range causes {
			counts[cause]++
		}
	}
	if len(counts) > 0 {
		r.Summary.StuckNamespaces = counts
	}
}

// isStuckNamespace says whether f is stuck-terminating's about a Namespace.
func isStuckNamespace(f FindingResult) bool {
	return f.Rule == rules.StuckTerminatingName && f.Object.Kind == rules.Namespaces.Kind && f.Object.APIVersion == "v1"
}

// EveryNamespace counts every stuck namespace: a sweep that is not split.
func EveryNamespace(string) bool { return true }
