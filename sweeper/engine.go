// Package sweeper is operator-sweeper's engine: one run walks the cluster, lets the rules plan,
// limits their actions, confirms what each rests on, applies them with preconditions and returns
// the report. It owns all I/O with the API server; every write goes through one Writer.
//
//	clients ─► inventory ─► observe ─► plan (rules) ─► limit ─► confirm ─► apply ─► report
package sweeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/clock"

	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Engine runs one sweep: inventory, observe, plan, limit, apply. It returns the report and
// prints nothing, but for the progress line it is given.
type Engine struct {
	Config  Config
	Clients *Clients
	// Rules are the enabled rules, in the order their actions are applied.
	Rules []rules.Rule
	// Clock is the server's: ages are measured against it. Nil means the one Clients took from
	// the API server's answers.
	Clock  clock.PassiveClock
	Logger *slog.Logger
	// Progress, if set, shows a progress line of the observe stage: a terminal.
	Progress io.Writer
}

// plannedFinding is a finding, in the slice its rule returned, with the rule that made it, which
// the applier needs to re-plan.
type plannedFinding struct {
	*rules.Finding
	rule  rules.Rule
	order int
	// resource is the rank of the object's resource by name, which the findings are sorted by.
	resource int
	// blockers are the findings whose object refuses this finding's write (see
	// rules.Finding.Refuses): the action waits for theirs.
	blockers []blocker
}

// blocker is a finding whose object refuses another's write while it stands, and how.
type blocker struct {
	object  rules.ObjectRef
	refusal rules.Refusal
}

// Run sweeps once and returns the report. Problems are recorded in the report, never returned.
func (e *Engine) Run(ctx context.Context) *report.Report {
	r, _ := e.run(ctx)
	return r
}

// run is Run, and the view the rules planned on: nil if the inventory or the observe stage failed.
// Explain plans on it again.
func (e *Engine) run(ctx context.Context) (*report.Report, *rules.View) {
	if e.Clock == nil {
		e.Clock = e.Clients.Clock()
	}
	r := report.New(e.Clock.Now(), e.Config.metadata())
	r.Metadata.RunID = backup.NewRunID(r.Metadata.StartTime.Time)
	if uid, err := e.Clients.ClusterUID(ctx); err != nil {
		e.Logger.WarnContext(ctx, "the cluster's identity could not be read: nothing is signed, and no write sent", "error", err)
	} else {
		r.Metadata.ClusterUID = string(uid)
	}
	defer func() {
		if !e.Config.Shard.sharded() { // a shard counts before it keeps its own findings (plan)
			r.CountStuckNamespaces(report.EveryNamespace)
		}
		r.Metadata.EndTime.Time = e.Clock.Now()
	}()

	e.pruneBackups(ctx, r)
	inv, err := e.inventory(ctx)
	r.Errors = append(r.Errors, inv.problems...)
	r.Summary.Incomplete = len(inv.problems) > 0 || err != nil
	for _, p := range inv.problems {
		e.Logger.WarnContext(ctx, "API group not discovered; its resources are not walked", "groupVersion", p.Resource, "error", p.Message)
	}
	if err != nil {
		return e.stageFailed(ctx, r, report.StageInventory, err), nil
	}
	r.Summary.Resources = len(inv.resources)
	e.Logger.InfoContext(ctx, "inventory done", "resources", len(inv.resources), "errors", len(inv.problems))

	start := e.Clock.Now()
	view, problems, err := e.observe(ctx, inv, e.contentPlans())
	r.Errors = append(r.Errors, problems...)
	r.Summary.Incomplete = r.Summary.Incomplete || len(problems) > 0 || err != nil
	for _, p := range problems {
		e.Logger.WarnContext(ctx, "list failed; the resource is not fully observed", "gvr", p.Resource, "error", p.Message)
	}
	if err != nil {
		return e.stageFailed(ctx, r, report.StageObserve, err), nil
	}
	r.Summary.Scanned = view.Len()
	e.Logger.InfoContext(ctx, "observe done", "objects", view.Len(), "errors", len(problems), "duration", e.Clock.Since(start).String())

	planned := e.plan(ctx, view, r)
	e.Logger.InfoContext(ctx, "plan done", "findings", len(planned))

	e.limitAndApply(ctx, view, start, planned, r)
	e.Logger.InfoContext(ctx, "apply done", "mode", e.Config.DryRun, "planned", r.Summary.Planned,
		"applied", r.Summary.Applied, "failed", r.Summary.Failed, "skipped", r.Summary.Skipped)
	return r, view
}

