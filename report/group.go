package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// An operator uninstalled with tens of thousands of custom resources leaves as many findings
// that say the same thing: the table, Markdown and HTML show them as one row each group, as the
// API server aggregates similar Events (same source, object kind and reason; the message of the
// latest). -o json and yaml, and explain, keep every finding; --no-group shows every row.

// shownRow is a row as the table, Markdown and HTML show it: one finding, or a group of similar
// ones, the first of which stands for them.
type shownRow struct {
	depth    int
	findings []int // in report order
	// reason is the group's: the first finding's, its age given as the range of the group's.
	reason string
}

// first is the finding that stands for the row.
func (s shownRow) first() int { return s.findings[0] }

// similarity is what findings have in common to be shown as one row: the same rule, kind and
// place in a chain, the same action, outcome and verdict (the reason but for how long the object
// has been stuck). Not the namespace: an operator's objects are spread over many, and a row per
// kind and namespace would be thousands; the row names how many namespaces it spans.
type similarity struct {
	cluster                          string
	parent                           types.UID
	rule, severity, apiVersion, kind string
	action, outcome, verdict         string
}

// shownRows are the rows the table, Markdown and HTML show: each chain once, then the rest, as
// rows orders them; with each unset, similar findings about objects that keep nothing stuck
// themselves (the leaves of the chains) are one row, where the first of them stands.
func (r *Report) shownRows(each bool) []shownRow {
	c := r.chains()
	rows := r.rowsOf(c)
	out := make([]shownRow, 0, len(rows))
	groups := map[similarity]int{} // the row of each group, in out
	reasons := reasons{}
	for _, rw := range rows {
		f := &r.Findings[rw.finding]
		if each || len(c.blockers[f.Object.UID]) > 0 {
			out = append(out, shownRow{depth: rw.depth, findings: []int{rw.finding}, reason: f.Reason})
			continue
		}
		key := similarity{cluster: f.Cluster, parent: rw.parent, rule: f.Rule, severity: string(f.Severity), apiVersion: f.Object.APIVersion, kind: f.Object.Kind,
			action: actionText(f.Action), outcome: f.OutcomeText(), verdict: reasons.of(f.Reason).verdict}
		if i, ok := groups[key]; ok {
			out[i].findings = append(out[i].findings, rw.finding)
			continue
		}
		groups[key] = len(out)
		out = append(out, shownRow{depth: rw.depth, findings: []int{rw.finding}})
	}
	for i := range out {
		if out[i].reason == "" {
			out[i].reason = r.groupReason(out[i].findings, reasons)
		}
	}
	return out
}

// reason is a reason read for grouping: its verdict (the reason, its ages masked) and its first
// age, if any.
type reason struct {
	verdict string
	// ageAt is where the first age is (see ageAt), or nil; age is its value.
	ageAt []int
	age   time.Duration
}

// reasons reads each reason once: tens of thousands of findings share a few.
type reasons map[string]reason

func (rs reasons) of(text string) reason {
	r, ok := rs[text]
	if !ok {
		r = reason{verdict: maskAges(text), ageAt: ageAt(text, 0)}
		if r.ageAt != nil {
			r.age = humanAge(text[r.ageAt[0]:r.ageAt[1]])
		}
		rs[text] = r
	}
	return r
}

// actionText is what an action does, to tell actions apart.
func actionText(a *ActionSummary) string {
	if a == nil {
		return ""
	}
	text := a.Type + " " + strings.Join(a.Finalizers, ",")
	for _, ref := range a.AddOwnerReferences {
		text += " +" + string(ref.UID)
	}
	for _, uid := range a.RemoveOwnerReferences {
		text += " -" + string(uid)
	}
	if a.GracePeriodSeconds != nil {
		text += " grace " + strconv.FormatInt(*a.GracePeriodSeconds, 10)
	}
	return text
}

