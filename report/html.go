package report

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// reportHTML is the page -o html prints: the layout, and its style and script as the templates
// "style" and "script", which contain no actions, so that their hashes are known up front.
//
//go:embed report.html
var reportHTML string

var (
	htmlTemplate = template.Must(template.New("report.html").Parse(reportHTML))
	htmlStyle    = template.CSS(htmlAsset("style"))
	htmlScript   = template.JS(htmlAsset("script"))
	// htmlPolicy lets the page load nothing, and run no script and apply no style but its own:
	// the report is opened from a file or a CI artifact, and what it shows comes from the cluster.
	htmlPolicy = fmt.Sprintf("default-src 'none'; img-src data:; style-src '%s'; script-src '%s'; base-uri 'none'; form-action 'none'",
		cspHash(string(htmlStyle)), cspHash(string(htmlScript)))
)

// htmlAsset is the text of one of the page's templates without actions.
func htmlAsset(name string) string {
	var b bytes.Buffer
	if err := htmlTemplate.ExecuteTemplate(&b, name, nil); err != nil {
		panic(fmt.Sprintf("report.html: template %s: %v", name, err))
	}
	return b.String()
}

// cspHash is the Content-Security-Policy source that allows an inline script or style.
func cspHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Values of data-outcome and of the filters that are not an outcome, rule or namespace.
const (
	// htmlNoAction is the data-outcome of a finding without an action (report only).
	htmlNoAction = "none"
	// htmlAll is the filter value that matches every finding: no rule, namespace or outcome is "*".
	htmlAll = "*"
)

// htmlPage is what report.html shows of a report.
type htmlPage struct {
	Meta                 Metadata
	Start, End, Duration string
	Summary              Summary
	Stuck                []htmlCount
	Chains               []htmlRow
	Groups               []htmlGroup
	Total                int
	Rules                []htmlOption
	// Clusters, in a fleet's merged report only, filter by cluster.
	Clusters   []htmlOption
	Namespaces []htmlOption
	Outcomes   []htmlOption
	Errors     []htmlError
	All        string
	Policy     string
	Style      template.CSS
	Script     template.JS
}

// htmlCount is a stuck-namespace count of a root cause.
type htmlCount struct {
	Cause string
	Count int
}

// htmlOption is a choice of a filter.
type htmlOption struct {
	Value, Label string
}

// htmlRow is a row of a root-cause chain, as the table prints it.
type htmlRow struct {
	ID, Rule, Kind, Name, Action, Outcome, Reason string
	Top                                           bool
}

// htmlGroup is the findings of one rule.
type htmlGroup struct {
	Rule     string
	Findings []htmlFinding
	// Total counts the findings, of which Findings show groups of similar ones as one.
	Total int
}

// htmlFinding is a finding with what the page shows of it; or similar findings, the first of
// which stands for them.
type htmlFinding struct {
	ID string
	F  FindingResult
	// Count is how many findings it shows; Reason their reason (see shownRow).
	Count      int
	Reason     string
	Object     string
	Cluster    string // data-cluster, in a fleet's merged report
	Namespace  string // data-namespace: the object's, or a Namespace's own name
	Outcome    string // data-outcome
	Action     string
	Details    []string // what the action changes
	Result     string   // the outcome, with the skip or fail reason
	BlockedBy  []htmlLink
	PreImage   bool
	HasOutcome bool
	// Preflight says how to prevent it next time, where an operator gone is behind it or behind
	// what keeps it stuck.
	Preflight []string
}

// htmlLink names an object, and the finding about it on the page, if any.
type htmlLink struct {
	Text, ID string
}

// htmlError is an error of the run.
type htmlError struct {
	Stage, Rule, Resource, Message string
	Fatal                          bool
}

// printHTML prints the report as one self-contained HTML page: the header, the summary, the
// root-cause chains as the table shows them, the findings (or groups of similar ones, as rows
// says) by rule with filters, and the errors.
func (r *Report) printHTML(w io.Writer, rows []shownRow) error {
	out := bufio.NewWriterSize(w, 64<<10)
	if err := htmlTemplate.Execute(out, r.htmlPage(rows)); err != nil {
		return fmt.Errorf("render the HTML report: %w", err)
	}
	return out.Flush()
}