// contentPlan is how a resource is listed for the rules that read more than its metadata.
type contentPlan struct {
	// all lists every object in full; otherwise the resource is listed as metadata, and the
	// objects matching each of selectors in full.
	all       bool
	selectors []string
	// fields are the paths kept of the content; nil keeps all.
	fields []string
}

// contentPlans merges what the enabled rules read, resource by resource: the union of their
// selectors and fields, where one rule asking for all of either wins.
func (e *Engine) contentPlans() map[schema.GroupResource]contentPlan {
	requests := map[schema.GroupResource][]rules.ContentRequest{}
	for _, rule := range e.Rules {
		if reader, ok := rule.(rules.ContentReader); ok {
			for _, req := range reader.ReadsContent() {
				requests[req.Resource] = append(requests[req.Resource], req)
			}
		}
	}
	plans := make(map[schema.GroupResource]contentPlan, len(requests))
	for gr, reqs := range requests {
		var plan contentPlan
		allFields := false
		for _, req := range reqs {
			plan.all = plan.all || req.Selector == ""
			allFields = allFields || len(req.Fields) == 0
			if req.Selector != "" && !slices.Contains(plan.selectors, req.Selector) {
				plan.selectors = append(plan.selectors, req.Selector)
			}
			for _, f := range req.Fields {
				if !slices.Contains(plan.fields, f) {
					plan.fields = append(plan.fields, f)
				}
			}
		}
		if plan.all {
			plan.selectors = nil
		}
		if allFields {
			plan.fields = nil
		}
		slices.Sort(plan.selectors)
		slices.Sort(plan.fields)
		plans[gr] = plan
	}
	return plans
}

// wholeResources merges the resources the enabled rules read whole (rules.WholeReader): every
// shard of a split sweep lists them in full.
func (e *Engine) wholeResources() map[schema.GroupResource]bool {
	whole := map[schema.GroupResource]bool{}
	for _, rule := range e.Rules {
		if reader, ok := rule.(rules.WholeReader); ok {
			for _, gr := range reader.ReadsWhole() {
				whole[gr] = true
			}
		}
	}
	return whole
}

// keptAnnotations merges the annotation families the enabled rules read (rules.AnnotationReader):
// the objects of the view keep those annotations only.
func (e *Engine) keptAnnotations() rules.KeptAnnotations {
	var families []string
	for _, rule := range e.Rules {
		if reader, ok := rule.(rules.AnnotationReader); ok {
			families = append(families, reader.ReadsAnnotations()...)
		}
	}
	return rules.KeepAnnotations(families...)
}

func (e *Engine) stageFailed(ctx context.Context, r *report.Report, stage string, err error) *report.Report {
	e.Logger.ErrorContext(ctx, "stage failed", "stage", stage, "error", err)
	r.Errors = append(r.Errors, report.Error{Stage: stage, Message: err.Error(), Fatal: true})
	return r
}

