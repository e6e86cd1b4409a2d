package sweeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Outcome is what became of a finding's action.
type Outcome string

// The outcomes of an action.
const (
	// OutcomePlanned: --dry-run=client, nothing was sent.
	OutcomePlanned Outcome = "planned"
	// OutcomeDryRun: --dry-run=server, the server accepted the write and persisted nothing.
	OutcomeDryRun Outcome = "dry-run"
	// OutcomeApplied: the write was persisted, or the object was already gone.
	OutcomeApplied Outcome = "applied"
	// OutcomeFailed: the write failed; the result says why.
	OutcomeFailed Outcome = "failed"
	// OutcomeSkipped: the action was not attempted; the result says why.
	OutcomeSkipped Outcome = "skipped"
)

// Reason says, as a word, why an action was skipped or failed: the report's skipReason and
// failReason, and the reason label of operator_sweeper_actions.
type Reason string

// Why an action was skipped.
const (
	// ReasonOptIn: the rule needs an opt-in in the config that is not given.
	ReasonOptIn Reason = "opt-in"
	// ReasonProtectedNamespace: the object is in a --protected-namespaces namespace.
	ReasonProtectedNamespace Reason = "protected-namespace"
	// ReasonDependency: an action this one depends on was not done in this run.
	ReasonDependency Reason = "dependency"
	// ReasonLimit: --max-actions was reached.
	ReasonLimit Reason = "limit"
	// ReasonResolved: the object changed after it was observed, so that the action is no longer
	// needed, or no longer covered by what was checked; the next run looks again.
	ReasonResolved Reason = "resolved"
	// ReasonStale: a fact the action rests on no longer holds when read again, live, or could
	// not be read again.
	ReasonStale Reason = "stale"
	// ReasonMinAge: the object is younger than --min-age, or than the sweep.
	ReasonMinAge Reason = "min-age"
	// ReasonZoneOutage: the node is in a zone where most nodes are not Ready at once.
	ReasonZoneOutage Reason = rules.HeldZoneOutage
	// ReasonInterrupted: the run was interrupted (SIGTERM, SIGINT, --timeout) before the action.
	ReasonInterrupted Reason = "interrupted"
	// ReasonNotRestorable: restore cannot undo the action (a pod deleted, a deletion under way).
	ReasonNotRestorable Reason = "not-restorable"
)

// Why an action failed.
const (
	// ReasonConflict: the object changed again while the action was being retried.
	ReasonConflict Reason = "conflict"
	// ReasonAPIError: the API server refused the write, or re-reading the object failed.
	ReasonAPIError Reason = "api-error"
	// ReasonNotInView: the finding names an object the view does not hold: a rule's bug.
	ReasonNotInView Reason = "not-in-view"
	// ReasonRuleFailed: the rule panicked while re-planning the action: a rule's bug.
	ReasonRuleFailed Reason = "rule-failed"
	// ReasonBackup: the pre-image could not be kept in --backup-dir, so the write was not sent;
	// or (skipped) a CustomResourceDefinition has custom resources and there is no --backup-dir
	// to keep them in.
	ReasonBackup Reason = "backup"
)

// Result is what became of one action.
type Result struct {
	Outcome Outcome
	// Reason says why the action was skipped or failed; empty otherwise.
	Reason Reason
	// Detail says it for a human: the error, or what the reason is about.
	Detail string
	// Replanned says the object changed after it was observed, and the action was re-planned
	// from a fresh read.
	Replanned bool
	// Action is the action that was carried out after a re-plan.
	Action rules.Action
	// Evidence are the live re-checks of the facts the action rested on.
	Evidence []string
	// BlockedBy are objects found to block the action: the webhook configuration whose webhook
	// refused the write.
	BlockedBy []rules.ObjectRef
	// Before is the object as read right before the last write sent.
	Before *PreImage
	// backupFile is the file of --backup-dir that holds Before, if any.
	backupFile string
}

