package preflight

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// DrainConfig is how a drain waits for what it deleted.
type DrainConfig struct {
	// Timeout is how long it waits for every deleted object to go.
	Timeout time.Duration
	// Interval is how often it lists them again.
	Interval time.Duration
	// Progress, if set, is where it shows how many are gone, on one line (a terminal).
	Progress io.Writer
	Logger   *slog.Logger
}

// drained is an object a drain deleted, as its finding names it.
type drained struct {
	uid  types.UID
	name string // "Kind namespace/name"
	// finalizers are those it still had when last listed.
	finalizers []string
}

// drainList is the objects deleted of one resource: what one list, across namespaces, finds. One
// list a resource, not one a namespace: an operator's custom resources may be in thousands of
// namespaces, and a drain deletes most of what the list returns anyway.
type drainList struct {
	resource schema.GroupVersionResource
	objects  map[types.UID]*drained
}

// Wait waits until the objects whose delete the report's findings applied are gone, or until
// cfg.Timeout, and marks those still there as stayed, with the finalizers that keep them. An
// object re-created under its name is another object: gone.
func Wait(ctx context.Context, clients *sweeper.Clients, r *report.Report, cfg DrainConfig) error {
	lists, total, err := deleted(ctx, clients, r)
	if err != nil || total == 0 {
		return err
	}
	logger := cfg.Logger
	left := total
	logger.InfoContext(ctx, "drain: waiting for the deleted custom resources to be finalized", "deleted", total, "timeout", cfg.Timeout)
	waitCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	err = wait.PollUntilContextCancel(waitCtx, cfg.Interval, true, func(ctx context.Context) (bool, error) {
		now := 0
		for _, l := range lists {
			err := l.refresh(ctx, clients.Metadata)
			switch {
			case apierrors.IsNotFound(err):
				// The resource is no longer served (its CRD went): none of its objects is left.
				clear(l.objects)
			case err != nil:
				// A failed list is tried again at the next tick, the others still are now; the
				// timeout bounds it.
				logger.WarnContext(ctx, "drain: list failed", "resource", l.resource.GroupResource(), "error", err)
			}
			now += len(l.objects)
		}
		if now != left {
			left = now
			logger.InfoContext(ctx, "drain", "gone", total-left, "of", total)
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "\rdrain: %d of %d gone", total-left, total)
		}
		return left == 0, nil
	})
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}
	if left == 0 {
		logger.InfoContext(ctx, "drain: every deleted custom resource is gone", "deleted", total)
		return nil
	}
	waited := fmt.Sprintf("still there after %s", cfg.Timeout)
	if ctx.Err() != nil || !wait.Interrupted(err) {
		waited = "still there when the wait was interrupted"
	}
	stayed := map[types.UID]string{}
	for _, l := range lists {
		for _, obj := range l.objects {
			stayed[obj.uid] = stayedBecause(waited, obj.finalizers)
		}
	}
	r.MarkStayed(stayed)
	logger.WarnContext(ctx, "drain: deleted custom resources stayed", "stayed", left, "of", total)
	return nil
}

// Undrained counts the custom resources a drain did not take away: those whose delete was
// skipped (an opt-in, a protected namespace, the operator no longer running) or failed, or that
// stayed.
func Undrained(r *report.Report) int {
	n := 0
	for _, f := range r.Findings {
		if f.Rule == rules.PreflightName && f.Action != nil && f.Outcome != report.OutcomeApplied {
			n++
		}
	}
	return n
}

// stayedBecause says why a deleted object is still there.
func stayedBecause(waited string, finalizers []string) string {
	if len(finalizers) == 0 {
		return waited + ", its finalizers gone: the garbage collector or the API server has yet to remove it"
	}
	return fmt.Sprintf("%s with finalizers %s: the operator did not remove them; see its logs and the object's status", waited, strings.Join(finalizers, ", "))
}

// deleted groups the objects whose delete the report applied by resource.
func deleted(ctx context.Context, clients *sweeper.Clients, r *report.Report) ([]*drainList, int, error) {
	mapper := clients.Mapper()
	byList := map[schema.GroupVersionResource]*drainList{}
	var lists []*drainList
	total := 0
	for _, f := range r.Findings {
		if f.Rule != rules.PreflightName || f.Action == nil || f.Action.Type != (rules.Delete{}).Type() || f.Outcome != report.OutcomeApplied {
			continue
		}
		gvk := schema.FromAPIVersionAndKind(f.Object.APIVersion, f.Object.Kind)
		mapping, err := mapper.RESTMappingWithContext(ctx, gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, 0, fmt.Errorf("drain: the resource of %s: %w", f.Object, err)
		}
		l, ok := byList[mapping.Resource]
		if !ok {
			l = &drainList{resource: mapping.Resource, objects: map[types.UID]*drained{}}
			byList[mapping.Resource] = l
			lists = append(lists, l)
		}
		l.objects[f.Object.UID] = &drained{uid: f.Object.UID, name: f.Object.String()}
		total++
	}
	return lists, total, nil
}

// refresh lists the list's resource in every namespace, page by page, and keeps the objects still
// there, with their finalizers.
func (l *drainList) refresh(ctx context.Context, client metadata.Interface) error {
	there := map[types.UID][]string{}
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return client.Resource(l.resource).List(ctx, opts)
	})
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if _, ok := l.objects[m.GetUID()]; ok {
			there[m.GetUID()] = slices.Clone(m.GetFinalizers())
		}
		return nil
	})
	if err != nil {
		return err
	}
	for uid, obj := range l.objects {
		finalizers, ok := there[uid]
		if !ok {
			delete(l.objects, uid)
			continue
		}
		obj.finalizers = finalizers
	}
	return nil
}
