package sweeper

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// ReportAPIVersion and ReportKind identify a SweepReport.
const (
	ReportAPIVersion = "sweeper.operator-sweeper.io/v1alpha1"
	ReportKind       = "SweepReport"
)

// The stages of a run, as named in ReportError.
const (
	StageInventory = "inventory"
	StageObserve   = "observe"
	StagePlan      = "plan"
	StageApply     = "apply"
	StagePush      = "push"
	StageNotify    = "notify"
)

// Report is what one run found and did. Its JSON form is the contract with whoever reads it:
// later rules add findings; fields are only ever added, and optional.
type Report struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   ReportMetadata  `json:"metadata"`
	Summary    Summary         `json:"summary"`
	Findings   []FindingResult `json:"findings"`
	Errors     []ReportError   `json:"errors"`
}

// ReportMetadata says when, where and how the run happened.
type ReportMetadata struct {
	StartTime metav1.Time `json:"startTime"`
	EndTime   metav1.Time `json:"endTime"`
	Mode      DryRunMode  `json:"mode"`
	Version   string      `json:"version"`
	Cluster   string      `json:"cluster"`
	// Shard is "i/n" when the run is shard i of a sweep split across n processes: its findings
	// are those of the objects it owns.
	Shard string `json:"shard,omitempty"`
}

// Summary counts what the run did. Planned counts actions that were not persisted: planned
// under --dry-run=client and accepted under --dry-run=server.
type Summary struct {
	// Resources is the number of resource types walked (a list that failed is in errors).
	Resources int `json:"resources"`
	// Scanned is the number of objects listed.
	Scanned  int `json:"scanned"`
	Findings int `json:"findings"`
	Planned  int `json:"planned"`
	Applied  int `json:"applied"`
	Failed   int `json:"failed"`
	Skipped  int `json:"skipped"`
	// Incomplete says the run could not observe everything, although no stage failed: an API
	// group's discovery or a list failed after retries (errors names each, stage inventory or
	// observe). Nothing is concluded from what was not fully listed, so findings may be missing.
	Incomplete bool `json:"incomplete"`
	// StuckNamespaces counts the Terminating namespaces stuck for longer than
	// --min-terminating-age by root cause: the rule of a finding at the end of a chain of
	// blockedBy that calls for an action or warns (orphaned-finalizers, dead-apiservices, …),
	// "unexplained" where there is none. A namespace with several causes counts under each.
	StuckNamespaces map[string]int `json:"stuckNamespaces,omitempty"`
}

// FindingResult is a finding and what became of its action. A finding without an action (report
// only) has no action, outcome or error.
type FindingResult struct {
	Rule     string         `json:"rule"`
	Severity rules.Severity `json:"severity"`
	Object   ObjectSummary  `json:"object"`
	Reason   string         `json:"reason"`
	Evidence []string       `json:"evidence"`
	Action   *ActionSummary `json:"action,omitempty"`
	Outcome  Outcome        `json:"outcome,omitempty"`
	// SkipReason says, as a word, why a skipped action was skipped (limit, opt-in, …).
	SkipReason Reason `json:"skipReason,omitempty"`
	// FailReason says, as a word, why a failed action failed (api-error, conflict, …).
	FailReason Reason `json:"failReason,omitempty"`
	// Error says it for a human: the error of a failed action, or what the skip reason is about.
	Error string `json:"error,omitempty"`
	// BlockedBy are the objects that keep this one stuck; their findings say why.
	BlockedBy []ObjectSummary `json:"blockedBy,omitempty"`
	// Before is the object as it was read right before the write (and, for a
	// CustomResourceDefinition deleted, its custom resources): what restore brings back.
	Before *PreImage `json:"before,omitempty"`
}

// ObjectSummary identifies the object of a finding.
type ObjectSummary struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
}

// ActionSummary is an action as data in the report.
type ActionSummary struct {
	Type                  string                  `json:"type"`
	Finalizers            []string                `json:"finalizers,omitempty"`
	AddOwnerReferences    []metav1.OwnerReference `json:"addOwnerReferences,omitempty"`
	RemoveOwnerReferences []types.UID             `json:"removeOwnerReferences,omitempty"`
	GracePeriodSeconds    *int64                  `json:"gracePeriodSeconds,omitempty"`
}

// ReportError is a problem that kept part of the run from being done.
type ReportError struct {
	// Stage is where it happened: inventory, observe, plan, apply or push.
	Stage string `json:"stage"`
	// Rule is the rule that failed, for a problem of one rule.
	Rule string `json:"rule,omitempty"`
	// Resource is what could not be read: an API group version (inventory) or a list (observe).
	Resource string `json:"resource,omitempty"`
	Message  string `json:"message"`
	// Fatal says the problem fails the run (exit 1): a whole stage failed, a rule failed, the run
	// was interrupted, or a push that --require-push requires failed.
	Fatal bool `json:"fatal,omitempty"`
}

