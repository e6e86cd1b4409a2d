package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The live controller of the concurrency test owns live.example.com/*, which no sweeper mapping
// knows: its finalizers are never the sweeper's to remove. It keeps liveKeep, and takes off its
// cleanup finalizers one by one while the sweepers run.
const (
	liveKeep     = "live.example.com/keep"
	cleanupSteps = 10
)

func cleanupFinalizer(step int) string { return fmt.Sprintf("live.example.com/cleanup-%02d", step) }

// liveController is a controller that is alive while its objects are Terminating: on every one of
// its objects it makes sure liveKeep is there, and works through its cleanup, taking off one
// cleanup finalizer at a time, each with the object's resourceVersion as precondition (as an
// Update does), re-reading and trying again when a sweeper changed the object first. The API
// server forbids adding a finalizer to an object being deleted (ValidateNoNewFinalizers), so
// changing its own finalizers on a Terminating object means taking them off: each change makes
// every sweeper's view of the object stale.
type liveController struct {
	namespace string
	names     []string
	// released says how many objects of the namespace are released.
	released func(context.Context) (int, error)
	// lostRaces counts the patches of the controller that a sweeper's write beat.
	lostRaces atomic.Int64
}

// run takes off cleanup finalizer 1 of every object once the sweepers have released the first
// object (their views are taken), and each next one after they have released another
// 1/cleanupSteps of debris, so that its changes are spread over the whole sweep; once
// sweepersDone is closed, it finishes its cleanup without waiting.
func (c *liveController) run(ctx context.Context, debris int, sweepersDone <-chan struct{}) error {
	for step := 1; step <= cleanupSteps; step++ {
		want := max(1, (step-1)*debris/cleanupSteps)
		for {
			released, err := c.released(ctx)
			if err != nil {
				return err
			}
			done := false
			select {
			case <-sweepersDone:
				done = true
			default:
			}
			if released >= want || done {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		var g errgroup.Group
		g.SetLimit(10)
		for _, name := range c.names {
			g.Go(func() error { return c.takeOff(ctx, name, cleanupFinalizer(step)) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// takeOff removes finalizer from the object, making sure liveKeep is still there.
func (c *liveController) takeOff(ctx context.Context, name, finalizer string) error {
	client := syslogNGClient(c.namespace)
	for {
		obj, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the live controller reads %s: %w", name, err)
		}
		finalizers := obj.GetFinalizers()
		if !slices.Contains(finalizers, liveKeep) {
			return fmt.Errorf("%s: %s, a live controller's finalizer, was taken off: %v", name, liveKeep, finalizers)
		}
		if !slices.Contains(finalizers, finalizer) {
			return nil
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
			{"op": "replace", "path": "/metadata/finalizers", "value": slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == finalizer })},
		})
		if err != nil {
			return err
		}
		_, err = client.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			c.lostRaces.Add(1) // a sweeper changed it since it was read
			continue
		}
		if err != nil {
			return fmt.Errorf("the live controller takes %s off %s: %w", finalizer, name, err)
		}
		return nil
	}
}

// TestConcurrentSweepers: three sweepers at once on a thousand orphans (a CronJob run and two
// `kubectl create job --from=cronjob` by hand), while a live controller changes its own
// finalizers on a hundred of them. Every write of a sweeper tests the finalizers it observed:
// they race each other and the controller, lose, re-read and re-plan, as often as it takes.
// Nothing fails: an object another sweeper already released is done, not an error. At the end
// every orphaned finalizer is gone and every one of the controller's is where the controller
// left it.
func TestConcurrentSweepers(t *testing.T) {
	const total, live = 1000, 100
	ns := testCluster.NewNamespace(t)
	// Every tenth object is also the live controller's: spread over the order the sweepers act in.
	isLive := func(i int) bool { return i%(total/live) == total/live-1 }
	var liveNames []string
	for i := range total {
		if isLive(i) {
			liveNames = append(liveNames, orphanName(i))
		}
	}
	seedOrphans(t, ns, total, func(i int) []string {
		if !isLive(i) {
			return []string{syslogNGFinalizer}
		}
		finalizers := []string{syslogNGFinalizer, liveKeep}
		for step := 1; step <= cleanupSteps; step++ {
			finalizers = append(finalizers, cleanupFinalizer(step))
		}
		return finalizers
	})
	controller := &liveController{namespace: ns, names: liveNames, released: func(ctx context.Context) (int, error) {
		list, err := syslogNGClient(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return total - len(list.Items), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sweepersDone := make(chan struct{})
	controllerDone := make(chan error, 1)
	go func() { controllerDone <- controller.run(ctx, total-live, sweepersDone) }()

	start := time.Now()
	config := orphansConfig(t, ns)
	var sweepers []*cluster.Running
	for range 3 {
		sweepers = append(sweepers, sweeperBinary.Start(t, asAdmin("--config", config, "--dry-run=none", "--max-actions=0", "--include-namespaces="+ns,
			"--min-terminating-age=0s", "--min-age=0s", "-o", "json", "--log-level=warn", "--qps=100", "--burst=100")...))
	}
	var reports []*report.Report
	for i, p := range sweepers {
		code := p.Wait(t, 90*time.Second)
		assert.Equal(t, 0, code, "sweeper %d: stderr:\n%s", i, p.Stderr())
		reports = append(reports, p.Report(t))
	}
	close(sweepersDone)
	t.Logf("three sweepers done in %s", time.Since(start).Round(time.Millisecond))
	select {
	case err := <-controllerDone:
		require.NoError(t, err, "the live controller")
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the live controller did not finish its cleanup")
	}

	// Every orphan released, by one sweeper or another, and reported so by at least one; no
	// sweeper failed an action, nor ever meant to remove a finalizer that is not orphaned.
	appliedBy := map[string]int{}
	replanned := 0
	for i, rep := range reports {
		findings := orphanFindings(t, rep, ns)
		t.Logf("sweeper %d: %v", i, outcomeCounts(byOutcome(findings)))
		assert.Zero(t, rep.Summary.Failed, "sweeper %d: a race lost to another sweeper or the controller is no failure", i)
		for name, f := range findings {
			assert.NotEqual(t, report.OutcomeFailed, f.Outcome, "sweeper %d, %s: %s", i, name, why(f))
			if f.Action != nil {
				assert.Equal(t, []string{syslogNGFinalizer}, f.Action.Finalizers, "sweeper %d, %s: only the orphaned finalizer", i, name)
			}
			if f.Outcome == report.OutcomeApplied {
				appliedBy[name]++
			}
			if slices.ContainsFunc(f.Evidence, func(e string) bool { return strings.Contains(e, "re-planned") }) {
				replanned++
			}
		}
	}
	for i := range total {
		assert.Positive(t, appliedBy[orphanName(i)], "%s: some sweeper reports it applied", orphanName(i))
	}
	t.Logf("%d findings re-planned after a lost race; the live controller lost %d races", replanned, controller.lostRaces.Load())
	assert.Positive(t, replanned, "the sweepers raced the live controller: the test tests what it means to")

	onServer := finalizersOnServer(t, ns)
	assert.Len(t, onServer, live, "the orphans are gone; the live controller's objects stay")
	for _, name := range liveNames {
		assert.Equal(t, []string{liveKeep}, onServer[name], "%s: the orphaned finalizer gone, the live controller's kept", name)
	}
}