func skipped(reason Reason, format string, args ...any) Result {
	return Result{Outcome: OutcomeSkipped, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func failed(reason Reason, format string, args ...any) Result {
	return Result{Outcome: OutcomeFailed, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Applier carries out actions. It is the only code in operator-sweeper that writes to the API
// server, and every write it sends carries a precondition:
//   - RemoveFinalizers: a JSON patch that tests the UID and the finalizers as observed, then
//     replaces the finalizers;
//   - SetOwnerReferences: a JSON patch that tests the resourceVersion as observed;
//   - Delete: DeleteOptions with the observed UID and resourceVersion as preconditions.
//
// Before each write it reads the object in full, and keeps its pre-image (see take).
type Applier struct {
	Metadata metadata.Interface
	// Dynamic reads objects in full (their pre-images, and re-reads of those the view holds in
	// full), and records Events.
	Dynamic dynamic.Interface
	Mode    DryRunMode
	Logger  *slog.Logger
	// Clock times the Events; nil means no Events.
	Clock clock.PassiveClock
	// Confirmer checks the facts of an action re-planned after a lost race; nil means an action
	// that rests on facts is not retried.
	Confirmer *Confirmer
	// Vet, if set, says why a re-planned action must not be taken (held back by its rule, its
	// object too young), as the engine says it of every action before the first attempt.
	Vet func(rules.Finding) (Result, bool)
	// Backups, if set, keeps each pre-image on disk before the write (--backup-dir).
	Backups *backupDir
}

// Apply carries out the action of a finding that rule planned from view. A write that loses a
// race (the object changed after it was observed) is retried: the object is re-read, rule
// re-plans it, and the new action, if there still is one, is sent. An object that is gone counts
// as done; one deleted and re-created is left to the next run. The result holds the object's
// pre-image; with Backups, so does a file, which ends up with the outcome.
func (a *Applier) Apply(ctx context.Context, rule rules.Rule, view *rules.View, f rules.Finding) Result {
	switch {
	case f.Action == nil:
		return Result{}
	case a.Mode == DryRunClient:
		return Result{Outcome: OutcomePlanned}
	}
	obj, ok := view.Get(f.Object.Resource.GroupResource(), f.Object.Namespace, f.Object.Name)
	if !ok || obj.UID != f.Object.UID {
		return failed(ReasonNotInView, "the object is not in the view the rule planned from")
	}

	res, acted := a.apply(ctx, rule, view, obj, f)
	if res.Outcome == OutcomeFailed {
		blamed(view, &res)
	}
	if res.backupFile != "" {
		// The record now says what became of the write; restore judges one without by the object.
		if _, err := a.Backups.keep(findingResult(f, res), res.backupFile); err != nil {
			a.Logger.WarnContext(ctx, "the outcome of a write was not recorded in its backup", "file", res.backupFile, "error", err)
		}
	}
	if res.Outcome == OutcomeApplied {
		action := f.Action
		if res.Action != nil {
			action = res.Action
		}
		a.recordEvent(ctx, acted, action, f.Reason)
	}
	return res
}

// maxReplans bounds how often one action is re-planned after losing a race, as
// retry.DefaultRetry bounds client-go's RetryOnConflict.
const maxReplans = 5

// apply sends the action and, when it may have lost a race or may not have reached the server,
// re-reads the object and judges it afresh: gone, or showing the write done, it is done;
// re-created, it is the next run's; otherwise the rule re-plans it, and the new action, if there
// still is one, is sent, at most maxReplans times. It returns the result and the object as it was
// acted on.
func (a *Applier) apply(ctx context.Context, rule rules.Rule, view *rules.View, obj *rules.Object, f rules.Finding) (res Result, acted *rules.Object) {
	action := f.Action
	err := a.take(ctx, f, obj, action, &res)
	for attempt := 0; ; attempt++ {
		uncertain := mayNotHaveHappened(err)
		if !uncertain && !mayHaveLostRace(err) {
			return res.then(a.result(err)), obj
		}
		fresh, rerr := a.reread(ctx, obj)
		switch {
		case apierrors.IsNotFound(rerr):
			return res.then(a.result(rerr)), obj // gone, which is what every action wants
		case rerr != nil:
			return res.then(failed(ReasonAPIError, "%v; re-reading the object failed: %v", err, rerr)), obj
		case fresh.UID != obj.UID:
			// Another object of the same name: the rest of the view says nothing about it.
			return res.then(replannedAs(skipped(ReasonResolved, "the object was deleted and re-created after it was observed; the next run looks at the new one"))), obj
		case uncertain && took(obj, fresh, action):
			done := a.result(nil)
			done.Evidence = []string{fmt.Sprintf("the write's answer was lost (%v); read again, the object shows it was done", err)}
			return res.then(done), fresh
		case !uncertain && fresh.ResourceVersion == obj.ResourceVersion:
			// Nothing changed, so the precondition held: the server refused the write for another reason.
			return res.then(a.result(err)), obj
		case attempt == maxReplans:
			return res.then(failed(ReasonConflict, "the object changed again each time it was re-planned (%v); the next run will try again", err)), obj
		}
		a.Logger.InfoContext(ctx, "object changed since it was observed, or the write's answer was lost; re-planning it",
			"rule", rule.Name(), "gvr", obj.Resource.String(), "namespace", obj.Namespace, "name", obj.Name, "action", action.Type(), "error", err)
		replanned, ok, perr := planFor(ctx, rule, view.WithObject(fresh), fresh)
		res = replannedAs(res)
		switch {
		case perr != nil:
			return res.then(failed(ReasonRuleFailed, "re-planning the object: %v", perr)), obj
		case !ok:
			return res.then(skipped(ReasonResolved, "the object changed after it was observed and the rule no longer plans an action for it")), obj
		case replanned.OptIn != "" || !sameObjects(replanned.DependsOn, f.DependsOn):
			// What was checked before the first attempt no longer covers the action.
			return res.then(skipped(ReasonResolved, "the object changed after it was observed; the next run plans it again")), obj
		case a.Vet != nil:
			if why, ok := a.Vet(replanned); !ok {
				return res.then(why), obj
			}
		}
		holds, evidence := a.confirm(ctx, replanned.Facts)
		res.Evidence = append(res.Evidence, evidence...)
		if !holds {
			return res.then(skipped(ReasonStale, "the object changed after it was observed, and what its re-planned action rests on no longer holds")), obj
		}
		obj, action = fresh, replanned.Action
		res.Action = action
		err = a.take(ctx, f, obj, action, &res)
	}
}

// replannedAs marks res as the result of a re-planned action.
func replannedAs(res Result) Result {
	res.Replanned = true
	return res
}

// then is next, the end of an action, with what the attempts so far found: that it was
// re-planned, the evidence of the re-checks, the action last sent.
func (so Result) then(next Result) Result {
	next.Replanned = next.Replanned || so.Replanned
	next.Evidence = append(slices.Clone(so.Evidence), next.Evidence...)
	if next.Action == nil {
		next.Action = so.Action
	}
	if next.Before == nil {
		next.Before, next.backupFile = so.Before, so.backupFile
	}
	return next
}

// take reads the object in full right before the write, keeps its pre-image in res (and, with
// --backup-dir, on disk, synced, or the write is not sent) and sends the action. The read is a
// precondition too: an object that changed since it was observed has won a race. A
// CustomResourceDefinition to delete takes its custom resources with it: they are listed in full
// and kept alongside, and without --backup-dir one that has any is not deleted.
func (a *Applier) take(ctx context.Context, f rules.Finding, obj *rules.Object, action rules.Action, res *Result) error {
	u, err := dynamicClient(a.Dynamic, obj.Resource.GroupVersionResource, obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return err
	case u.GetUID() != obj.UID || u.GetResourceVersion() != obj.ResourceVersion:
		return apierrors.NewConflict(obj.Resource.GroupResource(), obj.Name, errors.New("the object changed after it was observed"))
	}
	pre := &PreImage{Resource: obj.Resource.Resource, Object: preImage(u)}
	if _, deletes := action.(rules.Delete); deletes && isCRD(obj.Resource.GroupVersionResource) {
		if pre.Instances, err = customResources(ctx, a.Dynamic, u); err != nil {
			return &backupError{err}
		}
		evidence := "it has no custom resources (listed right before the delete)"
		switch {
		case len(pre.Instances) > 0 && a.Backups == nil:
			return &needsBackupError{crd: obj.Name, instances: len(pre.Instances)}
		case len(pre.Instances) > 0 && a.Mode == DryRunNone:
			evidence = fmt.Sprintf("its %d custom resources, listed in full right before the delete, are kept in --%s and in before.instances; they are deleted with it",
				len(pre.Instances), FlagBackupDir)
		case len(pre.Instances) > 0:
			evidence = fmt.Sprintf("its %d custom resources, listed in full, are in before.instances; with --dry-run=none they would be kept in --%s and deleted with it",
				len(pre.Instances), FlagBackupDir)
		}
		if !slices.Contains(res.Evidence, evidence) {
			res.Evidence = append(res.Evidence, evidence)
		}
	}
	res.Before = pre
	if a.Backups != nil && a.Mode == DryRunNone {
		f.Action = action
		if res.backupFile, err = a.Backups.keep(findingResult(f, Result{Before: pre}), res.backupFile); err != nil {
			return &backupError{err}
		}
	}
	return a.send(ctx, obj, action)
}

// needsBackupError is a delete that would take data along, with nowhere to keep it.
type needsBackupError struct {
	crd       string
	instances int
}

func (e *needsBackupError) Error() string {
	return fmt.Sprintf("CustomResourceDefinition %s has %d custom resources, which are deleted with it; run with --%s to keep them first",
		e.crd, e.instances, FlagBackupDir)
}

// backupError is a pre-image that could not be kept: the write was not sent.
type backupError struct{ err error }

func (e *backupError) Error() string { return e.err.Error() }

func (e *backupError) Unwrap() error { return e.err }

// took reports whether fresh, read again after a write whose answer was lost, shows the write
// done: the finalizers gone, the ownerReferences set, the deletion begun.
func took(before, fresh *rules.Object, action rules.Action) bool {
	switch act := action.(type) {
	case rules.RemoveFinalizers:
		return !slices.ContainsFunc(fresh.Finalizers, func(f string) bool { return slices.Contains(act.Finalizers, f) })
	case rules.SetOwnerReferences:
		for _, add := range act.Add {
			if !slices.ContainsFunc(fresh.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == add.UID }) {
				return false
			}
		}
		return !slices.ContainsFunc(fresh.OwnerReferences, func(ref metav1.OwnerReference) bool { return slices.Contains(act.Remove, ref.UID) })
	case rules.Delete:
		return before.DeletionTimestamp == nil && fresh.DeletionTimestamp != nil
	}
	return false
}

// mayNotHaveHappened reports whether a write failed without an answer from the server that says
// what became of it: a connection reset, a timeout. Only a re-read can tell.
func mayNotHaveHappened(err error) bool {
	var status apierrors.APIStatus
	switch {
	case err == nil, errors.Is(err, errNothingToDo), errors.Is(err, errUnknownAction), errors.As(err, new(*needsBackupError)), errors.As(err, new(*backupError)):
		return false
	case errors.As(err, &status):
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
	}
	return true
}

// webhookInError finds the admission webhook an API error names: `admission webhook "x.example.com"
// denied the request: …`, or `failed calling webhook "x.example.com": …`.
var webhookInError = regexp.MustCompile(`webhook "([^"]+)"`)

// blamed names, in a failed result, the webhook configuration whose webhook refused the write or
// could not be called, and links to it: its dead-webhooks finding says why. Only a name one
// configuration has is blamed on it.
func blamed(view *rules.View, res *Result) {
	m := webhookInError.FindStringSubmatch(res.Detail)
	if m == nil {
		return
	}
	configs := rules.WebhookConfigurations(view, m[1])
	if len(configs) != 1 {
		return
	}
	config := configs[0]
	res.Detail = fmt.Sprintf("refused by webhook %s of %s %s: %s", m[1], config.Resource.Kind, config.Name, res.Detail)
	res.BlockedBy = append(res.BlockedBy, config.Ref())
}

// confirm checks the facts of a re-planned action with the Confirmer, afresh; without one, an
// action that rests on facts is not confirmed.
func (a *Applier) confirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	switch {
	case len(facts) == 0:
		return true, nil
	case a.Confirmer == nil:
		return false, []string{"not re-checked: nothing to re-check the facts with"}
	}
	return a.Confirmer.Reconfirm(ctx, facts)
}

// sameObjects reports whether two lists name the same objects.
func sameObjects(a, b []rules.ObjectRef) bool {
	return slices.EqualFunc(a, b, func(x, y rules.ObjectRef) bool { return x.UID == y.UID })
}

// recordEvent tells the object's audience what was done to it and why, as kubectl describe
// shows: reason OperatorSweeper<Action>. An Event that cannot be recorded is only logged.
func (a *Applier) recordEvent(ctx context.Context, obj *rules.Object, action rules.Action, reason string) {
	if a.Clock == nil {
		return
	}
	namespace := obj.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault // where Events of cluster-scoped objects go
	}
	now := metav1.NewTime(a.Clock.Now())
	message := action.String() + ": " + reason
	if len(message) > 1024 {
		message = message[:1024]
	}
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: obj.Name + ".", Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion:      obj.Resource.GroupVersion().String(),
			Kind:            obj.Resource.Kind,
			Namespace:       obj.Namespace,
			Name:            obj.Name,
			UID:             obj.UID,
			ResourceVersion: obj.ResourceVersion,
		},
		Reason:              "OperatorSweeper" + action.Type(),
		Message:             message,
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: PushJob},
		ReportingController: "operator-sweeper.io/operator-sweeper",
		ReportingInstance:   PushJob,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(event)
	if err == nil {
		u := &unstructured.Unstructured{Object: content}
		u.SetAPIVersion("v1")
		u.SetKind("Event")
		_, err = a.Dynamic.Resource(rules.Events.GroupVersionResource).Namespace(namespace).Create(ctx, u, metav1.CreateOptions{})
	}
	if err != nil {
		a.Logger.WarnContext(ctx, "event not recorded", "gvr", obj.Resource.String(), "namespace", obj.Namespace, "name", obj.Name, "error", err)
	}
}

