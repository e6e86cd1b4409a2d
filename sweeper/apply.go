package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Applier carries out the actions rules plan, through the Writer, each with the preconditions of
// its type (see the action types). Before each write it reads the object in full, and keeps its
// pre-image (see take); after a lost race it re-reads the object and has the rule re-plan it.
type Applier struct {
	// Writer sends the writes; its clients also read the objects again: in full with Dynamic
	// (pre-images, and objects the view holds in full), their metadata with Metadata. Dynamic also
	// records the Events.
	Writer Writer
	Logger *slog.Logger
	// Events, if set, logs the writes applied, which the engine records as Events once they are
	// done; nil means no Events.
	Events *EventLog
	// Confirmer checks the facts of an action re-planned after a lost race; nil means an action
	// that rests on facts is not retried.
	Confirmer *Confirmer
	// Vet, if set, says why a re-planned action must not be taken (held back by its rule, its
	// object too young), as the engine says it of every action before the first attempt.
	Vet func(rules.Finding) (Result, bool)
	// Keeper, if set, keeps the signed record of each write and its object's pre-image before the
	// write is sent (--dry-run=none): a write whose pre-image cannot be kept is not sent.
	Keeper *Keeper
	// Concurrency bounds the requests of a batch in flight at once (ApplyBatch); 0 is 1.
	Concurrency int
}

// Apply carries out the action of a finding that rule planned from view. A write that loses a
// race (the object changed after it was observed) is retried: the object is re-read, rule
// re-plans it, and the new action, if there still is one, is sent. An object that is gone counts
// as done; one deleted and re-created is left to the next run. The result says where the object's
// pre-image is kept; the Keeper records the outcome where it can.
func (a *Applier) Apply(ctx context.Context, rule rules.Rule, view *rules.View, f rules.Finding) Result {
	switch {
	case f.Action == nil:
		return Result{}
	case a.Writer.Mode == report.DryRunClient:
		return Result{Outcome: report.OutcomePlanned}
	}
	obj, ok := view.Get(f.Object.Resource.GroupResource(), f.Object.Namespace, f.Object.Name)
	if !ok || obj.UID != f.Object.UID {
		return Failed(report.ReasonNotInView, "the object is not in the view the rule planned from")
	}

	res, acted := a.apply(ctx, rule, view, obj, f)
	return a.finish(ctx, view, f, res, acted)
}

