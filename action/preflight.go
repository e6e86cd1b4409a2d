package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/preflight"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// drainInterval is how often a drain lists what it deleted again.
const drainInterval = 2 * time.Second

// Preflight is `operator-sweeper preflight TYPE/NAME -n NAMESPACE`: what uninstalling an operator
// now would leave blocked, and, with --drain, its custom resources deleted while it runs; with
// --contexts or --all-contexts, in each cluster of a fleet.
type Preflight struct {
	// Options are preflight's, built and checked by the options package.
	Options *options.Options
	// Target is what would be uninstalled.
	Target preflight.Target
	// Log is where the logs, and the progress on a terminal, go.
	Log io.Writer
}

// Run resolves the target, sweeps the cluster with rule preflight alone, and drains if asked.
// Printed, the Result ends the run: nil when nothing would be blocked (or, drained, every custom
// resource went), ErrFindings when something would, ErrIncomplete when the cluster was not read
// fully or a drained object stayed. With --contexts or --all-contexts, each cluster is preflighted
// so, and the run ends as the worst.
func (a *Preflight) Run(ctx context.Context) (*Result, error) {
	o := a.Options
	// The finalizer mappings are the sweep's, from --config; preflight takes no rule flags.
	settings, err := o.RuleOptions.Settings(0)
	if err != nil {
		return nil, &input.Error{Err: err}
	}
	if err := o.ValidateFleet(); err != nil {
		return nil, &input.Error{Err: err}
	}
	if o.Fleet() {
		return a.runFleet(ctx, settings)
	}
	conn, err := connect(ctx, o, a.Log)
	if err != nil {
		return nil, err
	}
	defer conn.cancel()
	uninstall, err := preflight.Resolve(conn.ctx, conn.clients, a.Target)
	if err != nil {
		return nil, err
	}
	if err := conn.ensureState(o, o.Drain && o.DryRun == report.DryRunNone); err != nil {
		return nil, err
	}
	r, verdict := preflightCluster(conn, o, settings, uninstall)
	res := single(o.OutputOptions, r)
	res.output.FailOnFindings = false // the verdict says
	res.verdict = verdict
	return res, nil
}

// runFleet preflights every context: one where the target is not installed has nothing to
// preflight, which its report says; a target installed nowhere is bad input.
func (a *Preflight) runFleet(ctx context.Context, settings rules.Settings) (*Result, error) {
	o := a.Options
	members, err := connectFleet(ctx, o, a.Log, o.Drain && o.DryRun == report.DryRunNone)
	if err != nil {
		return nil, err
	}
	eachCluster(members, o.ClusterConcurrency, func(m *member) {
		uninstall, err := preflight.Resolve(m.conn.ctx, m.conn.clients, a.Target)
		if inputErr := (*input.Error)(nil); errors.As(err, &inputErr) {
			m.absent = err.Error()
			m.notRun(m.absent+": nothing to preflight in this cluster", false)
			return
		}
		if err != nil {
			m.unreachable(err)
			return
		}
		m.report, m.verdict = preflightCluster(m.conn, &m.opts, settings, uninstall)
	})
	var absent []string
	for _, m := range members {
		if m.absent != "" {
			absent = append(absent, m.opts.Cluster+": "+m.absent)
		}
	}
	if len(absent) == len(members) {
		return nil, input.Errorf("%s is in no cluster: %s", a.Target, strings.Join(absent, "; "))
	}
	res := &Result{output: o.OutputOptions, fleet: true, reports: reports(members)}
	res.output.FailOnFindings = false // the verdicts say
	// The worst of the clusters': not read fully, or not drained, over findings.
	var incomplete, blocked []string
	for _, m := range members {
		switch {
		case errors.Is(m.verdict, ErrIncomplete):
			incomplete = append(incomplete, m.opts.Cluster)
		case errors.Is(m.verdict, ErrFindings):
			blocked = append(blocked, m.opts.Cluster)
		}
	}
	switch {
	case len(incomplete) > 0:
		res.verdict = fmt.Errorf("%w: in %s (see the report): do not uninstall there yet", ErrIncomplete, strings.Join(incomplete, ", "))
	case len(blocked) > 0:
		res.verdict = fmt.Errorf("%w: uninstalling now would leave objects blocked in %s (see the report)", ErrFindings, strings.Join(blocked, ", "))
	}
	return res, nil
}

// preflightCluster sweeps one cluster with rule preflight alone for uninstall, drains if asked,
// and says how the preflight ends: ErrFindings when an uninstall would leave objects blocked,
// ErrIncomplete when the cluster was not read fully or a drained object stayed.
func preflightCluster(conn *connection, o *options.Options, settings rules.Settings, uninstall rules.Uninstall) (*report.Report, error) {
	conn.logger.InfoContext(conn.ctx, "preflight", "target", uninstall.Target, "workloads", len(uninstall.Workloads), "crds", len(uninstall.CRDs), "drain", o.Drain)
	cfg, ignored := o.PreflightConfig()
	if ignored != nil {
		conn.logger.WarnContext(conn.ctx, "preflight walks the whole cluster: the walk's include/exclude filters and --shard are ignored",
			"include-resources", ignored.IncludeResources, "exclude-resources", ignored.ExcludeResources,
			"include-namespaces", ignored.IncludeNamespaces, "exclude-namespaces", ignored.ExcludeNamespaces, "shard", ignored.Shard.String())
	}
	rule := rules.NewPreflight(uninstall, settings, o.Drain, o.DrainProtected)
	r := conn.sweep(cfg, []rules.Rule{rule})
	unknown := preflight.Unknown(r, uninstall)
	draining := o.Drain && o.DryRun == report.DryRunNone
	if draining {
		err := preflight.Wait(conn.ctx, conn.clients, r, preflight.DrainConfig{
			Timeout: o.DrainTimeout.Duration, Interval: drainInterval, Progress: conn.progress, Logger: conn.logger})
		if err != nil {
			r.Errors = append(r.Errors, report.Error{Stage: report.StageApply, Message: err.Error(), Fatal: true})
		}
	}
	// Findings are what a preflight is asked for: they fail it, unless the cluster was not read
	// fully, which is worse, or a drain took them away (what is left, webhooks, APIServices and
	// CRDs, goes with the uninstall).
	switch n := preflight.Undrained(r); {
	case r.Failed():
		return r, fmt.Errorf("%w: %s", ErrIncomplete, failure(r))
	case draining && n > 0:
		return r, fmt.Errorf("%w: %d custom resources were not drained (see the report): do not uninstall yet", ErrIncomplete, n)
	case len(unknown) > 0:
		return r, fmt.Errorf("%w: %d discoveries or lists failed: what they would have shown is unknown (see the report's errors)", ErrIncomplete, len(unknown))
	case !draining && r.Summary.Findings > 0:
		return r, fmt.Errorf("%w: %d findings: uninstalling now would leave them blocked (see the report)", ErrFindings, r.Summary.Findings)
	}
	return r, nil
}
