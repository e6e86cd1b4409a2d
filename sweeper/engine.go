package sweeper

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Streams are where a run writes: the report to Out, logs to Err.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// Run is one run of the command: it validates opts, connects to the cluster, sweeps, notifies,
// prints the report and writes the report file. It returns an *InputError for bad input (nothing
// was done), an error wrapping ErrIncomplete when a stage or an action failed, and ErrFindings
// when findings are present and --fail-on-findings is set; the report is printed in both latter
// cases.
func Run(ctx context.Context, opts Options, streams Streams) error {
	engine, runCtx, cancel, err := connect(ctx, &opts, streams)
	if err != nil {
		return err
	}
	defer cancel()
	report := engine.Run(runCtx)
	// The notification and the push have deadlines of their own: a run that ran out of time still
	// says that it failed.
	return opts.finish(ctx, report, enabledRules(engine.Rules), streams.Out, engine.Logger)
}

// connect validates opts, connects to the cluster and builds the engine, with the context of the
// run (--timeout) and its cancel function. opts.Cluster is set from the kubeconfig if empty.
func connect(ctx context.Context, opts *Options, streams Streams) (*Engine, context.Context, context.CancelFunc, error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, nil, err
	}
	logger := newLogger(*opts, streams.Err)
	// client-go logs through klog; route it to the same structured log.
	klog.SetSlogLogger(logger)
	ruleSet, err := opts.RuleSet()
	if err != nil {
		return nil, nil, nil, err
	}
	config, cluster, err := LoadRESTConfig(opts.Kubeconfig, opts.Context)
	if err != nil {
		return nil, nil, nil, err
	}
	if opts.Cluster == "" {
		opts.Cluster = cluster
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if opts.Timeout.Duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, opts.Timeout.Duration)
	}
	clients, err := NewClients(config, *opts, logger)
	if err != nil {
		cancel()
		return nil, nil, nil, &InputError{Err: fmt.Errorf("kubeconfig: %w", err)}
	}
	if err := clients.Ping(runCtx, config.Host); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	engine := &Engine{Options: *opts, Clients: clients, Rules: ruleSet, Logger: logger}
	if f, ok := streams.Err.(*os.File); ok && opts.LogFormat == "text" && term.IsTerminal(int(f.Fd())) {
		engine.Progress = f
	}
	return engine, runCtx, cancel, nil
}

// finish notifies, pushes the metrics, prints the report and writes the report file, and says how
// the run ended. The notification goes first, so that its failure is in the metrics and the report.
func (o Options) finish(ctx context.Context, report *Report, enabled []ruleMetrics, out io.Writer, logger *slog.Logger) error {
	stages := engineStages()
	if o.notifies() {
		o.sendNotification(ctx, report, logger)
		stages = append(stages, StageNotify)
	}
	if o.PushgatewayURL != "" {
		if err := o.pushMetrics(ctx, o.Cluster, o.shard(), report, enabled, stages); err != nil {
			logger.ErrorContext(ctx, "metrics not pushed", "error", err)
			report.Errors = append(report.Errors, ReportError{Stage: StagePush, Message: err.Error(), Fatal: o.RequirePush})
		} else {
			logger.InfoContext(ctx, "metrics pushed", "pushgateway", o.PushgatewayURL, "job", PushJob, "cluster", o.Cluster, "shard", o.Shard)
		}
	}
	if err := report.Print(out, o.Output); err != nil {
		return fmt.Errorf("print the report: %w", err)
	}
	if o.ReportFile != "" {
		if err := report.writeFile(o.ReportFile); err != nil {
			return fmt.Errorf("write --%s %s: %w", FlagReportFile, o.ReportFile, err)
		}
	}
	switch {
	case report.Failed():
		return fmt.Errorf("%w: %s", ErrIncomplete, report.failure())
	case o.FailOnFindings && report.Summary.Findings > 0:
		return fmt.Errorf("%w: %d findings (--%s)", ErrFindings, report.Summary.Findings, FlagFailOnFindings)
	}
	return nil
}

func newLogger(opts Options, w io.Writer) *slog.Logger {
	level, _ := opts.logLevel() // validated
	handlerOpts := &slog.HandlerOptions{Level: level}
	if opts.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, handlerOpts))
	}
	return slog.New(slog.NewTextHandler(w, handlerOpts))
}

