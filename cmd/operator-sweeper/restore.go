package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/restore"
)

// restoreCommand is `operator-sweeper restore --from REPORT|DIR | --run ID [--only TYPE/NAME,…]`:
// the undoing of a sweep's actions.
type restoreCommand struct {
	src restore.Source
}

func (*restoreCommand) name() string { return "restore" }
func (*restoreCommand) usage() string {
	return "restore --from REPORT|DIR | --run ID [--only TYPE/NAME,…] [flags]"
}
func (*restoreCommand) short() string { return "Undo the actions of a sweep, from its pre-images" }

func (*restoreCommand) groups(o *options.Options) []options.Group {
	return []options.Group{&o.DryRunOptions, &o.OutputOptions, &o.ClientOptions, &o.StateOptions, &o.LogOptions}
}

func (c *restoreCommand) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.src.From, "from", c.src.From, "A sweep's report (JSON or YAML, or its Job's logs), its --backup-dir (the newest run), or a run's directory in it.")
	fs.StringVar(&c.src.Run, "run", c.src.Run, "The ID of a run (the report's metadata.runID) whose pre-images are kept in Secrets of the sweeper's namespace.")
	fs.StringSliceVar(&c.src.Only, "only", c.src.Only, "Undo only the actions on these objects, as TYPE/NAME (clusterrole/etcd-operator, crd/etcdclusters.etcd.database.coreos.com).")
}

func (c *restoreCommand) setArgs(args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("restore takes flags only; got argument %q", args[0])
	case c.src.From == "" && c.src.Run == "":
		return errors.New("restore needs --from (a sweep's report or its --backup-dir) or --run (a run's ID)")
	case c.src.From != "" && c.src.Run != "":
		return errors.New("restore takes either --from or --run, not both")
	}
	return nil
}

// run undoes the actions the sweep applied (action.Restore), and prints a report like a sweep's.
func (c *restoreCommand) run(ctx context.Context, o *options.Options, s streams) error {
	return s.print((&action.Restore{Options: o, Source: c.src, Log: s.err}).Run(ctx))
}
