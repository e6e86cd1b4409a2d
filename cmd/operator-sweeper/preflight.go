package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/preflight"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// drainInterval is how often a drain lists what it deleted again.
const drainInterval = 2 * time.Second

// preflightCommand is `operator-sweeper preflight TYPE/NAME -n NAMESPACE`: what uninstalling an
// operator now would leave blocked, and, with --drain, its custom resources deleted while it runs.
type preflightCommand struct {
	namespace string
	target    preflight.Target
}

func (*preflightCommand) name() string { return "preflight" }
func (*preflightCommand) usage() string {
	return "preflight TYPE/NAME -n NAMESPACE [--drain] [flags]"
}

func (*preflightCommand) groups(o *options.Options) []options.Group {
	return []options.Group{&o.DryRunOptions, &o.DrainOptions, &o.OutputOptions, &o.ClientOptions, &o.FleetOptions, &o.WalkOptions,
		&o.BackupOptions, &o.StateOptions, &o.LogOptions}
}

func (c *preflightCommand) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&c.namespace, "namespace", "n", c.namespace, "The namespace of what you uninstall.")
}

func (c *preflightCommand) setArgs(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("preflight takes what you uninstall, as TYPE/NAME (helm/logging-operator, deployment/olm-operator, subscription/etcd) with -n NAMESPACE; got %d arguments", len(args))
	}
	var err error
	c.target, err = preflight.ParseTarget(args[0], c.namespace)
	return err
}

// run resolves the target, sweeps the cluster with rule preflight alone, drains if asked, and
// prints the report. Exit codes: 0 nothing would be blocked (or, drained, every custom resource
// went), 3 something would, 1 the cluster was not read fully or a drained object stayed. With
// --contexts or --all-contexts, each cluster is preflighted so, and the run ends as the worst.
func (c *preflightCommand) run(ctx context.Context, o *options.Options, s streams) error {
	// The finalizer mappings are the sweep's, from --config; preflight takes no rule flags.
	settings, err := o.RuleOptions.Settings(0)
	if err != nil {
		return &sweeper.InputError{Err: err}
	}
	if err := o.ValidateFleet(); err != nil {
		return &sweeper.InputError{Err: err}
	}
	if o.Fleet() {
		return c.runFleet(ctx, o, settings, s)
	}
	conn, err := connect(ctx, o, s)
	if err != nil {
		return err
	}
	defer conn.cancel()
	uninstall, err := preflight.Resolve(conn.ctx, conn.clients, c.target)
	if err != nil {
		return err
	}
	if err := conn.ensureState(o, o.Drain && o.DryRun == report.DryRunNone); err != nil {
		return err
	}
	r, verdict := preflightCluster(conn, o, settings, uninstall)
	output := o.OutputOptions
	output.FailOnFindings = false // the verdict says
	if err := finish(output, r, s.out, o.Printer(r)); err != nil {
		return err
	}
	return verdict
}

// runFleet preflights every context: one where the target is not installed has nothing to
// preflight, which its report says; a target installed nowhere is bad input.
func (c *preflightCommand) runFleet(ctx context.Context, o *options.Options, settings rules.Settings, s streams) error {
	members, err := connectFleet(ctx, o, s, o.Drain && o.DryRun == report.DryRunNone)
	if err != nil {
		return err
	}
	eachCluster(members, o.ClusterConcurrency, func(m *member) {
		uninstall, err := preflight.Resolve(m.conn.ctx, m.conn.clients, c.target)
		if input := (*sweeper.InputError)(nil); errors.As(err, &input) {
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
		return sweeper.InputErrorf("%s is in no cluster: %s", c.target, strings.Join(absent, "; "))
	}
	output := o.OutputOptions
	output.FailOnFindings = false // the verdicts say
	if err := finishFleet(output, reports(members), s.out); err != nil {
		return err
	}
	// The worst of the clusters': not read fully, or not drained, over findings.
	var incomplete, blocked []string
	for _, m := range members {
		switch {
		case errors.Is(m.verdict, errIncomplete):
			incomplete = append(incomplete, m.opts.Cluster)
		case errors.Is(m.verdict, errFindings):
			blocked = append(blocked, m.opts.Cluster)
		}
	}
	switch {
	case len(incomplete) > 0:
		return fmt.Errorf("%w: in %s (see the report): do not uninstall there yet", errIncomplete, strings.Join(incomplete, ", "))
	case len(blocked) > 0:
		return fmt.Errorf("%w: uninstalling now would leave objects blocked in %s (see the report)", errFindings, strings.Join(blocked, ", "))
	}
	return nil
}

// preflightCluster sweeps one cluster with rule preflight alone for uninstall, drains if asked,
// and says how the preflight ends: errFindings when an uninstall would leave objects blocked,
// errIncomplete when the cluster was not read fully or a drained object stayed.
func preflightCluster(conn *connection, o *options.Options, settings rules.Settings, uninstall rules.Uninstall) (*report.Report, error) {
	conn.logger.InfoContext(conn.ctx, "preflight", "target", uninstall.Target, "workloads", len(uninstall.Workloads), "crds", len(uninstall.CRDs), "drain", o.Drain)
	cfg := o.EngineConfig()
	// A drain deletes all it finds, young or not, but never reaches a protected namespace.
	cfg.MaxActions, cfg.MinAge = 0, 0
	// What an uninstall leaves blocked may be anywhere, and another instance of the operator too:
	// the walk's filters and shards (a CronJob's config file has some) would hide them.
	if len(cfg.IncludeResources)+len(cfg.ExcludeResources)+len(cfg.IncludeNamespaces)+len(cfg.ExcludeNamespaces) > 0 || cfg.Shard.Count > 0 {
		conn.logger.WarnContext(conn.ctx, "preflight walks the whole cluster: the walk's include/exclude filters and --shard are ignored",
			"include-resources", cfg.IncludeResources, "exclude-resources", cfg.ExcludeResources,
			"include-namespaces", cfg.IncludeNamespaces, "exclude-namespaces", cfg.ExcludeNamespaces, "shard", cfg.Shard.String())
	}
	cfg.IncludeResources, cfg.ExcludeResources, cfg.IncludeNamespaces, cfg.ExcludeNamespaces, cfg.Shard = nil, nil, nil, nil, sweeper.Shard{}
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
		return r, fmt.Errorf("%w: %s", errIncomplete, failure(r))
	case draining && n > 0:
		return r, fmt.Errorf("%w: %d custom resources were not drained (see the report): do not uninstall yet", errIncomplete, n)
	case len(unknown) > 0:
		return r, fmt.Errorf("%w: %d discoveries or lists failed: what they would have shown is unknown (see the report's errors)", errIncomplete, len(unknown))
	case !draining && r.Summary.Findings > 0:
		return r, fmt.Errorf("%w: %d findings: uninstalling now would leave them blocked (see the report)", errFindings, r.Summary.Findings)
	}
	return r, nil
}
