package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// sweepCommand is `operator-sweeper [flags]`: one sweep of the cluster, its report printed, sent
// and pushed.
type sweepCommand struct{}

func (*sweepCommand) name() string  { return "" }
func (*sweepCommand) usage() string { return "[flags]" }

func (*sweepCommand) groups(o *options.Options) []options.Group { return o.Groups() }

func (*sweepCommand) addFlags(*pflag.FlagSet) {}

func (*sweepCommand) setArgs(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q: operator-sweeper takes flags only, explain TYPE/NAME, preflight TYPE/NAME, restore --from REPORT|DIR, or merge REPORT [REPORT...]", args[0])
	}
	return nil
}

// run sweeps, then notifies, pushes the metrics, prints the report and writes the report file.
func (*sweepCommand) run(ctx context.Context, o *options.Options, s streams) error {
	ruleSet, err := o.RuleSet()
	if err != nil {
		return err
	}
	if err := o.ValidateFleet(); err != nil {
		return &sweeper.InputError{Err: err}
	}
	if o.DryRun == report.DryRunNone {
		collectOftenWhileWriting()
	}
	if o.Fleet() {
		return sweepFleet(ctx, o, ruleSet, s)
	}
	conn, err := connect(ctx, o, s)
	if err != nil {
		return err
	}
	defer conn.cancel()
	if err := conn.ensureState(o, o.DryRun == report.DryRunNone); err != nil {
		return err
	}
	r := conn.sweep(o.EngineConfig(), ruleSet)
	// The notification and the push have deadlines of their own: a run that ran out of time still
	// says that it failed.
	sendToSinks(ctx, o, r, ruleSet, conn.logger)
	return finish(o.OutputOptions, r, s.out, o.Printer(r))
}