// planFor returns the finding with an action that rule plans for obj in view. A rule that panics
// is an error, as in the plan stage.
func planFor(ctx context.Context, rule rules.Rule, view *rules.View, obj *rules.Object) (rules.Finding, bool, error) {
	findings, err := planSafely(ctx, rule, view)
	if err != nil {
		return rules.Finding{}, false, err
	}
	for _, f := range findings {
		if f.Action != nil && f.Object.UID == obj.UID {
			return f, true, nil
		}
	}
	return rules.Finding{}, false, nil
}

var (
	// errNothingToDo is what send returns for an action the object no longer needs.
	errNothingToDo = errors.New("none of the finalizers to remove is on the object any more")
	// errUnknownAction is a rule's action the applier cannot send: a bug.
	errUnknownAction = errors.New("unknown action")
)

// result is what err, the answer to the last write, makes of an action.
func (a *Applier) result(err error) Result {
	switch {
	case errors.Is(err, errNothingToDo):
		return skipped(ReasonResolved, "%v", err)
	case errors.As(err, new(*needsBackupError)):
		return skipped(ReasonBackup, "%v", err)
	case errors.As(err, new(*backupError)):
		return failed(ReasonBackup, "%v; the write was not sent", err)
	case err == nil, apierrors.IsNotFound(err):
		if a.Mode == DryRunServer {
			return Result{Outcome: OutcomeDryRun}
		}
		return Result{Outcome: OutcomeApplied}
	default:
		return failed(ReasonAPIError, "%v", err)
	}
}

