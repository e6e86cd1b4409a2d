package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// FleetKind is the kind of a report of several clusters.
const FleetKind = "FleetReport"

// Fleet is the reports of several clusters, one per cluster, and what they say together. Its
// JSON and YAML hold every cluster's report whole; the table, Markdown and HTML show one merged
// report, each finding and error under its cluster.
type Fleet struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Summary    FleetSummary `json:"summary"`
	Clusters   []*Report    `json:"clusters"`
}

// FleetSummary counts the findings and outcomes of every cluster, and names the clusters whose
// run failed or could not list everything.
type FleetSummary struct {
	Clusters int `json:"clusters"`
	Findings int `json:"findings"`
	Planned  int `json:"planned"`
	Applied  int `json:"applied"`
	Failed   int `json:"failed"`
	Skipped  int `json:"skipped"`
	// HeldBack counts the actions --max-actions held back in every cluster; RunsToFinish is the
	// most runs one cluster needs to take its own.
	HeldBack     int      `json:"heldBack,omitempty"`
	RunsToFinish int      `json:"runsToFinish,omitempty"`
	Incomplete   []string `json:"incomplete,omitempty"`
	FailedRuns   []string `json:"failedRuns,omitempty"`
}

// NewFleet is the fleet of reports, in the order of their clusters' names. Two reports of one
// cluster name are an error: a finding would not say which it is.
func NewFleet(reports []*Report) (*Fleet, error) {
	f := &Fleet{APIVersion: APIVersion, Kind: FleetKind, Clusters: slices.Clone(reports)}
	slices.SortStableFunc(f.Clusters, func(a, b *Report) int { return cmp.Compare(a.Metadata.Cluster, b.Metadata.Cluster) })
	for i, r := range f.Clusters {
		if i > 0 && f.Clusters[i-1].Metadata.Cluster == r.Metadata.Cluster {
			return nil, fmt.Errorf("two reports of cluster %q: name each cluster apart (--cluster)", r.Metadata.Cluster)
		}
		s := r.Summary
		f.Summary.Clusters++
		f.Summary.Findings += s.Findings
		f.Summary.Planned += s.Planned
		f.Summary.Applied += s.Applied
		f.Summary.Failed += s.Failed
		f.Summary.Skipped += s.Skipped
		f.Summary.HeldBack += s.HeldBack
		f.Summary.RunsToFinish = max(f.Summary.RunsToFinish, s.RunsToFinish)
		if s.Incomplete {
			f.Summary.Incomplete = append(f.Summary.Incomplete, r.Metadata.Cluster)
		}
		if r.Failed() {
			f.Summary.FailedRuns = append(f.Summary.FailedRuns, r.Metadata.Cluster)
		}
	}
	return f, nil
}

// Merged is one report of the fleet's findings and errors, each under its cluster, counted
// together: what the table, Markdown and HTML show.
func (f *Fleet) Merged() *Report {
	var names []string
	for _, r := range f.Clusters {
		names = append(names, r.Metadata.Cluster)
	}
	m := &Report{APIVersion: APIVersion, Kind: Kind, Findings: []FindingResult{}, Errors: []Error{}}
	m.Metadata.Cluster = fmt.Sprintf("%d clusters (%s)", len(names), strings.Join(names, ", "))
	for i, r := range f.Clusters {
		if i == 0 || r.Metadata.StartTime.Before(&m.Metadata.StartTime) {
			m.Metadata.StartTime = r.Metadata.StartTime
		}
		if r.Metadata.EndTime.After(m.Metadata.EndTime.Time) {
			m.Metadata.EndTime = r.Metadata.EndTime
		}
		if m.Metadata.Mode == "" || m.Metadata.Mode == r.Metadata.Mode {
			m.Metadata.Mode = r.Metadata.Mode
		} else {
			m.Metadata.Mode = "mixed"
		}
		m.Metadata.Version = cmp.Or(m.Metadata.Version, r.Metadata.Version)
		m.Summary.Resources = max(m.Summary.Resources, r.Summary.Resources)
		m.Summary.Scanned += r.Summary.Scanned
		m.Summary.Incomplete = m.Summary.Incomplete || r.Summary.Incomplete
		for _, finding := range r.Findings {
			finding.Cluster = r.Metadata.Cluster
			m.Findings = append(m.Findings, finding)
		}
		for _, e := range r.Errors {
			e.Cluster = r.Metadata.Cluster
			m.Errors = append(m.Errors, e)
		}
		for cause, n := range r.Summary.StuckNamespaces {
			if m.Summary.StuckNamespaces == nil {
				m.Summary.StuckNamespaces = map[string]int{}
			}
			m.Summary.StuckNamespaces[cause] += n
		}
	}
	m.recount()
	return m
}

// Failed reports whether any cluster's run failed.
func (f *Fleet) Failed() bool { return len(f.Summary.FailedRuns) > 0 }

// Print writes the fleet in the given format: JSON and YAML, every cluster's report whole; the
// others, the merged report, then a summary line per cluster. each shows every finding on a row
// of its own.
func (f *Fleet) Print(w io.Writer, format Format, each bool) error {
	switch format {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	case YAML:
		data, err := yaml.Marshal(f)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if err := f.Merged().print(w, format, each); err != nil {
		return err
	}
	if format != Table {
		return nil
	}
	for _, r := range f.Clusters {
		if _, err := fmt.Fprintf(w, "%s: %s\n", r.Metadata.Cluster, r.SummaryLine()); err != nil {
			return err
		}
	}
	return nil
}

// clustered reports whether the report's findings or errors carry clusters: a fleet's merged
// report, whose tables get a cluster column.
func (r *Report) clustered() bool {
	return slices.ContainsFunc(r.Findings, func(f FindingResult) bool { return f.Cluster != "" }) ||
		slices.ContainsFunc(r.Errors, func(e Error) bool { return e.Cluster != "" })
}
