package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// sweepFleet sweeps every context --contexts or --all-contexts selects, each with its own client,
// timeout and name (its context's), at most --cluster-concurrency at once, and prints one
// FleetReport. A context that cannot be reached is that cluster's error; two contexts of one
// cluster (the same kube-system UID) are swept once. Each cluster's metrics and notification go
// out as a single sweep's. It fails as the worst of the clusters.
func sweepFleet(ctx context.Context, o *options.Options, ruleSet []rules.Rule, s streams) error {
	contexts, err := sweeper.Contexts(o.Kubeconfig, o.Contexts, o.AllContexts)
	if err != nil {
		return err
	}
	reports := make([]*report.Report, len(contexts))
	conns := make([]*connection, len(contexts))
	ones := make([]options.Options, len(contexts)) // each context's options: named by it
	sweptAs := map[types.UID]string{}              // the context a cluster is swept as
	for i, name := range contexts {
		one := &ones[i]
		*one = *o
		one.Context, one.Cluster = name, name
		conn, err := connect(ctx, one, s)
		if err != nil {
			reports[i] = unreachable(name, one.DryRun, err)
			continue
		}
		conn.progress = nil // one line of progress cannot show several clusters
		uid, err := conn.clients.ClusterUID(conn.ctx)
		if first, seen := sweptAs[uid]; err == nil && seen {
			conn.cancel()
			reports[i] = report.New(time.Now(), report.Metadata{Cluster: name, ClusterUID: string(uid), Mode: one.DryRun})
			reports[i].Errors = append(reports[i].Errors, report.Error{Stage: report.StageInventory,
				Message: fmt.Sprintf("the same cluster as context %s (kube-system uid %s): swept once, as %s", first, uid, first)})
			continue
		} else if err == nil {
			sweptAs[uid] = name
		}
		conns[i] = conn
	}
	g := new(errgroup.Group)
	g.SetLimit(o.ClusterConcurrency)
	for i, conn := range conns {
		if conn == nil {
			continue
		}
		g.Go(func() error {
			defer conn.cancel()
			reports[i] = conn.sweep(ones[i].EngineConfig(), ruleSet)
			sendToSinks(ctx, &ones[i], reports[i], ruleSet, conn.logger)
			return nil
		})
	}
	_ = g.Wait() // the goroutines return no error: each cluster's problems are in its report
	return finishFleet(o.OutputOptions, reports, s.out)
}

// unreachable is the report of a cluster whose context could not be reached: its error, fatal.
func unreachable(context string, mode report.DryRunMode, err error) *report.Report {
	r := report.New(time.Now(), report.Metadata{Cluster: context, Mode: mode})
	r.Metadata.EndTime = r.Metadata.StartTime
	r.Errors = append(r.Errors, report.Error{Stage: report.StageInventory, Message: fmt.Sprintf("context %s: %v", context, err), Fatal: true})
	return r
}
