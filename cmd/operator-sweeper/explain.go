package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/operator-sweeper/operator-sweeper/action"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// explainCommand is `operator-sweeper explain TYPE/NAME [-n NAMESPACE]`: a sweep that writes
// nothing, and what it says about one object.
type explainCommand struct {
	namespace string
	target    sweeper.Target
}

func (*explainCommand) name() string  { return "explain" }
func (*explainCommand) usage() string { return "explain TYPE/NAME [-n NAMESPACE] [flags]" }
func (*explainCommand) short() string {
	return "What a sweep says about one object: what keeps it stuck, what it keeps stuck, and what to do"
}

func (*explainCommand) groups(o *options.Options) []options.Group {
	return []options.Group{&o.OutputOptions, &o.LimitOptions, &o.ClientOptions, &o.WalkOptions, &o.RuleOptions, &o.LogOptions}
}

func (c *explainCommand) addFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&c.namespace, "namespace", "n", c.namespace, "The namespace of the object, if its TYPE is namespaced.")
}

func (c *explainCommand) setArgs(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("explain takes one object, as TYPE/NAME (namespace/logging, apiservice/v1.packages.operators.coreos.com); got %d arguments", len(args))
	}
	var err error
	c.target, err = sweeper.ParseTarget(args[0], c.namespace)
	return err
}

// run explains the target (action.Explain) and prints the explanation.
func (c *explainCommand) run(ctx context.Context, o *options.Options, s streams) error {
	return s.print((&action.Explain{Options: o, Target: c.target, Log: s.err}).Run(ctx))
}