// plan runs every rule, each on a core of its own as far as there are (rules are pure functions of
// the view, which nothing changes), and orders the findings deterministically: by rule (which is
// the apply order), then resource, namespace and name; findings of one rule about one object keep
// the rule's order. A rule that panics is reported and the others still run.
func (e *Engine) plan(ctx context.Context, view *rules.View, r *report.Report) []plannedFinding {
	byRule := make([][]rules.Finding, len(e.Rules))
	failed := make([]error, len(e.Rules))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, rule := range e.Rules {
		g.Go(func() error {
			byRule[i], failed[i] = planSafely(ctx, rule, view)
			return nil
		})
	}
	_ = g.Wait() // each rule's error is its own
	total := 0
	for i, rule := range e.Rules {
		if failed[i] != nil {
			e.ruleFailed(ctx, r, rule, failed[i])
		}
		total += len(byRule[i])
	}
	planned := make([]plannedFinding, 0, total)
	for i, findings := range byRule {
		name := e.Rules[i].Name()
		for j := range findings {
			findings[j].Rule = name
			planned = append(planned, plannedFinding{Finding: &findings[j], rule: e.Rules[i], order: i})
		}
	}
	// Before a shard keeps its own: the webhook that refuses a write may be another shard's to
	// delete, and the write then waits for the next run.
	blockWrites(view, planned)
	if shard := e.Config.Shard; shard.sharded() {
		planned = e.keepOwn(planned, shard, r)
	}
	rankResources(planned)
	slices.SortStableFunc(planned, func(a, b plannedFinding) int {
		if a.order != b.order || a.resource != b.resource { // cmp.Or would compare the names too
			return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.resource, b.resource))
		}
		return cmp.Or(cmp.Compare(a.Object.Namespace, b.Object.Namespace), cmp.Compare(a.Object.Name, b.Object.Name))
	})
	return planned
}

// blockWrites links each action to the findings whose objects would refuse its write (an
// admission webhook with a dead backend and failurePolicy Fail): it is taken only once their own
// actions (the configuration's deletion) are done in the same run, and is skipped, naming them,
// otherwise: a write is never sent to be refused.
func blockWrites(view *rules.View, planned []plannedFinding) {
	var refusing []plannedFinding
	for _, f := range planned {
		if len(f.Refuses) > 0 {
			refusing = append(refusing, f)
		}
	}
	if len(refusing) == 0 {
		return
	}
	for i := range planned {
		f := &planned[i]
		if f.Action == nil {
			continue
		}
		operation := rules.AdmissionOperation(f.Action)
		for _, b := range refusing {
			if b.Object.UID == f.Object.UID {
				continue
			}
			for _, refusal := range b.Refuses {
				if refusal.Refuses(view, operation, f.Object) {
					f.blockers = append(f.blockers, blocker{b.Object, refusal})
					break
				}
			}
		}
	}
}

// rankResources ranks the resources of the findings by their names ("resource.group"), once: a
// sort of many findings compares them a million times.
func rankResources(planned []plannedFinding) {
	names := map[schema.GroupResource]string{}
	for _, f := range planned {
		if gr := f.Object.Resource.GroupResource(); names[gr] == "" {
			names[gr] = gr.String()
		}
	}
	resources := slices.SortedFunc(maps.Keys(names), func(a, b schema.GroupResource) int { return cmp.Compare(names[a], names[b]) })
	rank := make(map[schema.GroupResource]int, len(resources))
	for i, gr := range resources {
		rank[gr] = i
	}
	for i := range planned {
		planned[i].resource = rank[planned[i].Object.Resource.GroupResource()]
	}
}

// keepOwn keeps the findings about objects the shard owns, so that every object is reported and
// acted on by exactly one shard. The stuck namespaces it owns are counted first, from every
// finding: the root cause of a namespace's chain may be an object another shard reports.
func (e *Engine) keepOwn(planned []plannedFinding, shard Shard, r *report.Report) []plannedFinding {
	all := &report.Report{}
	for _, f := range planned {
		all.Add(NewFindingResult(*f.Finding, Result{}))
	}
	all.CountStuckNamespaces(shard.ownsNamespace)
	r.Summary.StuckNamespaces = all.Summary.StuckNamespaces
	return slices.DeleteFunc(planned, func(f plannedFinding) bool {
		return !shard.ownsObject(f.Object.Resource, f.Object.Namespace, f.Object.Name)
	})
}

// ruleFailed records a rule that panicked: a bug, which fails the run (exit 1), although the
// other rules' findings are reported and their actions taken.
func (e *Engine) ruleFailed(ctx context.Context, r *report.Report, rule rules.Rule, err error) {
	var panicked *rulePanic
	stack := ""
	if errors.As(err, &panicked) {
		stack = panicked.stack
	}
	e.Logger.ErrorContext(ctx, "rule failed", "rule", rule.Name(), "error", err, "stack", stack)
	r.Errors = append(r.Errors, report.Error{Stage: report.StagePlan, Rule: rule.Name(), Message: err.Error(), Fatal: true})
}

