package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// Fleet is the sweep of every context --contexts or --all-contexts selects, each with its own
// client, timeout and name (its context's), at most --cluster-concurrency at once, into one
// FleetReport.
type Fleet struct {
	// Options are the sweep's, built and checked by the options package; they select the
	// contexts.
	Options *options.Options
	// Log is where the logs go.
	Log io.Writer
}

// Run sweeps every cluster of the fleet. Each cluster's metrics and notification go out as a
// single sweep's. Printed, the Result fails as the worst of the clusters.
func (a *Fleet) Run(ctx context.Context) (*Result, error) {
	ruleSet, err := a.Options.RuleSet()
	if err != nil {
		return nil, err
	}
	if err := a.Options.ValidateFleet(); err != nil {
		return nil, &input.Error{Err: err}
	}
	return a.sweep(ctx, ruleSet)
}

// sweep sweeps every cluster of the fleet with ruleSet.
func (a *Fleet) sweep(ctx context.Context, ruleSet []rules.Rule) (*Result, error) {
	o := a.Options
	members, err := connectFleet(ctx, o, a.Log, o.DryRun == report.DryRunNone)
	if err != nil {
		return nil, err
	}
	eachCluster(members, o.ClusterConcurrency, func(m *member) {
		m.report = m.conn.sweep(m.opts.EngineConfig(), ruleSet)
		sendToSinks(ctx, &m.opts, m.report, ruleSet, m.conn.logger)
	})
	return &Result{output: o.OutputOptions, fleet: true, reports: reports(members)}, nil
}

// member is one context of a fleet: its options (named by the context), its connection (nil when
// it could not be reached, or is a cluster already in the fleet), its report, and, for a
// preflight, how it ended and why its target is not there.
type member struct {
	opts    options.Options
	conn    *connection
	report  *report.Report
	verdict error
	absent  string
	// stateErr is why the sweeper's namespace is not there for a run that writes.
	stateErr error
}

// connectFleet connects to every context --contexts or --all-contexts selects, at most
// --cluster-concurrency at once. A context that cannot be reached gets that error as its report;
// two contexts of one cluster (the same kube-system UID) are swept once, as the first. For a run
// that writes, a cluster without the sweeper's namespace, which cannot be created, stops the
// fleet before anything is planned: an input.Error naming each.
func connectFleet(ctx context.Context, o *options.Options, log io.Writer, writes bool) ([]*member, error) {
	contexts, err := sweeper.Contexts(o.Kubeconfig, o.Contexts, o.AllContexts)
	if err != nil {
		return nil, err
	}
	members := make([]*member, len(contexts))
	uids := make([]types.UID, len(contexts))
	g := new(errgroup.Group)
	g.SetLimit(o.ClusterConcurrency)
	for i, name := range contexts {
		m := &member{opts: *o}
		m.opts.Context, m.opts.Cluster = name, name
		members[i] = m
		g.Go(func() error {
			conn, err := connect(ctx, &m.opts, log)
			if err != nil {
				m.unreachable(err)
				return nil
			}
			conn.progress = nil // one line of progress cannot show several clusters
			m.conn = conn
			if err := conn.ensureState(&m.opts, writes); err != nil {
				m.stateErr = err
			}
			// Not read, the cluster is swept: a duplicate costs a second sweep, never a missed one.
			uids[i], _ = conn.clients.ClusterUID(conn.ctx)
			return nil
		})
	}
	_ = g.Wait() // each context's problem is in its report
	// The context each cluster is swept as.
	sweptAs := map[types.UID]string{}
	for i, m := range members {
		if m.conn == nil || uids[i] == "" {
			continue
		}
		name := m.opts.Cluster
		if first, seen := sweptAs[uids[i]]; seen {
			m.conn.cancel()
			m.conn = nil
			m.notRun(fmt.Sprintf("the same cluster as context %s (kube-system uid %s): swept once, as %s", first, uids[i], first), false)
			m.report.Metadata.ClusterUID = string(uids[i])
			continue
		}
		sweptAs[uids[i]] = name
	}
	var noState []string
	for _, m := range members {
		if m.conn == nil || m.stateErr == nil {
			continue
		}
		if inputErr := (*input.Error)(nil); errors.As(m.stateErr, &inputErr) {
			noState = append(noState, m.opts.Cluster+": "+m.stateErr.Error())
			continue
		}
		m.conn.cancel()
		m.conn = nil
		m.unreachable(m.stateErr)
	}
	if len(noState) > 0 {
		for _, m := range members {
			if m.conn != nil {
				m.conn.cancel()
			}
		}
		return nil, input.Errorf("%s", strings.Join(noState, "; "))
	}
	return members, nil
}

// eachCluster runs fn for every member connected to, at most limit at once, and closes its
// connection afterwards.
func eachCluster(members []*member, limit int, fn func(*member)) {
	g := new(errgroup.Group)
	g.SetLimit(limit)
	for _, m := range members {
		if m.conn == nil {
			continue
		}
		g.Go(func() error {
			m.conn.begin() // its --timeout starts now, not when it began waiting for a turn
			defer m.conn.cancel()
			fn(m)
			return nil
		})
	}
	_ = g.Wait() // fn returns nothing: each cluster's problems are in its report
}

// reports are the members' reports, in the order of their contexts.
func reports(members []*member) []*report.Report {
	out := make([]*report.Report, len(members))
	for i, m := range members {
		out[i] = m.report
	}
	return out
}

// notRun makes the member's report that of a cluster not run on: message, its one error, says
// why, and fails the run when fatal.
func (m *member) notRun(message string, fatal bool) {
	m.report = report.New(time.Now(), report.Metadata{Cluster: m.opts.Cluster, Mode: m.opts.DryRun})
	m.report.Metadata.EndTime = m.report.Metadata.StartTime
	m.report.Errors = append(m.report.Errors, report.Error{Stage: report.StageInventory, Message: message, Fatal: fatal})
}

// unreachable is notRun for a cluster that could not be reached or read: err, fatal.
func (m *member) unreachable(err error) {
	m.notRun(fmt.Sprintf("context %s: %v", m.opts.Context, err), true)
}
