package action

import (
	"context"
	"io"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
)

// Sweep is `operator-sweeper [flags]`: one sweep of the cluster, or, with --contexts or
// --all-contexts, a Fleet's; its report notified and pushed, and returned to print.
type Sweep struct {
	// Options are the sweep's, built and checked by the options package.
	Options *options.Options
	// Log is where the logs, and the progress on a terminal, go.
	Log io.Writer
}

// Run sweeps, then notifies and pushes the metrics; the report is the Result's.
func (a *Sweep) Run(ctx context.Context) (*Result, error) {
	o := a.Options
	ruleSet, err := o.RuleSet()
	if err != nil {
		return nil, err
	}
	if err := o.ValidateFleet(); err != nil {
		return nil, &input.Error{Err: err}
	}
	if o.Fleet() {
		return (&Fleet{Options: o, Log: a.Log}).sweep(ctx, ruleSet)
	}
	conn, err := connect(ctx, o, a.Log)
	if err != nil {
		return nil, err
	}
	defer conn.cancel()
	if err := conn.ensureState(o, o.DryRun == report.DryRunNone); err != nil {
		return nil, err
	}
	r := conn.sweep(o.EngineConfig(), ruleSet)
	// The notification and the push have deadlines of their own: a run that ran out of time still
	// says that it failed.
	sendToSinks(ctx, o, r, ruleSet, conn.logger)
	return single(o.OutputOptions, r), nil
}
