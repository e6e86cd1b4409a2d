package report

import (
	"bufio"
	"cmp"
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
)

// Format is how a report is printed.
type Format string

// The report formats.
const (
	Table    Format = "table"
	JSON     Format = "json"
	YAML     Format = "yaml"
	Markdown Format = "markdown"
	// HTML is one self-contained page, with filters.
	HTML Format = "html"
)

// Formats are every format, as --output takes them.
func Formats() []Format { return []Format{Table, JSON, YAML, Markdown, HTML} }

// Print writes the report in the given format. The table, Markdown and HTML show similar
// findings (the same rule, kind, action, outcome and verdict) as one row; JSON and
// YAML list every finding.
func (r *Report) Print(w io.Writer, format Format) error { return r.print(w, format, false) }

// PrintEach is Print with every finding a row of its own (--no-group).
func (r *Report) PrintEach(w io.Writer, format Format) error { return r.print(w, format, true) }

func (r *Report) print(w io.Writer, format Format, each bool) error {
	switch format {
	case JSON:
		return r.printJSON(w)
	case YAML:
		return r.printYAML(w)
	case Markdown:
		return r.printMarkdown(w, r.shownRows(each))
	case HTML:
		return r.printHTML(w, r.shownRows(each))
	default:
		return r.printTable(w, r.shownRows(each))
	}
}

// WriteFile writes the JSON report next to file and renames it into place, so that a reader never
// sees half a report, and an earlier report stays until a new one is whole.
func (r *Report) WriteFile(file string) error {
	return WriteAtomically(file, r.printJSON)
}

// WriteAtomically writes a file next to file with write, syncs it, renames it into place and
// syncs the directory: a reader sees the old content or the new, whole, and so does a crash.
func WriteAtomically(file string, write func(io.Writer) error) error {
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

// printTable prints a kubectl-like table of rows, then one summary line and the errors, if any.
func (r *Report) printTable(w io.Writer, rows []shownRow) error {
	// The same tabwriter settings as kubectl's printers.
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	// A fleet's merged report names each row's cluster first.
	cluster := func(name string) string { return "" }
	if r.clustered() {
		cluster = func(name string) string { return name + "\t" }
	}
	if len(r.Findings) == 0 {
		fmt.Fprintln(tw, "No findings.")
	} else {
		fmt.Fprintln(tw, cluster("CLUSTER")+"RULE\tKIND\tNAMESPACE/NAME\tACTION\tOUTCOME\tREASON")
		for _, row := range rows {
			f := r.Findings[row.first()]
			fmt.Fprintf(tw, "%s%s\t%s%s\t%s\t%s\t%s\t%s\n", cluster(f.Cluster), f.Rule, indent(row.depth), f.Object.Kind, r.names(row), f.Action.TypeName(), f.OutcomeText(), row.reason)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(tw, "\n"+cluster("CLUSTER")+"STAGE\tRULE\tRESOURCE\tERROR")
		for _, e := range r.Errors {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", cluster(e.Cluster), e.StageText(), dash(e.Rule), dash(e.Resource), e.Message)
		}
	}
	fmt.Fprintf(tw, "\n%s\n", r.SummaryLine())
	if line := groupedLine(len(r.Findings), rows); line != "" {
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// groupedLine says how many findings the rows show, when some show several: "50000 findings in
// 14 rows of similar findings (--no-group shows each)"; nothing otherwise.
func groupedLine(findings int, rows []shownRow) string {
	if len(rows) == findings {
		return ""
	}
	return fmt.Sprintf("%d findings in %d rows of similar findings (--no-group shows each).", findings, len(rows))
}

// SummaryLine is the report in one line: the counts, the errors, the stuck namespaces, where,
// how and how long.
func (r *Report) SummaryLine() string {
	s := r.Summary
	errors := fmt.Sprintf("%d errors", len(r.Errors))
	if s.Incomplete {
		errors += " (incomplete: not everything could be listed)"
	}
	return fmt.Sprintf("%d findings (%d planned, %d applied, %d failed, %d skipped) in %d objects of %d resource types; %s;%s%s cluster %s, mode %s, %s.",
		s.Findings, s.Planned, s.Applied, s.Failed, s.Skipped, s.Scanned, s.Resources, errors, r.heldBackLine(), r.stuckNamespacesLine(),
		dash(r.Metadata.Cluster), r.Metadata.Mode, r.Metadata.EndTime.Sub(r.Metadata.StartTime.Time).Round(time.Millisecond))
}

// heldBackLine is " 2000 held back by --max-actions, 40 more runs at this cap;", or nothing.
func (r *Report) heldBackLine() string {
	s := r.Summary
	if s.HeldBack == 0 {
		return ""
	}
	runs := "runs"
	if s.RunsToFinish == 1 {
		runs = "run"
	}
	return fmt.Sprintf(" %d held back by --max-actions, %d more %s at this cap;", s.HeldBack, s.RunsToFinish, runs)
}

// stuckNamespacesLine is " stuck namespaces by root cause: <rule> 2, <other rule> 1;",
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

func (r *Report) printMarkdown(w io.Writer, rows []shownRow) error {
	b := bufio.NewWriter(w)
	// A fleet's merged report names each row's cluster first.
	cluster := func(string) string { return "" }
	if r.clustered() {
		cluster = func(name string) string { return "| " + name + " " }
	}
	fmt.Fprintf(b, "# Sweep report\n\n%s\n\n", r.SummaryLine())
	if line := groupedLine(len(r.Findings), rows); line != "" {
		fmt.Fprintf(b, "%s\n\n", line)
	}
	fmt.Fprintf(b, "| started | ended | version |\n|---|---|---|\n| %s | %s | %s |\n\n",
		r.Metadata.StartTime.UTC().Format(time.RFC3339), r.Metadata.EndTime.UTC().Format(time.RFC3339), md(r.Metadata.Version))
	b.WriteString("## Findings\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	} else {
		b.WriteString(cluster("cluster") + "| rule | severity | object | action | outcome | reason | evidence |\n" + cluster("---") + "|---|---|---|---|---|---|---|\n")
		for _, row := range rows {
			f := r.Findings[row.first()]
			evidence := strings.Join(f.Evidence, "; ")
			if len(row.findings) > 1 {
				evidence = "of " + f.Object.Name + ": " + evidence
			}
			fmt.Fprintf(b, "%s| %s | %s | %s%s %s | %s | %s | %s | %s |\n", cluster(md(f.Cluster)), md(f.Rule), f.Severity, indent(row.depth), md(f.Object.Kind), md(r.names(row)),
				md(f.Action.TypeName()), md(f.OutcomeText()), md(row.reason), md(evidence))
		}
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n" + cluster("cluster") + "| stage | rule | resource | error |\n" + cluster("---") + "|---|---|---|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(b, "%s| %s | %s | %s | %s |\n", cluster(md(e.Cluster)), e.StageText(), md(dash(e.Rule)), md(dash(e.Resource)), md(e.Message))
		}
	}
	return b.Flush()
}

// OutcomeText is the outcome with its skip or fail reason: "skipped (limit)"; "-" for none.
func (f FindingResult) OutcomeText() string {
	switch {
	case f.Outcome == "":
		return "-"
	case f.SkipReason != "" || f.FailReason != "":
		return string(f.Outcome) + " (" + string(cmp.Or(f.SkipReason, f.FailReason)) + ")"
	default:
		return string(f.Outcome)
	}
}

// StageText names the stage, and says when the problem failed the run.
func (e Error) StageText() string {
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
