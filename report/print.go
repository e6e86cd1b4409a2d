package report

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

	"sigs.k8s.io/yaml"
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

// Print writes the report in the given format.
func (r *Report) Print(w io.Writer, format Format) error {
	switch format {
	case JSON:
		return r.printJSON(w)
	case YAML:
		data, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode report as YAML: %w", err)
		}
		_, err = w.Write(data)
		return err
	case Markdown:
		return r.printMarkdown(w)
	case HTML:
		return r.printHTML(w)
	default:
		return r.printTable(w)
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
			fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\n", f.Rule, indent(row.depth), f.Object.Kind, f.Object.NamespacedName(), f.Action.TypeName(), f.OutcomeText(), f.Reason)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintln(tw, "\nSTAGE\tRULE\tRESOURCE\tERROR")
		for _, e := range r.Errors {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.StageText(), dash(e.Rule), dash(e.Resource), e.Message)
		}
	}
	fmt.Fprintf(tw, "\n%s\n", r.SummaryLine())
	return tw.Flush()
}

// SummaryLine is the report in one line: the counts, the errors, the stuck namespaces, where,
// how and how long.
func (r *Report) SummaryLine() string {
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
	fmt.Fprintf(&b, "# Sweep report\n\n%s\n\n", r.SummaryLine())
	fmt.Fprintf(&b, "| started | ended | version |\n|---|---|---|\n| %s | %s | %s |\n\n",
		r.Metadata.StartTime.UTC().Format(time.RFC3339), r.Metadata.EndTime.UTC().Format(time.RFC3339), md(r.Metadata.Version))
	b.WriteString("## Findings\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("No findings.\n")
	} else {
		b.WriteString("| rule | severity | object | action | outcome | reason | evidence |\n|---|---|---|---|---|---|---|\n")
		for _, row := range r.rows() {
			f := r.Findings[row.finding]
			fmt.Fprintf(&b, "| %s | %s | %s%s %s | %s | %s | %s | %s |\n", md(f.Rule), f.Severity, indent(row.depth), md(f.Object.Kind), md(f.Object.NamespacedName()),
				md(f.Action.TypeName()), md(f.OutcomeText()), md(f.Reason), md(strings.Join(f.Evidence, "; ")))
		}
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n| stage | rule | resource | error |\n|---|---|---|---|\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", e.StageText(), md(dash(e.Rule)), md(dash(e.Resource)), md(e.Message))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