func newReport(start time.Time, opts Options) *Report {
	return &Report{
		APIVersion: ReportAPIVersion,
		Kind:       ReportKind,
		Metadata: ReportMetadata{
			StartTime: metav1.NewTime(start),
			Mode:      opts.DryRun,
			Version:   opts.Version,
			Cluster:   opts.Cluster,
			Shard:     opts.Shard,
		},
		Findings: []FindingResult{},
		Errors:   []ReportError{},
	}
}

func (r *Report) addFinding(f rules.Finding, res Result) {
	fr := findingResult(f, res)
	r.Summary.Findings++
	switch {
	case fr.Action == nil:
	case fr.Outcome == OutcomePlanned, fr.Outcome == OutcomeDryRun:
		r.Summary.Planned++
	case fr.Outcome == OutcomeApplied:
		r.Summary.Applied++
	case fr.Outcome == OutcomeFailed:
		r.Summary.Failed++
	case fr.Outcome == OutcomeSkipped:
		r.Summary.Skipped++
	}
	r.Findings = append(r.Findings, fr)
}

// findingResult is a finding and what became of its action, as the report shows it.
func findingResult(f rules.Finding, res Result) FindingResult {
	fr := FindingResult{
		Rule:     f.Rule,
		Severity: f.Severity,
		Object:   summarizeObject(f.Object),
		Reason:   f.Reason,
		Evidence: f.Evidence,
	}
	for _, ref := range append(slices.Clone(f.BlockedBy), res.BlockedBy...) {
		fr.BlockedBy = append(fr.BlockedBy, summarizeObject(ref))
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
	fr.Action = summarizeAction(action)
	fr.Outcome = res.Outcome
	fr.Error = res.Detail
	fr.Before = res.Before
	switch res.Outcome {
	case OutcomeFailed:
		fr.FailReason = res.Reason
	case OutcomeSkipped:
		fr.SkipReason = res.Reason
	}
	return fr
}

func summarizeObject(ref rules.ObjectRef) ObjectSummary {
	return ObjectSummary{APIVersion: ref.APIVersion(), Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}
}

func summarizeAction(action rules.Action) *ActionSummary {
	s := &ActionSummary{Type: action.Type()}
	switch act := action.(type) {
	case rules.RemoveFinalizers:
		s.Finalizers = act.Finalizers
	case rules.SetOwnerReferences:
		s.AddOwnerReferences = act.Add
		s.RemoveOwnerReferences = act.Remove
	case rules.Delete:
		s.GracePeriodSeconds = act.GracePeriodSeconds
	case addFinalizers:
		s.Finalizers = act.finalizers
	case setOwners:
		s.AddOwnerReferences = act.change.Add
		s.RemoveOwnerReferences = act.change.Remove
	}
	return s
}

// Failed reports whether an action failed or a problem is fatal.
func (r *Report) Failed() bool {
	return r.Summary.Failed > 0 || slices.ContainsFunc(r.Errors, func(e ReportError) bool { return e.Fatal })
}

// failure describes in one line why the run counts as failed.
func (r *Report) failure() string {
	var parts []string
	for _, e := range r.Errors {
		switch {
		case e.Fatal && e.Stage == StagePush:
			parts = append(parts, fmt.Sprintf("%s (--%s)", e.Message, FlagRequirePush))
		case e.Fatal && e.Stage == StageNotify:
			parts = append(parts, fmt.Sprintf("%s: %s (--%s)", e.Stage, e.Message, FlagRequireNotify))
		case e.Fatal:
			parts = append(parts, e.Stage+": "+e.Message)
		}
	}
	if r.Summary.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d actions failed", r.Summary.Failed))
	}
	return strings.Join(parts, "; ")
}

// Print writes the report in the given format.
func (r *Report) Print(w io.Writer, format OutputFormat) error {
	switch format {
	case OutputJSON:
		return r.printJSON(w)
	case OutputYAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode report as YAML: %w", err)
		}
		_, err = w.Write(data)
		return err
	case OutputMarkdown:
		return r.printMarkdown(w)
	case OutputHTML:
		return r.printHTML(w)
	default:
		return r.printTable(w)
	}
}

// writeFile writes the JSON report next to file and renames it into place, so that a reader never
// sees half a report, and an earlier report stays until a new one is whole.
func (r *Report) writeFile(file string) error {
	return writeAtomically(file, r.printJSON)
}

