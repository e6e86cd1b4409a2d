package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// mergeCommand is `operator-sweeper merge REPORT…`: the reports of separate runs (one per cluster:
// their CronJobs' logs, or reports shipped elsewhere) as one, in every output format.
type mergeCommand struct {
	files []string
}

func (*mergeCommand) name() string  { return "merge" }
func (*mergeCommand) usage() string { return "merge REPORT... [flags]" }

func (*mergeCommand) groups(o *options.Options) []options.Group {
	return []options.Group{&o.OutputOptions, &o.LogOptions}
}

func (*mergeCommand) addFlags(*pflag.FlagSet) {}

func (c *mergeCommand) setArgs(args []string) error {
	if len(args) == 0 {
		return errors.New("merge takes the reports to combine: files of JSON or YAML reports, or of Job logs that print one (- for standard input)")
	}
	c.files = args
	return nil
}

// run reads every report, and prints them as one: JSON and YAML as a FleetReport, every
// cluster's report whole; the table, Markdown and HTML as one merged report, each finding under
// its cluster. A file that holds no report, or two reports of one cluster, is bad input. It exits
// 1 when a cluster's run failed, 3 with --fail-on-findings and findings.
func (c *mergeCommand) run(_ context.Context, o *options.Options, s streams) error {
	var reports []*report.Report
	for _, file := range c.files {
		found, err := readReports(file)
		if err != nil {
			return err
		}
		reports = append(reports, found...)
	}
	return finishFleet(o.OutputOptions, reports, s.out)
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
		return nil, sweeper.InputErrorf("merge: %w", err)
	}
	var fleet report.Fleet
	if err := yaml.Unmarshal(data, &fleet); err == nil && fleet.Kind == report.FleetKind {
		return fleet.Clusters, nil
	}
	r, ok := report.Find(data)
	if !ok {
		return nil, sweeper.InputErrorf("merge: %s holds no %s or %s", file, report.Kind, report.FleetKind)
	}
	return []*report.Report{r}, nil
}