// rulePanic is a panic of a rule's Plan, with the stack for the log.
type rulePanic struct {
	value any
	stack string
}

func (p *rulePanic) Error() string { return fmt.Sprintf("rule panicked: %v", p.value) }

func planSafely(ctx context.Context, rule rules.Rule, view *rules.View) (findings []rules.Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &rulePanic{value: r, stack: string(debug.Stack())}
		}
	}()
	return rule.Plan(ctx, view), nil
}

// limitAndApply decides which actions run, in order, and runs them. An action is skipped when
// its rule needs an opt-in that is not given, when its object is in a protected namespace, when
// an action it depends on was not done in this run, when it would delete or re-own an object
// younger than --min-age or than the sweep (observed since start), when its rule holds it back,
// past --max-actions, and when a fact it rests on no longer holds, read again right before it.
//
// Actions go in waves: one that depends on another (or on the deletion of a webhook that would
// refuse it, or acts on the same object) is in a later wave than it. Within a wave they go in
// batches, each confirmed, kept and written at once (ApplyBatch); a batch starts at one action and
// doubles after each that went without a failure or a lost race, up to maxBatch, as the
// ReplicaSet controller's slowStartBatch does: the first writes of a run each rest on facts read
// for them alone, and a fact that changes, or a write path that fails, is met by a few writes.
func (e *Engine) limitAndApply(ctx context.Context, view *rules.View, start time.Time, planned []plannedFinding, r *report.Report) {
	confirmer := &Confirmer{Observed: view, Clients: e.Clients, Clock: e.Clock, PageSize: e.Config.PageSize}
	applier := &Applier{Writer: e.Clients.Writer(e.Config.DryRun, ""), Logger: e.Logger, Confirmer: confirmer,
		Vet: func(f rules.Finding) (Result, bool) { return e.vet(view, start, f) }, Concurrency: e.Config.writeConcurrency()}
	if e.Config.DryRun == report.DryRunNone {
		applier.Keeper = e.keeper(r.Metadata)
		applier.Events = &EventLog{}
		// Once the writes are done, even if the run was interrupted: they were done.
		defer applier.Events.Record(context.WithoutCancel(ctx), e.Clients.Events, e.Logger, inFlightGrace)
	}
	protected := patterns(e.Config.ProtectedNamespaces)
	done := map[types.UID]bool{}   // objects acted on successfully in this run
	dryRun := map[types.UID]bool{} // of those, the ones whose write a server-side dry run did not persist
	interrupted := 0
	// Each finding goes into the report as soon as its result is known, sharing what it repeats of
	// the findings before it, and the rule's finding is let go then: a rule's findings are freed
	// once all have a result (a rule that only reports, at once), not at the end of the run.
	findings := make([]report.FindingResult, len(planned))
	shared := newFindingInterner()
	settle := func(i int, res Result) {
		switch res.Outcome {
		case report.OutcomePlanned, report.OutcomeDryRun, report.OutcomeApplied:
			uid := planned[i].Object.UID
			done[uid] = true
			dryRun[uid] = res.Outcome == report.OutcomeDryRun
		}
		if res.Reason == report.ReasonInterrupted {
			interrupted++
		}
		fr := NewFindingResult(*planned[i].Finding, res)
		if applier.Keeper != nil && fr.Before != nil && fr.Before.Kept != "" {
			if err := applier.Keeper.Sign(ctx, &fr); err != nil {
				e.Logger.WarnContext(ctx, "a finding of the report was not signed: restore will refuse it; its record with the pre-image is signed", "error", err)
			}
		}
		shared.finding(&fr)
		findings[i], planned[i].Finding = fr, nil
	}
	taken, batch := 0, 1
	limited := Skipped(report.ReasonLimit, "--max-actions=%d reached", e.Config.MaxActions) // the same for thousands
	// An action depends only on actions of earlier waves: done is complete for what it needs
	// when its wave starts.
	for _, wave := range waves(planned) {
		var candidates []int
		for _, i := range wave {
			f := planned[i]
			res, take := e.limit(protected, f, done)
			if take {
				res, take = e.vet(view, start, *f.Finding)
			}
			if take && e.Config.DryRun == report.DryRunServer {
				res, take = notPersisted(f, dryRun)
			}
			if take {
				candidates = append(candidates, i)
			} else {
				settle(i, res)
			}
		}
		for len(candidates) > 0 {
			n := min(batch, len(candidates))
			if e.Config.MaxActions > 0 {
				n = min(n, e.Config.MaxActions-taken)
			}
			if n <= 0 || ctx.Err() != nil {
				res := limited
				if ctx.Err() != nil {
					res = Skipped(report.ReasonInterrupted, "the run was interrupted (%v) before this action; the next run takes it", context.Cause(ctx))
				}
				for _, i := range candidates {
					settle(i, res)
				}
				break
			}
			attempted, clean := e.actBatch(ctx, confirmer, applier, view, planned, candidates[:n], settle, r)
			candidates = candidates[n:]
			taken += attempted
			batch = 1
			if clean {
				batch = min(2*n, maxBatch)
			}
		}
	}
	r.AddAll(findings)
	r.Summary.HoldBack(e.Config.MaxActions)
	if interrupted > 0 {
		e.Logger.ErrorContext(ctx, "run interrupted; actions left for the next run", "taken", taken, "left", interrupted, "cause", context.Cause(ctx))
		r.Errors = append(r.Errors, report.Error{Stage: report.StageApply, Fatal: true,
			Message: fmt.Sprintf("interrupted (%v) after %d actions; %d were not taken, the next run takes them", context.Cause(ctx), taken, interrupted)})
	}
}

