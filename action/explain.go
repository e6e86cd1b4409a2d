package action

import (
	"context"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Explain is `operator-sweeper explain TYPE/NAME [-n NAMESPACE]`: a sweep that writes nothing, and
// what it says about one object.
type Explain struct {
	// Options are explain's, built and checked by the options package.
	Options *options.Options
	// Target is the object to explain.
	Target sweeper.Target
	// Log is where the logs, and the progress on a terminal, go.
	Log io.Writer
}

// Run sweeps the cluster without changing anything and explains what the sweep says about the
// target: its findings, what keeps it stuck and what it keeps stuck, down to the root causes,
// with all their evidence, and what --dry-run=none would do; what the rules say without their
// thresholds of age about the objects of the chain a sweep does not count yet; and how to prevent
// it next time. Printed with -o json and yaml, the Result is the sweep's findings of the chain as
// a SweepReport; with table and markdown, the text. A target that does not exist is bad input. A
// webhook that would refuse a write is only known once the write is tried: explain does not show
// it.
func (a *Explain) Run(ctx context.Context) (*Result, error) {
	o := a.Options
	ruleSet, err := o.RuleSet()
	if err != nil {
		return nil, err
	}
	early, err := earlyRuleSet(o.RuleOptions)
	if err != nil {
		return nil, err
	}
	conn, err := connect(ctx, o, a.Log)
	if err != nil {
		return nil, err
	}
	defer conn.cancel()
	uid, what, err := conn.clients.Resolve(conn.ctx, a.Target)
	if err != nil {
		return nil, err
	}
	cfg := o.ExplainConfig()
	cfg.Cluster = conn.cluster
	engine := &sweeper.Engine{Config: cfg, Clients: conn.clients, Rules: ruleSet, Logger: conn.logger, Progress: conn.progress}
	explanation := engine.Explain(conn.ctx, sweeper.Explain{UID: uid, What: what, Early: early, MinTerminatingAge: o.MinTerminatingAge.Duration})
	print := explanation.Report.Print
	if o.Output != report.JSON && o.Output != report.YAML {
		print = func(w io.Writer, _ report.Format) error {
			explanation.Print(w)
			return nil
		}
	}
	return &Result{output: o.OutputOptions, report: explanation.Report, print: print}, nil
}

// earlyRuleSet is the rules of o with --min-terminating-age and --min-age at 0: what they say of
// an object whose deletion, or whose state, is younger than the thresholds, which explain shows
// as such.
func earlyRuleSet(o options.RuleOptions) ([]rules.Rule, error) {
	o.MinTerminatingAge = metav1.Duration{}
	return o.RuleSet(0)
}
