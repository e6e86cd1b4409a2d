package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
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

// run sweeps the cluster without changing anything and prints what the sweep says about the
// target: its findings, what keeps it stuck and what it keeps stuck, down to the root causes,
// with all their evidence, and what --dry-run=none would do; what the rules say without their
// thresholds of age about the objects of the chain a sweep does not count yet; and how to prevent
// it next time. -o json and yaml print the sweep's findings of the chain as a SweepReport; table
// and markdown, the text. A target that does not exist is bad input. A webhook that would refuse
// a write is only known once the write is tried: explain does not show it.
func (c *explainCommand) run(ctx context.Context, o *options.Options, s streams) error {
	ruleSet, err := o.RuleSet()
	if err != nil {
		return err
	}
	early, err := earlyRuleSet(o.RuleOptions)
	if err != nil {
		return err
	}
	conn, err := connect(ctx, o, s)
	if err != nil {
		return err
	}
	defer conn.cancel()
	uid, what, err := conn.clients.Resolve(conn.ctx, c.target)
	if err != nil {
		return err
	}
	// Of a sweep's config, what explain takes: it walks and limits as a sweep would, and writes
	// nothing.
	cfg := sweeper.Config{Cluster: conn.cluster, Version: o.Version, DryRun: report.DryRunClient}
	o.WalkOptions.ApplyTo(&cfg)
	o.LimitOptions.ApplyTo(&cfg)
	engine := &sweeper.Engine{Config: cfg, Clients: conn.clients, Rules: ruleSet, Logger: conn.logger, Progress: conn.progress}
	explanation := engine.Explain(conn.ctx, sweeper.Explain{UID: uid, What: what, Early: early, MinTerminatingAge: o.MinTerminatingAge.Duration})
	print := explanation.Report.Print
	if o.Output != report.JSON && o.Output != report.YAML {
		print = func(w io.Writer, _ report.Format) error {
			explanation.Print(w)
			return nil
		}
	}
	return finish(o.OutputOptions, explanation.Report, s.out, print)
}

// earlyRuleSet is the rules of o with --min-terminating-age and --min-age at 0: what they say of
// an object whose deletion, or whose state, is younger than the thresholds, which explain shows
// as such.
func earlyRuleSet(o options.RuleOptions) ([]rules.Rule, error) {
	o.MinTerminatingAge = metav1.Duration{}
	return o.RuleSet(0)
}