// Engine runs one sweep: inventory, observe, plan, limit, apply. It returns the report and
// prints nothing, but for the progress line it is given.
type Engine struct {
	Options Options
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

// plannedFinding is a finding with the rule that made it, which the applier needs to re-plan.
type plannedFinding struct {
	rules.Finding
	rule  rules.Rule
	order int
}

// Run sweeps once and returns the report. Problems are recorded in the report, never returned.
func (e *Engine) Run(ctx context.Context) *Report {
	if e.Clock == nil {
		e.Clock = e.Clients.Clock()
	}
	report := newReport(e.Clock.Now(), e.Options)
	defer func() {
		if !e.Options.shard().sharded() { // a shard counts before it keeps its own findings (plan)
			report.countStuckNamespaces(everyNamespace)
		}
		report.Metadata.EndTime = metav1.NewTime(e.Clock.Now())
	}()

	e.pruneBackups(ctx, report)
	inv, err := e.inventory(ctx)
	report.Errors = append(report.Errors, inv.problems...)
	report.Summary.Incomplete = len(inv.problems) > 0 || err != nil
	for _, p := range inv.problems {
		e.Logger.WarnContext(ctx, "API group not discovered; its resources are not walked", "groupVersion", p.Resource, "error", p.Message)
	}
	if err != nil {
		return e.stageFailed(ctx, report, StageInventory, err)
	}
	report.Summary.Resources = len(inv.resources)
	e.Logger.InfoContext(ctx, "inventory done", "resources", len(inv.resources), "errors", len(inv.problems))

	start := e.Clock.Now()
	view, problems, err := e.observe(ctx, inv, e.contentPlans())
	report.Errors = append(report.Errors, problems...)
	report.Summary.Incomplete = report.Summary.Incomplete || len(problems) > 0 || err != nil
	for _, p := range problems {
		e.Logger.WarnContext(ctx, "list failed; the resource is not fully observed", "gvr", p.Resource, "error", p.Message)
	}
	if err != nil {
		return e.stageFailed(ctx, report, StageObserve, err)
	}
	report.Summary.Scanned = view.Len()
	e.Logger.InfoContext(ctx, "observe done", "objects", view.Len(), "errors", len(problems), "duration", e.Clock.Since(start).String())

	planned := e.plan(ctx, view, report)
	e.Logger.InfoContext(ctx, "plan done", "findings", len(planned))

	e.limitAndApply(ctx, view, start, planned, report)
	e.Logger.InfoContext(ctx, "apply done", "mode", e.Options.DryRun, "planned", report.Summary.Planned,
		"applied", report.Summary.Applied, "failed", report.Summary.Failed, "skipped", report.Summary.Skipped)
	return report
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

func (e *Engine) stageFailed(ctx context.Context, report *Report, stage string, err error) *Report {
	e.Logger.ErrorContext(ctx, "stage failed", "stage", stage, "error", err)
	report.Errors = append(report.Errors, ReportError{Stage: stage, Message: err.Error(), Fatal: true})
	return report
}

// plan runs every rule and orders the findings deterministically: by rule (which is the apply
// order), then resource, namespace and name; findings of one rule about one object keep the
// rule's order. A rule that panics is reported and the others still run.
func (e *Engine) plan(ctx context.Context, view *rules.View, report *Report) []plannedFinding {
	var planned []plannedFinding
	for i, rule := range e.Rules {
		findings, err := planSafely(ctx, rule, view)
		if err != nil {
			e.ruleFailed(ctx, report, rule, err)
			continue
		}
		for _, f := range findings {
			f.Rule = rule.Name()
			planned = append(planned, plannedFinding{Finding: f, rule: rule, order: i})
		}
	}
	if shard := e.Options.shard(); shard.sharded() {
		planned = e.keepOwn(planned, shard, report)
	}
	slices.SortStableFunc(planned, func(a, b plannedFinding) int {
		return cmp.Or(
			cmp.Compare(a.order, b.order),
			cmp.Compare(a.Object.Resource.GroupResource().String(), b.Object.Resource.GroupResource().String()),
			cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Name, b.Object.Name),
		)
	})
	return planned
}

// keepOwn keeps the findings about objects the shard owns, so that every object is reported and
// acted on by exactly one shard. The stuck namespaces it owns are counted first, from every
// finding: the root cause of a namespace's chain may be an object another shard reports.
func (e *Engine) keepOwn(planned []plannedFinding, shard Shard, report *Report) []plannedFinding {
	all := &Report{}
	for _, f := range planned {
		all.addFinding(f.Finding, Result{})
	}
	all.countStuckNamespaces(shard.ownsNamespace)
	report.Summary.StuckNamespaces = all.Summary.StuckNamespaces
	return slices.DeleteFunc(planned, func(f plannedFinding) bool {
		return !shard.ownsObject(f.Object.Resource, f.Object.Namespace, f.Object.Name)
	})
}

// everyNamespace counts every stuck namespace: a sweep that is not split.
func everyNamespace(string) bool { return true }

// ruleFailed records a rule that panicked: a bug, which fails the run (exit 1), although the
// other rules' findings are reported and their actions taken.
func (e *Engine) ruleFailed(ctx context.Context, report *Report, rule rules.Rule, err error) {
	var panicked *rulePanic
	stack := ""
	if errors.As(err, &panicked) {
		stack = panicked.stack
	}
	e.Logger.ErrorContext(ctx, "rule failed", "rule", rule.Name(), "error", err, "stack", stack)
	report.Errors = append(report.Errors, ReportError{Stage: StagePlan, Rule: rule.Name(), Message: err.Error(), Fatal: true})
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
func (e *Engine) limitAndApply(ctx context.Context, view *rules.View, start time.Time, planned []plannedFinding, report *Report) {
	confirmer := &Confirmer{Observed: view, Clients: e.Clients, Clock: e.Clock, PageSize: e.Options.PageSize}
	applier := &Applier{Metadata: e.Clients.Metadata, Dynamic: e.Clients.Dynamic, Mode: e.Options.DryRun, Logger: e.Logger, Clock: e.Clock, Confirmer: confirmer,
		Vet: func(f rules.Finding) (Result, bool) { return e.vet(view, start, f) }}
	if e.Options.BackupDir != "" {
		applier.Backups = &backupDir{root: e.Options.BackupDir, cluster: e.Options.Cluster, startTime: report.Metadata.StartTime.Time}
	}
	protected := patterns(e.Options.ProtectedNamespaces)
	done := map[types.UID]bool{} // objects acted on successfully in this run
	taken, interrupted := 0, 0
	for _, f := range planned {
		res, take := e.limit(protected, f, done)
		if take {
			res, take = e.vet(view, start, f.Finding)
		}
		if take && e.Options.MaxActions > 0 && taken >= e.Options.MaxActions {
			res, take = skipped(ReasonLimit, "--%s=%d reached", FlagMaxActions, e.Options.MaxActions), false
		}
		if take && ctx.Err() != nil {
			res, take = skipped(ReasonInterrupted, "the run was interrupted (%v) before this action; the next run takes it", context.Cause(ctx)), false
			interrupted++
		}
		if take {
			var attempted bool
			if res, attempted = e.act(ctx, confirmer, applier, view, f); attempted {
				taken++
			}
			if res.Reason == ReasonRuleFailed {
				e.ruleFailed(ctx, report, f.rule, errors.New(res.Detail))
			}
		}
		switch res.Outcome {
		case OutcomePlanned, OutcomeDryRun, OutcomeApplied:
			done[f.Object.UID] = true
		}
		report.addFinding(f.Finding, res)
	}
	if interrupted > 0 {
		e.Logger.ErrorContext(ctx, "run interrupted; actions left for the next run", "taken", taken, "left", interrupted, "cause", context.Cause(ctx))
		report.Errors = append(report.Errors, ReportError{Stage: StageApply, Fatal: true,
			Message: fmt.Sprintf("interrupted (%v) after %d actions; %d were not taken, the next run takes them", context.Cause(ctx), taken, interrupted)})
	}
}

// pruneBackups removes the files in --backup-dir older than --backup-retention. A failure is
// reported, and fails nothing: each write still needs its own pre-image kept.
func (e *Engine) pruneBackups(ctx context.Context, report *Report) {
	if e.Options.BackupDir == "" {
		return
	}
	// File times are the local clock's.
	removed, err := pruneBackups(e.Options.BackupDir, time.Now().Add(-time.Duration(e.Options.BackupRetention)))
	if err != nil {
		e.Logger.WarnContext(ctx, "old backups not all removed", "dir", e.Options.BackupDir, "removed", removed, "error", err)
		report.Errors = append(report.Errors, ReportError{Stage: StageApply, Message: fmt.Sprintf("--%s: remove files older than --%s=%s: %v",
			FlagBackupDir, FlagBackupRetention, e.Options.BackupRetention, err)})
		return
	}
	e.Logger.InfoContext(ctx, "old backups removed", "dir", e.Options.BackupDir, "removed", removed, "retention", e.Options.BackupRetention.String())
}

// inFlightGrace is how long an action under way when the run is interrupted (SIGTERM, --timeout)
// may take to finish: a write is never cut off between sending and reading its answer if that
// can be helped. With the notification's and the push's own deadlines (10 s each by default), it
// fits the CronJob's 45 s termination grace period, and the report is still printed.
const inFlightGrace = 10 * time.Second

// act confirms the facts of an action, live, and carries it out if they hold (attempted). It runs
// to its end even when ctx is cancelled meanwhile, for up to inFlightGrace.
func (e *Engine) act(ctx context.Context, confirmer *Confirmer, applier *Applier, view *rules.View, f plannedFinding) (res Result, attempted bool) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(inFlightGrace, cancel) })
	defer stop()

	holds, evidence := confirmer.Confirm(actx, f.Facts)
	if holds {
		res = applier.Apply(actx, f.rule, view, f.Finding)
	} else {
		res = skipped(ReasonStale, "what the action rests on no longer holds, read again right before it")
	}
	res.Evidence = append(evidence, res.Evidence...)
	e.logAction(ctx, f, res)
	return res, holds
}

