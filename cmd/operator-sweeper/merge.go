package main

import (
	"context"
	"errors"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
)

// mergeCommand is `operator-sweeper merge REPORT…`: the reports of separate runs (one per cluster:
// their CronJobs' logs, or reports shipped elsewhere) as one, in every output format.
type mergeCommand struct {
	files []string
}

func (*mergeCommand) name() string  { return "merge" }
func (*mergeCommand) usage() string { return "merge REPORT... [flags]" }
func (*mergeCommand) short() string { return "Join the reports of separate runs into one" }

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

// run reads every report (action.Merge), and prints them as one.
func (c *mergeCommand) run(ctx context.Context, o *options.Options, s streams) error {
	return s.print((&action.Merge{Options: o, Files: c.files}).Run(ctx))
}