// writeAtomically writes a file next to file with write, syncs it, renames it into place and
// syncs the directory: a reader sees the old content or the new, whole, and so does a crash.
func writeAtomically(file string, write func(io.Writer) error) error {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, there is nothing left to remove
	if err := errors.Join(write(tmp), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func (r *Report) printJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// printTable prints a kubectl-like table, then one summary line and the errors, if any.
func (r *Report) printTable(w io.Writer) error {
	// The same tabwriter settings as kubectl's printers.
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	if len(r.Findings) == 0 {
		fmt.Fprintln(tw, "No findings.")
	} else {
		fmt.Fprintln(tw, "RULE\tKIND\tNAMESPACE/NAME\tACTION\tOUTCOME\tREASON")
		for _, row := range r.rows() {
			f := r.Findings[row.finding]
			fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\n", f.Rule, indent(row.depth), f.Object.Kind, f.Object.namespacedName(), f.Action.typeName(), f.outcome(), f.Reason)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(tw, "\nSTAGE\tRULE\tRESOURCE\tERROR")
		for _, e := range r.Errors {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.stage(), dash(e.Rule), dash(e.Resource), e.Message)
		}
	}
	fmt.Fprintf(tw, "\n%s\n", r.summaryLine())
	return tw.Flush()
}

func (r *Report) summaryLine() string {
	s := r.Summary
	errors := fmt.Sprintf("%d errors", len(r.Errors))
	if s.Incomplete {
		errors += " (incomplete: not everything could be listed)"
	}
	return fmt.Sprintf("%d findings (%d planned, %d applied, %d failed, %d skipped) in %d objects of %d resource types; %s;%s cluster %s, mode %s, %s.",
		s.Findings, s.Planned, s.Applied, s.Failed, s.Skipped, s.Scanned, s.Resources, errors, r.stuckNamespacesLine(),
		dash(r.Metadata.Cluster), r.Metadata.Mode, r.Metadata.EndTime.Sub(r.Metadata.StartTime.Time).Round(time.Millisecond))
}

// stuckNamespacesLine is " stuck namespaces by root cause: orphaned-finalizers 2, dead-apiservices 1;",
// or nothing.
func (r *Report) stuckNamespacesLine() string {
	if len(r.Summary.StuckNamespaces) == 0 {
		return ""
	}
	var parts []string
	for _, cause := range slices.Sorted(maps.Keys(r.Summary.StuckNamespaces)) {
		parts = append(parts, fmt.Sprintf("%s %d", cause, r.Summary.StuckNamespaces[cause]))
	}
	return " stuck namespaces by root cause: " + strings.Join(parts, ", ") + ";"
}

// indent marks a row below the first of its chain: "└ " one level down, more for each further.
func indent(depth int) string {
	if depth == 0 {
		return ""
	}
	return strings.Repeat("  ", depth-1) + "└ "
}

func (r *Report) printMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep report\n\n%s\n\n", r.summaryLine())
	fmt.Fprintf(&b, "| started | ended | version |\n|---|---|---|\n| %s | %s | %s |\n\n",
		r.Metadata.StartTime.UTC().Format(time.RFC3339), r.Metadata.EndTime.UTC().Format(time.RFC3339), md(r.Metadata.Version))
	b.WriteString("## Findings\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	} else {
		b.WriteString("| rule | severity | object | action | outcome | reason | evidence |\n|---|---|---|---|---|---|---|\n")
		for _, row := range r.rows() {
			f := r.Findings[row.finding]
			fmt.Fprintf(&b, "| %s | %s | %s%s %s | %s | %s | %s | %s |\n", md(f.Rule), f.Severity, indent(row.depth), md(f.Object.Kind), md(f.Object.namespacedName()),
				md(f.Action.typeName()), md(f.outcome()), md(f.Reason), md(strings.Join(f.Evidence, "; ")))
		}
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n| stage | rule | resource | error |\n|---|---|---|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", e.stage(), md(dash(e.Rule)), md(dash(e.Resource)), md(e.Message))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String names the object as the report's table does: "Kind namespace/name".
func (o ObjectSummary) String() string { return o.Kind + " " + o.namespacedName() }

func (o ObjectSummary) namespacedName() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

func (a *ActionSummary) typeName() string {
	if a == nil {
		return "-"
	}
	return a.Type
}

func (f FindingResult) outcome() string {
	switch {
	case f.Outcome == "":
		return "-"
	case f.SkipReason != "" || f.FailReason != "":
		return string(f.Outcome) + " (" + string(cmp.Or(f.SkipReason, f.FailReason)) + ")"
	default:
		return string(f.Outcome)
	}
}

// stage names the stage, and says when the problem failed the run.
func (e ReportError) stage() string {
	if e.Fatal {
		return e.Stage + " (fatal)"
	}
	return e.Stage
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// md escapes a table cell for Markdown.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