func (r *Report) htmlPage(rows []shownRow) htmlPage {
	p := htmlPage{
		Meta:    r.Metadata,
		Start:   htmlTime(r.Metadata.StartTime),
		End:     htmlTime(r.Metadata.EndTime),
		Summary: r.Summary,
		Total:   len(r.Findings),
		All:     htmlAll,
		Policy:  htmlPolicy,
		Style:   htmlStyle,
		Script:  htmlScript,
	}
	if !r.Metadata.StartTime.IsZero() && !r.Metadata.EndTime.IsZero() {
		p.Duration = r.Metadata.EndTime.Sub(r.Metadata.StartTime.Time).Round(time.Millisecond).String()
	}
	for _, cause := range slices.Sorted(maps.Keys(r.Summary.StuckNamespaces)) {
		p.Stuck = append(p.Stuck, htmlCount{cause, r.Summary.StuckNamespaces[cause]})
	}

	// A link to an object goes to the element of its first finding, or of the group that shows it.
	c := r.chains()
	anchor := map[types.UID]string{}
	for _, rw := range rows {
		for _, i := range rw.findings {
			if uid := r.Findings[i].Object.UID; anchor[uid] == "" {
				anchor[uid] = htmlID(rw.first())
			}
		}
	}
	groups := map[string]int{}
	namespaces, outcomes, clusters := map[string]bool{}, map[string]bool{}, map[string]bool{}
	hints := map[types.UID][]string{}
	for _, rw := range rows {
		f := r.Findings[rw.first()]
		// A row is part of a chain when it is below the top, or the top has blockers.
		if rw.depth > 0 || len(c.blockers[f.Object.UID]) > 0 {
			name := r.names(rw)
			if f.Cluster != "" {
				name = f.Cluster + ": " + name
			}
			p.Chains = append(p.Chains, htmlRow{ID: htmlID(rw.first()), Rule: f.Rule, Kind: indent(rw.depth) + f.Object.Kind,
				Name: name, Action: f.Action.TypeName(), Outcome: f.OutcomeText(), Reason: rw.reason, Top: rw.depth == 0})
		}
		hf := r.htmlFinding(rw.first(), anchor)
		hf.Count, hf.Reason = len(rw.findings), rw.reason
		hf.Preflight = r.chainHints(c, f.Object.UID, hints)
		if hf.Count > 1 {
			hf.Object = f.Object.Kind + " " + r.names(rw)
		}
		g, ok := groups[f.Rule]
		if !ok {
			g = len(p.Groups)
			groups[f.Rule] = g
			p.Groups = append(p.Groups, htmlGroup{Rule: f.Rule})
		}
		p.Groups[g].Findings = append(p.Groups[g].Findings, hf)
		p.Groups[g].Total += hf.Count
		namespaces[hf.Namespace], outcomes[hf.Outcome] = true, true
		if f.Cluster != "" {
			clusters[f.Cluster] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		p.Clusters = append(p.Clusters, htmlOption{name, name})
	}
	for _, g := range p.Groups {
		p.Rules = append(p.Rules, htmlOption{g.Rule, fmt.Sprintf("%s (%d)", g.Rule, g.Total)})
	}
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		label := ns
		if ns == "" {
			label = "(cluster-scoped)"
		}
		p.Namespaces = append(p.Namespaces, htmlOption{ns, label})
	}
	for _, o := range []Outcome{OutcomePlanned, OutcomeDryRun, OutcomeApplied, OutcomeFailed, OutcomeSkipped, htmlNoAction} {
		if outcomes[string(o)] {
			label := string(o)
			if o == htmlNoAction {
				label = "no action (report only)"
			}
			p.Outcomes = append(p.Outcomes, htmlOption{string(o), label})
		}
	}
	for _, e := range r.Errors {
		p.Errors = append(p.Errors, htmlError{Stage: e.Stage, Rule: dash(e.Rule), Resource: dash(e.Resource), Message: e.Message, Fatal: e.Fatal})
	}
	return p
}

// htmlFinding is the i-th finding as the page shows it; anchor maps an object's UID to the
// element of its first finding.
func (r *Report) htmlFinding(i int, anchor map[types.UID]string) htmlFinding {
	f := r.Findings[i]
	hf := htmlFinding{
		ID:         htmlID(i),
		F:          f,
		Object:     f.Object.String(),
		Cluster:    f.Cluster,
		Namespace:  htmlNamespace(f.Object),
		Outcome:    cmp.Or(string(f.Outcome), htmlNoAction),
		Action:     f.Action.TypeName(),
		Details:    htmlActionDetails(f.Action),
		Result:     f.OutcomeText(),
		PreImage:   f.Before != nil,
		HasOutcome: f.Outcome != "",
	}
	for _, b := range f.BlockedBy {
		hf.BlockedBy = append(hf.BlockedBy, htmlLink{Text: b.String(), ID: anchor[b.UID]})
	}
	return hf
}

// htmlNamespace is the namespace a finding is filtered by: its object's, or for a Namespace, the
// namespace itself, so that a namespace's filter shows why it is stuck; "" for the rest.
func htmlNamespace(o ObjectSummary) string {
	if o.Namespace == "" && o.Kind == rules.Namespaces.Kind && o.APIVersion == "v1" {
		return o.Name
	}
	return o.Namespace
}

// htmlActionDetails says what an action changes, one line each.
func htmlActionDetails(a *ActionSummary) []string {
	if a == nil {
		return nil
	}
	var out []string
	if len(a.Finalizers) > 0 {
		out = append(out, "finalizers: "+strings.Join(a.Finalizers, ", "))
	}
	for _, ref := range a.AddOwnerReferences {
		out = append(out, fmt.Sprintf("add owner: %s %s (%s)", ref.Kind, ref.Name, ref.UID))
	}
	for _, uid := range a.RemoveOwnerReferences {
		out = append(out, fmt.Sprintf("remove owner: %s", uid))
	}
	if a.GracePeriodSeconds != nil {
		out = append(out, fmt.Sprintf("grace period: %ds", *a.GracePeriodSeconds))
	}
	return out
}

func htmlID(finding int) string { return fmt.Sprintf("finding-%d", finding) }

func htmlTime(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
