package sweeper

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// BatchItem is one action of a batch: the finding, and the rule that planned it from View.
type BatchItem struct {
	Rule    rules.Rule
	View    *rules.View
	Finding rules.Finding
}

// ApplyBatch carries out the actions of a batch, whose facts were confirmed right before: at most
// Concurrency writes at once, each object read in full, then every pre-image kept at once (a few
// Secrets for the whole batch, created before any write is sent), then the writes, each with its
// preconditions, re-planned and retried as Apply does when it loses a race. A
// CustomResourceDefinition's delete, which takes its custom resources with it, goes alone, as
// Apply sends it. Once ctx ends, no write not yet sent is sent (interrupted, started false); those
// under way finish, for up to inFlightGrace.
func (a *Applier) ApplyBatch(ctx context.Context, items []BatchItem) (results []Result, started []bool) {
	results, started = make([]Result, len(items)), make([]bool, len(items))
	if a.Writer.Mode == report.DryRunClient {
		for i, it := range items {
			if it.Finding.Action != nil {
				results[i], started[i] = Result{Outcome: report.OutcomePlanned}, true
			}
		}
		return results, started
	}
	actx, cancel := graceful(ctx)
	defer cancel()

	type write struct {
		i   int
		obj *rules.Object
		u   *unstructured.Unstructured
		res Result
		err error
	}
	var writes []*write
	var alone []int
	for i, it := range items {
		f := it.Finding
		obj, ok := it.View.Get(f.Object.Resource.GroupResource(), f.Object.Namespace, f.Object.Name)
		switch _, deletes := f.Action.(rules.Delete); {
		case f.Action == nil:
		case !ok || obj.UID != f.Object.UID:
			results[i], started[i] = Failed(report.ReasonNotInView, "the object is not in the view the rule planned from"), true
		case deletes && isCRD(obj.Resource.GroupVersionResource):
			alone = append(alone, i)
		default:
			writes = append(writes, &write{i: i, obj: obj})
		}
	}

	// Read every object as observed; one that is not has won a race, and is settled as such.
	a.each(ctx, len(writes), func(j int) {
		w := writes[j]
		w.u, w.err = a.read(actx, w.obj)
	})
	var keep []batched
	var kept []*write
	for _, w := range writes {
		if w.err != nil || w.u == nil {
			continue
		}
		w.res.Before = preImageOf(w.obj, w.u)
		keep = append(keep, batched{finding: items[w.i].Finding, object: w.u, pre: w.res.Before})
		kept = append(kept, w)
	}
	if a.Keeper != nil && len(keep) > 0 {
		if err := a.Keeper.batch(actx, keep); err != nil {
			for _, w := range kept {
				w.err = &backupError{err}
			}
		}
	}

	// Send, and settle each as Apply does.
	a.each(ctx, len(writes), func(j int) {
		w := writes[j]
		if ctx.Err() != nil {
			return // interrupted before it was sent
		}
		it := items[w.i]
		if w.err == nil && w.u != nil {
			w.err = a.send(actx, w.obj, it.Finding.Action)
		}
		res, acted := a.settle(actx, it.Rule, it.View, w.obj, it.Finding, w.err, w.res)
		results[w.i], started[w.i] = a.finish(actx, it.View, it.Finding, res, acted), true
	})
	for _, i := range alone {
		if ctx.Err() != nil {
			break
		}
		it := items[i]
		results[i], started[i] = a.Apply(actx, it.Rule, it.View, it.Finding), true
	}
	for i := range items {
		if !started[i] && items[i].Finding.Action != nil {
			results[i] = Skipped(report.ReasonInterrupted, "the run was interrupted (%v) before this action; the next run takes it", context.Cause(ctx))
		}
	}
	return results, started
}

// each runs fn(0), …, fn(n-1), at most Concurrency at once, in order of start; once ctx ends it
// starts no more.
func (a *Applier) each(ctx context.Context, n int, fn func(int)) {
	limit := max(a.Concurrency, 1)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// graceful is a context for the requests of actions under way: it ends inFlightGrace after ctx
// does, so that a write is not cut off between its request and its answer.
func graceful(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(inFlightGrace, cancel) })
	return actx, func() { stop(); cancel() }
}
