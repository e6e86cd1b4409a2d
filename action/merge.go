package action

import (
	"context"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// Merge is `operator-sweeper merge REPORT…`: the reports of separate runs (one per cluster: their
// CronJobs' logs, or reports shipped elsewhere) as one, in every output format.
type Merge struct {
	// Options are merge's, built and checked by the options package.
	Options *options.Options
	// Files hold the reports; "-" is standard input.
	Files []string
}

// Run reads every report. Printed, the Result is them as one: JSON and YAML as a FleetReport,
// every cluster's report whole; the table, Markdown and HTML as one merged report, each finding
// under its cluster. A file that holds no report, or two reports of one cluster, is bad input. It
// ends the run with ErrIncomplete when a cluster's run failed, ErrFindings with --fail-on-findings
// and findings.
func (a *Merge) Run(context.Context) (*Result, error) {
	var reports []*report.Report
	for _, file := range a.Files {
		found, err := readReports(file)
		if err != nil {
			return nil, err
		}
		reports = append(reports, found...)
	}
	return &Result{output: a.Options.OutputOptions, fleet: true, reports: reports}, nil
}

// readReports reads the reports of a file ("-": standard input): a FleetReport's clusters, or a
// SweepReport, whole or the last printed among log lines.
func readReports(file string) ([]*report.Report, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, input.Errorf("merge: %w", err)
	}
	var fleet report.Fleet
	if err := yaml.Unmarshal(data, &fleet); err == nil && fleet.Kind == report.FleetKind {
		return fleet.Clusters, nil
	}
	r, ok := report.Find(data)
	if !ok {
		return nil, input.Errorf("merge: %s holds no %s or %s", file, report.Kind, report.FleetKind)
	}
	return []*report.Report{r}, nil
}