// maxBatch bounds a batch: the writes one check of their facts covers, and whose pre-images one
// Secret or two keep.
const maxBatch = 512

// waves orders the findings' actions in waves: an action is in a later wave than the actions it
// depends on, the deletions of the webhooks that would refuse it, an earlier action on the same
// object, and the actions of the rule and resource before its own. The findings come sorted by
// rule, then resource, so that is the order the run writes in, as when it wrote one object at a
// time (olm-rbac's ClusterRoleBindings before the ClusterRoles they bind); only the objects of
// one resource, by one rule, are written at once, in any order. Findings keep their order within
// a wave.
func waves(planned []plannedFinding) [][]int {
	level := map[types.UID]int{}
	var out [][]int
	type group struct{ rule, resource int }
	var current group
	floor, top := 0, -1 // the first wave the current group may use; the last wave an action went in
	for i, f := range planned {
		if f.Action != nil {
			if g := (group{f.order, f.resource}); top >= 0 && g != current {
				floor, current = top+1, g
			} else if top < 0 {
				current = g
			}
		}
		w := floor
		after := func(uid types.UID) {
			if l, ok := level[uid]; ok {
				w = max(w, l+1)
			}
		}
		after(f.Object.UID)
		for _, d := range f.DependsOn {
			after(d.UID)
		}
		for _, b := range f.blockers {
			after(b.object.UID)
		}
		if f.Action != nil {
			level[f.Object.UID] = w
			top = max(top, w)
		}
		for len(out) <= w {
			out = append(out, nil)
		}
		out[w] = append(out[w], i)
	}
	return out
}