// finish ends an action: a failure blamed on the webhook that refused it, the outcome recorded
// with the pre-image, and an applied write logged for its Event.
func (a *Applier) finish(ctx context.Context, view *rules.View, f rules.Finding, res Result, acted *rules.Object) Result {
	if res.Outcome == report.OutcomeFailed {
		blamed(view, &res)
	}
	if a.Keeper != nil && res.Before != nil && res.Before.Kept != "" {
		// The record now says what became of the write; restore judges one without by the object.
		if err := a.Keeper.record(ctx, NewFindingResult(f, res), true); err != nil {
			a.Logger.WarnContext(ctx, "the outcome of a write was not recorded with its pre-image", "kept", res.Before.Kept, "error", err)
		}
	}
	if res.Outcome == report.OutcomeApplied && a.Events != nil {
		action := f.Action
		if res.Action != nil {
			action = res.Action
		}
		a.Events.Add(f.Rule, acted.Ref(), action, f.Reason)
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
	err := a.take(ctx, f, obj, f.Action, &res)
	return a.settle(ctx, rule, view, obj, f, err, res)
}

// settle judges the first attempt of f's action on obj, which ended with err, and re-plans and
// retries it as apply says.
func (a *Applier) settle(ctx context.Context, rule rules.Rule, view *rules.View, obj *rules.Object, f rules.Finding, err error, res Result) (Result, *rules.Object) {
	action := f.Action
	for attempt := 0; ; attempt++ {
		uncertain := mayNotHaveHappened(err)
		if !uncertain && !mayHaveLostRace(err) {
			return res.Then(a.result(err)), obj
		}
		fresh, rerr := a.reread(ctx, obj)
		switch {
		case apierrors.IsNotFound(rerr):
			return res.Then(a.result(rerr)), obj // gone, which is what every action wants
		case rerr != nil:
			return res.Then(Failed(report.ReasonAPIError, "%v; re-reading the object failed: %v", err, rerr)), obj
		case fresh.UID != obj.UID:
			// Another object of the same name: the rest of the view says nothing about it.
			return res.Then(replannedAs(Skipped(report.ReasonResolved, "the object was deleted and re-created after it was observed; the next run looks at the new one"))), obj
		case uncertain && took(obj, fresh, action):
			done := a.result(nil)
			done.Evidence = []string{fmt.Sprintf("the write's answer was lost (%v); read again, the object shows it was done", err)}
			return res.Then(done), fresh
		case !uncertain && fresh.ResourceVersion == obj.ResourceVersion:
			// Nothing changed, so the precondition held: the server refused the write for another reason.
			return res.Then(a.result(err)), obj
		case attempt == maxReplans:
			return res.Then(Failed(report.ReasonConflict, "the object changed again each time it was re-planned (%v); the next run will try again", err)), obj
		}
		a.Logger.InfoContext(ctx, "object changed since it was observed, or the write's answer was lost; re-planning it",
			"rule", rule.Name(), "gvr", obj.Resource.String(), "namespace", obj.Namespace, "name", obj.Name, "action", action.Type(), "error", err)
		replanned, ok, perr := planFor(ctx, rule, view.WithObject(fresh), fresh)
		res = replannedAs(res)
		switch {
		case perr != nil:
			return res.Then(Failed(report.ReasonRuleFailed, "re-planning the object: %v", perr)), obj
		case !ok:
			return res.Then(Skipped(report.ReasonResolved, "the object changed after it was observed and the rule no longer plans an action for it")), obj
		case replanned.OptIn != "" || !sameObjects(replanned.DependsOn, f.DependsOn):
			// What was checked before the first attempt no longer covers the action.
			return res.Then(Skipped(report.ReasonResolved, "the object changed after it was observed; the next run plans it again")), obj
		case a.Vet != nil:
			if why, ok := a.Vet(replanned); !ok {
				return res.Then(why), obj
			}
		}
		holds, evidence := a.confirm(ctx, replanned.Facts)
		res.Evidence = append(res.Evidence, evidence...)
		if !holds {
			return res.Then(Skipped(report.ReasonStale, "the object changed after it was observed, and what its re-planned action rests on no longer holds")), obj
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

// take reads the object in full right before the write, keeps its pre-image (with a Keeper:
// durably, signed, or the write is not sent; without, only what undoing needs short of its body)
// and sends the action. The read is a precondition too: an object that changed since it was
// observed has won a race. A CustomResourceDefinition to delete takes its custom resources with
// it: they are streamed into its pre-image page by page, never held all at once, and counted again
// right before the delete; a count that changed meanwhile stops it.
func (a *Applier) take(ctx context.Context, f rules.Finding, obj *rules.Object, action rules.Action, res *Result) error {
	u, err := a.read(ctx, obj)
	if err != nil {
		return err
	}
	pre := preImageOf(obj, u)
	_, deletes := action.(rules.Delete)
	crd := deletes && isCRD(obj.Resource.GroupVersionResource)
	var kept customResources
	customResources := func(body *report.BodyWriter) error {
		if !crd {
			return nil
		}
		var err error
		kept, err = eachCustomResource(ctx, a.Writer.Dynamic, u, func(cr *unstructured.Unstructured) error {
			if body == nil {
				return nil
			}
			return body.Write(cr)
		})
		pre.CustomResources = kept.count
		return err
	}
	if a.Keeper != nil {
		f.Action = action
		err := a.Keeper.body(ctx, backup.FileSafe(report.ObjectOf(f.Object)), pre, func(body *report.BodyWriter) error {
			return errors.Join(body.Write(u), customResources(body))
		})
		if err == nil {
			err = a.Keeper.record(ctx, NewFindingResult(f, Result{Before: pre}), false)
		}
		if err != nil {
			return &backupError{err}
		}
	} else if err := customResources(nil); err != nil {
		return &backupError{err}
	}
	res.Before = pre
	if crd {
		if err := a.recount(ctx, u, kept, res); err != nil {
			return err
		}
	}
	return a.send(ctx, obj, action)
}

// read reads obj in full, as it was observed: the body its pre-image keeps. The API server's
// watch cache answers first (resourceVersion 0), which costs it no read of etcd; an answer of
// another version (the cache behind, or the object changed) is asked of etcd. An object that is
// not as observed, read from etcd, has won a race.
func (a *Applier) read(ctx context.Context, obj *rules.Object) (*unstructured.Unstructured, error) {
	client := dynamicClient(a.Writer.Dynamic, obj.Resource.GroupVersionResource, obj.Namespace)
	u, err := client.Get(ctx, obj.Name, metav1.GetOptions{ResourceVersion: "0"})
	if err == nil && u.GetUID() == obj.UID && u.GetResourceVersion() == obj.ResourceVersion {
		return u, nil
	}
	u, err = client.Get(ctx, obj.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return nil, err
	case u.GetUID() != obj.UID || u.GetResourceVersion() != obj.ResourceVersion:
		return nil, apierrors.NewConflict(obj.Resource.GroupResource(), obj.Name, errors.New("the object changed after it was observed"))
	}
	return u, nil
}

// preImageOf is what undoing a write to obj, read as u, needs short of its body.
func preImageOf(obj *rules.Object, u *unstructured.Unstructured) *report.PreImage {
	finalizers := u.GetFinalizers()
	if slices.Equal(finalizers, obj.Finalizers) {
		finalizers = obj.Finalizers // the view's, shared by thousands alike: the report holds them all
	}
	return &report.PreImage{Resource: obj.Resource.Resource, Finalizers: finalizers, OwnerReferences: u.GetOwnerReferences()}
}

// recount lists a CustomResourceDefinition's custom resources again, right before its delete, and
// says in res what goes with it. One created, deleted or updated since they were kept stops the
// delete: what would go with it is not what was kept; the next run looks again.
func (a *Applier) recount(ctx context.Context, crd *unstructured.Unstructured, kept customResources, res *Result) error {
	now, err := eachCustomResource(ctx, a.Writer.Dynamic, crd, func(*unstructured.Unstructured) error { return nil })
	switch {
	case err != nil:
		return &backupError{err}
	case now.count != kept.count:
		return &changedError{fmt.Sprintf("its custom resources changed while they were kept (%d, then %d right before the delete): the next run looks again",
			kept.count, now.count)}
	case now.digest != kept.digest:
		return &changedError{fmt.Sprintf("its custom resources changed while they were kept (%d, one replaced or updated since, listed again right before the delete): the next run looks again",
			now.count)}
	}
	evidence := "it has no custom resources (counted again right before the delete)"
	switch {
	case now.count > 0 && a.Keeper != nil:
		evidence = fmt.Sprintf("its %d custom resources, kept with its pre-image and counted again right before the delete, are deleted with it", now.count)
	case now.count > 0:
		evidence = fmt.Sprintf("its %d custom resources would be kept with its pre-image, counted again, and deleted with it", now.count)
	}
	if !slices.Contains(res.Evidence, evidence) {
		res.Evidence = append(res.Evidence, evidence)
	}
	return nil
}

// changedError is a delete stopped because what it takes along changed while it was kept.
type changedError struct{ why string }

func (e *changedError) Error() string { return e.why }

// isCRD reports whether gvr is the resource of CustomResourceDefinitions.
func isCRD(gvr schema.GroupVersionResource) bool {
	return gvr.GroupResource() == rules.CustomResourceDefinitions.GroupResource()
}

// backupError is a pre-image that could not be kept: the write was not sent.
type backupError struct{ err error }

func (e *backupError) Error() string { return e.err.Error() }

func (e *backupError) Unwrap() error { return e.err }

// took reports whether fresh, read again after a write whose answer was lost, shows the write
// done: the finalizers gone, the ownerReferences set, the deletion begun.
func took(before, fresh *rules.Object, action rules.Action) bool {
	c, ok := changeOf(action)
	return ok && c.took(before, fresh)
}

// mayNotHaveHappened reports whether a write failed without an answer from the server that says
// what became of it: a connection reset, a timeout. Only a re-read can tell.
func mayNotHaveHappened(err error) bool {
	var status apierrors.APIStatus
	switch {
	case err == nil, errors.Is(err, errNothingToDo), errors.Is(err, errUnknownAction), errors.As(err, new(*changedError)), errors.As(err, new(*backupError)):
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

// result is what err, the answer to the last write, makes of an action.
func (a *Applier) result(err error) Result {
	switch {
	case errors.Is(err, errNothingToDo):
		return Skipped(report.ReasonResolved, "%v", err)
	case errors.As(err, new(*changedError)):
		return Skipped(report.ReasonStale, "%v", err)
	case errors.As(err, new(*backupError)):
		return Failed(report.ReasonBackup, "%v; the write was not sent", err)
	case err == nil, apierrors.IsNotFound(err):
		return Result{Outcome: a.Writer.Mode.Done()}
	default:
		return Failed(report.ReasonAPIError, "%v", err)
	}
}

// mayHaveLostRace reports whether a write may have failed on its precondition: a 409 Conflict
// (UID precondition of a delete), or a 422, which is all the API server says when a JSON patch
// cannot be applied, a failed test operation included (k8s.io/apiserver
// endpoints/handlers/patch.go, applyJSPatch: the json-patch message is not passed on).
func mayHaveLostRace(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsInvalid(err)
}

// reread gets obj again, in full if the view held it in full.
func (a *Applier) reread(ctx context.Context, obj *rules.Object) (*rules.Object, error) {
	if obj.Content != nil {
		u, err := dynamicClient(a.Writer.Dynamic, obj.Resource.GroupVersionResource, obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return newContentObject(obj.Resource, u, nil), nil
	}
	m, err := resourceClient(a.Writer.Metadata, obj.Resource.GroupVersionResource, obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return newObject(obj.Resource, m.ObjectMeta), nil
}

// send writes action to obj as read, with the preconditions of its type.
func (a *Applier) send(ctx context.Context, obj *rules.Object, action rules.Action) error {
	c, ok := changeOf(action)
	if !ok {
		return fmt.Errorf("%w %T", errUnknownAction, action)
	}
	w, err := c.write(obj)
	if err != nil {
		return err
	}
	_, _, err = a.Writer.Send(ctx, w)
	return err
}