// ageAt is where, from byte from on, the first age is that a reason gives, [start, end), or nil:
// an age as duration.HumanDuration writes it (45s, 4m52s, 3h, 2d3h, 3y45d), a word of its own,
// which similar findings do not share. It matches what the regular expression
// \b\d+[ydhms](\d+[dhms])?\b would, and is read by hand so that the report holds no regular
// expression over what rules write.
func ageAt(text string, from int) []int {
	for start := from; start < len(text); start++ {
		if start > 0 && isWordByte(text[start-1]) {
			continue // inside a word: "v1beta1", "x12s"
		}
		end, ok := digitsThenUnit(text, start, "ydhms")
		if !ok {
			continue
		}
		if longer, ok := digitsThenUnit(text, end, "dhms"); ok && !wordByteAt(text, longer) {
			return []int{start, longer} // 4m52s
		}
		if !wordByteAt(text, end) {
			return []int{start, end}
		}
	}
	return nil
}

// digitsThenUnit reads, at i, one or more digits and one of units; it returns where they end.
func digitsThenUnit(text string, i int, units string) (int, bool) {
	j := i
	for j < len(text) && '0' <= text[j] && text[j] <= '9' {
		j++
	}
	if j == i || j == len(text) || strings.IndexByte(units, text[j]) < 0 {
		return 0, false
	}
	return j + 1, true
}

// isWordByte says whether b is of a word, as \w says: an ASCII letter or digit, or _; the bytes
// of other runes are not.
func isWordByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_'
}

// wordByteAt says whether text has a byte of a word at i.
func wordByteAt(text string, i int) bool { return i < len(text) && isWordByte(text[i]) }

// maskAges is text with every age in it (ageAt's) replaced by "…": what similar reasons share.
func maskAges(text string) string {
	at := ageAt(text, 0)
	if at == nil {
		return text
	}
	var b strings.Builder
	last := 0
	for ; at != nil; at = ageAt(text, last) {
		b.WriteString(text[last:at[0]])
		b.WriteString("…")
		last = at[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

// groupReason is the reason a group shows: its findings', which differ at most in the first age
// they give; then with that age as the range of theirs, "terminating for 5m to 3h, waiting on …".
func (r *Report) groupReason(findings []int, rs reasons) string {
	first := r.Findings[findings[0]].Reason
	loc := rs.of(first).ageAt
	if loc == nil || len(findings) == 1 {
		return first
	}
	least, most := findings[0], findings[0]
	leastAge, mostAge := rs.of(first).age, rs.of(first).age
	for _, i := range findings[1:] {
		switch age := rs.of(r.Findings[i].Reason).age; {
		case age < leastAge:
			least, leastAge = i, age
		case age > mostAge:
			most, mostAge = i, age
		}
	}
	if leastAge == mostAge {
		return first
	}
	return first[:loc[0]] + ageText(r.Findings[least].Reason, rs) + " to " + ageText(r.Findings[most].Reason, rs) + first[loc[1]:]
}

// ageText is the first age a reason gives.
func ageText(text string, rs reasons) string {
	at := rs.of(text).ageAt
	return text[at[0]:at[1]]
}

// humanAge reads back an age ageAt found.
func humanAge(text string) time.Duration {
	units := map[byte]time.Duration{'y': 365 * 24 * time.Hour, 'd': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute, 's': time.Second}
	var total time.Duration
	n := 0
	for i := range len(text) {
		if c := text[i]; c >= '0' && c <= '9' {
			n = n*10 + int(c-'0')
		} else {
			total, n = total+time.Duration(n)*units[c], 0
		}
	}
	return total
}

// names shows the objects of a row: the first few, by namespace/name (the name alone after one of
// the same namespace), and how many others in how many namespaces: "shop/a, b, c and 997 more",
// "shop/a, b, dev/c and 997 more in 4 namespaces".
func (r *Report) names(row shownRow) string {
	shown := 3
	if len(row.findings) == shown+1 {
		shown++ // a name is no longer than "and 1 more"
	}
	names := make([]string, 0, shown)
	namespaces := map[string]bool{}
	previous := ""
	for k, i := range row.findings {
		o := r.Findings[i].Object
		namespaces[o.Namespace] = true
		if k >= shown {
			continue
		}
		name := o.NamespacedName()
		if k > 0 && o.Namespace == previous {
			name = o.Name
		}
		names, previous = append(names, name), o.Namespace
	}
	text := strings.Join(names, ", ")
	if more := len(row.findings) - shown; more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	if len(namespaces) > 1 && len(row.findings) > shown {
		text += fmt.Sprintf(" in %d namespaces", len(namespaces))
	}
	return text
}