// actBatch confirms the facts of a batch of actions, live, once for the batch, and carries out
// those whose facts hold (attempted, unless interrupted before they were sent). It says whether
// the batch went clean: no failure, no lost race.
func (e *Engine) actBatch(ctx context.Context, confirmer *Confirmer, applier *Applier, view *rules.View, planned []plannedFinding, batch []int, settle func(int, Result), r *report.Report) (attempted int, clean bool) {
	facts := make([][]rules.Fact, len(batch))
	for j, i := range batch {
		facts[j] = planned[i].Facts
	}
	actx, cancel := graceful(ctx)
	confirmations := confirmer.ConfirmBatch(actx, facts)
	cancel()
	var items []BatchItem
	var at []int // of each item, its index in batch
	for j, i := range batch {
		if !confirmations[j].Holds {
			res := Skipped(report.ReasonStale, "what the action rests on no longer holds, read again right before it")
			res.Evidence = confirmations[j].Evidence
			e.logAction(ctx, planned[i], res)
			settle(i, res)
			continue
		}
		items = append(items, BatchItem{Rule: planned[i].rule, View: view, Finding: *planned[i].Finding})
		at = append(at, j)
	}
	applied, started := applier.ApplyBatch(ctx, items)
	clean = true
	for k, j := range at {
		i := batch[j]
		res := applied[k]
		res.Evidence = append(slices.Clone(confirmations[j].Evidence), res.Evidence...)
		if started[k] {
			attempted++
		}
		if res.Outcome == report.OutcomeFailed || res.Replanned {
			clean = false
		}
		if res.Reason == report.ReasonRuleFailed {
			e.ruleFailed(ctx, r, planned[i].rule, errors.New(res.Detail))
		}
		e.logAction(ctx, planned[i], res)
		settle(i, res)
	}
	return attempted, clean
}

// keeper keeps the pre-images of the run's writes: in --backup-dir, or in Secrets of the sweeper's
// namespace; signed with its key, created there on first use.
func (e *Engine) keeper(run report.Metadata) *Keeper {
	k := &Keeper{Run: run, Key: func(ctx context.Context) ([]byte, error) {
		return backup.Key(ctx, e.Clients.Dynamic, e.Config.Namespace, true)
	}}
	k.Store = &backup.Secrets{Client: e.Clients.Dynamic, Namespace: e.Config.Namespace, RunID: run.RunID}
	if e.Config.BackupDir != "" {
		k.Store = &backup.Dir{Root: e.Config.BackupDir, StartTime: run.StartTime.Time}
	}
	return k
}

// pruneBackups removes, in a run that writes, the pre-images older than --backup-retention: the
// files in --backup-dir, or the Secrets in the sweeper's namespace. A failure is reported, and
// fails nothing: each write still needs its own pre-image kept.
func (e *Engine) pruneBackups(ctx context.Context, r *report.Report) {
	retention := model.Duration(e.Config.BackupRetention)
	if e.Config.DryRun != report.DryRunNone {
		return // a dry run changes nothing, old pre-images included
	}
	var removed int
	var err error
	where := "--backup-dir " + e.Config.BackupDir
	switch {
	case e.Config.BackupDir != "":
		// File times are the local clock's.
		removed, err = backup.PruneDir(e.Config.BackupDir, time.Now().Add(-e.Config.BackupRetention))
	default:
		where = "the Secrets of namespace " + e.Config.Namespace
		removed, err = backup.PruneSecrets(ctx, e.Clients.Backup(), e.Config.Namespace, e.Clock.Now().Add(-e.Config.BackupRetention))
	}
	if err != nil {
		e.Logger.WarnContext(ctx, "old pre-images not all removed", "where", where, "removed", removed, "error", err)
		r.Errors = append(r.Errors, report.Error{Stage: report.StageApply, Message: fmt.Sprintf("remove the pre-images older than --backup-retention=%s in %s: %v",
			retention, where, err)})
		return
	}
	e.Logger.InfoContext(ctx, "old pre-images removed", "where", where, "removed", removed, "retention", retention.String())
}

// inFlightGrace is how long an action under way when the run is interrupted (SIGTERM, --timeout)
// may take to finish: a write is never cut off between sending and reading its answer if that
// can be helped. With the notification's and the push's own deadlines (10 s each by default), it
// fits the CronJob's 45 s termination grace period, and the report is still printed.
const inFlightGrace = 10 * time.Second

// limit says why an action is not taken in this run, or that it may be (take): no opt-in, a
// protected namespace, a dependency not done.
func (e *Engine) limit(protected patterns, f plannedFinding, done map[types.UID]bool) (res Result, take bool) {
	if f.Action == nil {
		return Result{}, false
	}
	namespace := namespaceOf(f.Object.Resource, f.Object.Namespace, f.Object.Name)
	if f.OptIn != "" {
		return Skipped(report.ReasonOptIn, "set %s to act", f.OptIn), false
	}
	if protected.match(namespace) {
		return Skipped(report.ReasonProtectedNamespace, "%s is in --protected-namespaces", namespace), false
	}
	if dependency := pending(f.DependsOn, done); dependency != nil {
		return Skipped(report.ReasonDependency, "%s was not acted on first", dependency), false
	}
	for _, b := range f.blockers {
		if !done[b.object.UID] {
			res := Skipped(report.ReasonDependency, "%s would refuse the write: its %s, and it was not deleted first", b.object, b.refusal)
			res.BlockedBy = []rules.ObjectRef{b.object} // what keeps the object stuck now, for the report's chains
			return res, false
		}
	}
	return Result{}, true
}