// mayHaveLostRace reports whether a write may have failed on its precondition: a 409 Conflict
// (UID precondition of a delete), or a 422, which is all the API server says when a JSON patch
// cannot be applied, a failed test operation included (k8s.io/apiserver
// endpoints/handlers/patch.go, applyJSPatch: the json-patch message is not passed on).
func mayHaveLostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
}

func (a *Applier) client(obj *rules.Object) metadata.ResourceInterface {
	return resourceClient(a.Metadata, obj.Resource.GroupVersionResource, obj.Namespace)
}

// reread gets obj again, in full if the view held it in full.
func (a *Applier) reread(ctx context.Context, obj *rules.Object) (*rules.Object, error) {
	if obj.Content != nil {
		u, err := dynamicClient(a.Dynamic, obj.Resource.GroupVersionResource, obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return newContentObject(obj.Resource, u, nil), nil
	}
	m, err := a.client(obj).Get(ctx, obj.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return newObject(obj.Resource, m.ObjectMeta), nil
}

func (a *Applier) send(ctx context.Context, obj *rules.Object, action rules.Action) error {
	var dryRun []string
	if a.Mode == DryRunServer {
		dryRun = []string{metav1.DryRunAll}
	}
	switch act := action.(type) {
	case rules.RemoveFinalizers:
		remaining := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return slices.Contains(act.Finalizers, f) })
		if len(remaining) == len(obj.Finalizers) {
			return errNothingToDo
		}
		return a.patch(ctx, obj, dryRun,
			jsonPatchOp{Op: "test", Path: "/metadata/uid", Value: obj.UID},
			jsonPatchOp{Op: "test", Path: "/metadata/finalizers", Value: obj.Finalizers},
			jsonPatchOp{Op: "replace", Path: "/metadata/finalizers", Value: remaining})
	case rules.SetOwnerReferences:
		return a.patch(ctx, obj, dryRun,
			jsonPatchOp{Op: "test", Path: "/metadata/resourceVersion", Value: obj.ResourceVersion},
			jsonPatchOp{Op: "add", Path: "/metadata/ownerReferences", Value: ownerReferences(obj.OwnerReferences, act)})
	case rules.Delete:
		uid, resourceVersion := obj.UID, obj.ResourceVersion
		return a.client(obj).Delete(ctx, obj.Name, metav1.DeleteOptions{
			DryRun:             dryRun,
			GracePeriodSeconds: act.GracePeriodSeconds,
			Preconditions:      &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion},
		})
	default:
		return fmt.Errorf("%w %T", errUnknownAction, action)
	}
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func (a *Applier) patch(ctx context.Context, obj *rules.Object, dryRun []string, ops ...jsonPatchOp) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encode patch for %s %s/%s: %w", obj.Resource, obj.Namespace, obj.Name, err)
	}
	_, err = a.client(obj).Patch(ctx, obj.Name, types.JSONPatchType, data, metav1.PatchOptions{DryRun: dryRun})
	return err
}

// ownerReferences returns refs without the removed owners, with the added ones last. An added
// reference replaces one with the same UID.
func ownerReferences(refs []metav1.OwnerReference, act rules.SetOwnerReferences) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+len(act.Add))
	for _, ref := range refs {
		replaced := slices.ContainsFunc(act.Add, func(add metav1.OwnerReference) bool { return add.UID == ref.UID })
		if !replaced && !slices.Contains(act.Remove, ref.UID) {
			out = append(out, ref)
		}
	}
	return append(out, act.Add...)
}
