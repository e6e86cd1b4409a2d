package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// sweepCommand is `operator-sweeper [flags]`: one sweep of the cluster, its report printed, sent
// and pushed.
type sweepCommand struct{}

func (*sweepCommand) name() string  { return "" }
func (*sweepCommand) usage() string { return "[flags]" }
func (*sweepCommand) short() string {
	return "Find what uninstalled or broken operators left behind, explain it, and with --dry-run=none clean it up"
}

func (*sweepCommand) groups(o *options.Options) []options.Group { return o.Groups() }

func (*sweepCommand) addFlags(*pflag.FlagSet) {}

func (*sweepCommand) setArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: operator-sweeper takes flags only, explain TYPE/NAME, preflight TYPE/NAME, restore --from REPORT|DIR, or merge REPORT [REPORT...]", args[0])
	}
	return nil
}

// run sweeps, notifies and pushes the metrics (action.Sweep), and prints the report.
func (*sweepCommand) run(ctx context.Context, o *options.Options, s streams) error {
	if o.DryRun == report.DryRunNone {
		collectOftenWhileWriting()
	}
	return s.print((&action.Sweep{Options: o, Log: s.err}).Run(ctx))
}
