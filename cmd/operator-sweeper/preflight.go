package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/preflight"
)

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
func (*preflightCommand) short() string {
	return "What uninstalling an operator now would leave blocked; with --drain, its custom resources deleted first"
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

// run preflights the target, drains if asked (action.Preflight), and prints the report. Exit
// codes: 0 nothing would be blocked (or, drained, every custom resource went), 3 something would,
// 1 the cluster was not read fully or a drained object stayed; of a fleet, the worst.
func (c *preflightCommand) run(ctx context.Context, o *options.Options, s streams) error {
	return s.print((&action.Preflight{Options: o, Target: c.target, Log: s.err}).Run(ctx))
}