// limit says why an action is not taken in this run, or that it may be (take): no opt-in, a
// protected namespace, a dependency not done.
func (e *Engine) limit(protected patterns, f plannedFinding, done map[types.UID]bool) (res Result, take bool) {
	if f.Action == nil {
		return Result{}, false
	}
	namespace := namespaceOf(f.Object.Resource, f.Object.Namespace, f.Object.Name)
	if f.OptIn != "" {
		return skipped(ReasonOptIn, "set %s to act", f.OptIn), false
	}
	if protected.match(namespace) {
		return skipped(ReasonProtectedNamespace, "%s is in --%s", namespace, FlagProtectedNamespaces), false
	}
	if dependency := pending(f.DependsOn, done); dependency != nil {
		return skipped(ReasonDependency, "%s was not acted on first", dependency), false
	}
	return Result{}, true
}

// vet says why an action must not be taken, or that it may be: held back by its rule, or its
// object too young. The applier asks it again of an action re-planned after a lost race.
func (e *Engine) vet(view *rules.View, start time.Time, f rules.Finding) (Result, bool) {
	if f.Held != nil {
		return skipped(Reason(f.Held.Reason), "%s", f.Held.Detail), false
	}
	if young, why := e.tooYoung(view, start, f); young {
		return skipped(ReasonMinAge, "%s", why), false
	}
	return Result{}, true
}

// tooYoung reports whether the action would delete or re-own an object created less than
// --min-age ago, or after the sweep began observing: nothing that young is an operator's debris
// yet, and it may be what an operator just installed. Releasing a finalizer has a threshold of
// its own (--min-terminating-age).
func (e *Engine) tooYoung(view *rules.View, start time.Time, f rules.Finding) (bool, string) {
	switch f.Action.(type) {
	case rules.Delete, rules.SetOwnerReferences:
	default:
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
	case age < e.Options.MinAge.Duration:
		return true, fmt.Sprintf("created %s ago, less than --%s=%s", duration.HumanDuration(age), FlagMinAge, e.Options.MinAge.Duration)
	}
	return false, ""
}

func (e *Engine) logAction(ctx context.Context, f plannedFinding, res Result) {
	level := slog.LevelInfo
	if res.Outcome == OutcomeFailed {
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
