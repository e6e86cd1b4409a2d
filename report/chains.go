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

// causes are the rules of the findings that call for an action or warn, about the object itself
// or at the ends of the chains below it: what it is stuck because of. A symptom explains nothing,
// nor does a finding that only says a live controller will finish, or that nobody knows.
func (c chains) causes(r *Report, uid types.UID, seen map[types.UID]bool) []string {
	if seen[uid] {
		return nil
	}
	seen[uid] = true
	var out []string
	add := func(cause string) {
		if !slices.Contains(out, cause) {
			out = append(out, cause)
		}
	}
	for _, i := range c.findings[uid] {
		if f := r.Findings[i]; (f.Action != nil || f.Severity == rules.SeverityWarning) && !f.Symptom {
			add(f.Rule)
		}
	}
	if len(c.blockers[uid]) > 0 && len(out) > 0 && !r.hasSymptom(uid, c) {
		return out // an object with a cause of its own that is not stuck itself: the chain ends here
	}
	for _, b := range c.blockers[uid] {
		for _, cause := range c.causes(r, b, seen) {
			add(cause)
		}
	}
	return out
}

// hasSymptom says whether an object's findings say it is stuck.
func (r *Report) hasSymptom(uid types.UID, c chains) bool {
	return slices.ContainsFunc(c.findings[uid], func(i int) bool { return r.Findings[i].Symptom })
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

// isStuckNamespace says whether f says a Namespace is stuck.
func isStuckNamespace(f FindingResult) bool {
	return f.Symptom && f.Object.Kind == rules.Namespaces.Kind && f.Object.APIVersion == "v1"
}

// EveryNamespace counts every stuck namespace: a sweep that is not split.
func EveryNamespace(string) bool { return true }