// notPersisted says, in a server-side dry run, that an action whose blocker was deleted in dry
// run only is not sent: the blocker still stands, and would refuse it. It is reported as the dry
// run's, as it would be done.
func notPersisted(f plannedFinding, dryRun map[types.UID]bool) (Result, bool) {
	for _, b := range f.blockers {
		if dryRun[b.object.UID] {
			res := Result{Outcome: report.OutcomeDryRun}
			res.Evidence = []string{fmt.Sprintf("not sent: %s refuses it until it is deleted, which this server-side dry run did not persist", b.object)}
			return res, false
		}
	}
	return Result{}, true
}

// vet says why an action must not be taken, or that it may be: held back by its rule, or its
// object too young. The applier asks it again of an action re-planned after a lost race.
func (e *Engine) vet(view *rules.View, start time.Time, f rules.Finding) (Result, bool) {
	if f.Held != nil {
		return Skipped(report.Reason(f.Held.Reason), "%s", f.Held.Detail), false
	}
	if young, why := e.tooYoung(view, start, f); young {
		return Skipped(report.ReasonMinAge, "%s", why), false
	}
	return Result{}, true
}

// tooYoung reports whether the action would delete or re-own an object created less than
// --min-age ago, or after the sweep began observing: nothing that young is an operator's debris
// yet, and it may be what an operator just installed. Releasing a finalizer has a threshold of
// its own (--min-terminating-age).
func (e *Engine) tooYoung(view *rules.View, start time.Time, f rules.Finding) (bool, string) {
	if c, ok := changeOf(f.Action); !ok || !c.waitsForMinAge() {
		return false, ""
	}
	obj, ok := view.Get(f.Object.Resource.GroupResource(), f.Object.Namespace, f.Object.Name)
	if !ok {
		return false, "" // the applier reports it
	}
	created := obj.CreationTimestamp.Time
	age := e.Clock.Now().Sub(created)
	// Timestamps are in seconds, and the server's clock is known to a second: whatever was
	// created in the second the sweep began, or the one before, counts as created after.
	switch {
	case !created.Before(start.Truncate(time.Second).Add(-time.Second)):
		return true, fmt.Sprintf("created at %s, after the sweep began", created.UTC().Format(time.RFC3339))
	case age < e.Config.MinAge:
		return true, fmt.Sprintf("created %s ago, less than --min-age=%s", duration.HumanDuration(age), e.Config.MinAge)
	}
	return false, ""
}

func (e *Engine) logAction(ctx context.Context, f plannedFinding, res Result) {
	level := slog.LevelInfo
	if res.Outcome == report.OutcomeFailed {
		level = slog.LevelError
	}
	e.Logger.Log(ctx, level, "action", "rule", f.Rule, "gvr", f.Object.Resource.GroupResource().String(),
		"namespace", f.Object.Namespace, "name", f.Object.Name, "action", f.Action.String(), "outcome", res.Outcome,
		"reason", res.Reason, "detail", res.Detail)
}

// pending returns the first dependency that was not acted on successfully, or nil.
func pending(dependencies []rules.ObjectRef, done map[types.UID]bool) *rules.ObjectRef {
	for i := range dependencies {
		if !done[dependencies[i].UID] {
			return &dependencies[i]
		}
	}
	return nil
}

// namespaceOf is the namespace an object belongs to; a Namespace belongs to itself.
func namespaceOf(resource schema.GroupVersionResource, namespace, name string) string {
	if resource.GroupResource() == rules.Namespaces.GroupResource() {
		return name
	}
	return namespace
}
