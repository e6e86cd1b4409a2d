package sweeper

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Undo is what puts one object back as a record says it was before its sweep: an action to send,
// or the result that says why there is none, with what restore found out on the way.
type Undo struct {
	Action Action
	// Object is the object as the action writes it back: the pre-image, its owners remapped to
	// those that exist.
	Object   *unstructured.Unstructured
	Result   Result
	Evidence []string
}

// Recreation is the undo that creates obj again, as it is: for a custom resource of a
// CustomResourceDefinition restored.
func Recreation(obj *unstructured.Unstructured) Undo { return Undo{Action: recreate{}, Object: obj} }

// UndoOf is the action that undoes rec's, as the report names it before anything is read.
func UndoOf(rec report.FindingResult) Action {
	if c, ok := changeNamed(rec.Action); ok {
		return c.inverse()
	}
	return recreate{}
}

// PlanUndo decides what undoes rec's action, given the object as restore wants it back (want: the
// pre-image, owners remapped) and as it is now (current, nil if it does not exist). An
// ownerReference whose owner does not exist with its UID (exists says) is not put back: the
// garbage collector would delete the object by it.
func PlanUndo(rec report.FindingResult, want, current *unstructured.Unstructured, exists func(metav1.OwnerReference) bool) Undo {
	c, ok := changeNamed(rec.Action)
	if !ok {
		return Undo{Result: Skipped(report.ReasonNotRestorable, "restore does not know action %s", rec.Action.Type)}
	}
	// Dropped before the undo is planned, so that an object restored without them is found to
	// be restored already.
	refs := want.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool { return !exists(ref) })
	want = want.DeepCopy()
	want.SetOwnerReferences(nilIfEmpty(kept))
	u := c.undo(rec, want, current)
	if u.Action == nil {
		return u
	}
	for _, ref := range refs {
		if !slices.Contains(kept, ref) {
			u.Evidence = append(u.Evidence, fmt.Sprintf("its ownerReference to %s %s (uid %s) is not put back: no such owner exists, and the garbage collector would delete it by it",
				ref.Kind, ref.Name, ref.UID))
		}
	}
	u.Object = want
	return u
}

// undoElsewhere plans the undo of an action whose object is gone (re-create it) or was replaced
// by another of the same name; done is false when the object is the very one acted on.
func undoElsewhere(rec report.FindingResult, want, current *unstructured.Unstructured) (u Undo, done bool) {
	switch {
	case current == nil:
		u.Action = recreate{}
	case current.GetUID() != rec.Object.UID && sameImage(want, current):
		u.Result = Skipped(report.ReasonResolved, "already restored: the object (uid %s) is as it was before the sweep", current.GetUID())
	case current.GetUID() != rec.Object.UID:
		u.Result = Failed(report.ReasonConflict, "an object of that name (uid %s) exists and differs from the pre-image: left alone", current.GetUID())
	default:
		return Undo{}, false
	}
	return u, true
}

// Undo sends an undo that PlanUndo planned from current, with the same kind of preconditions as a
// sweep's writes: a create fails if the object exists meanwhile; a change tests the UID and
// resourceVersion read. A lost race is left alone, for restore to be run again: nothing is
// re-planned.
func (wr *Writer) Undo(ctx context.Context, resource schema.GroupVersionResource, u Undo, current *unstructured.Unstructured) Result {
	action, ok := u.Action.(undoing)
	if !ok || u.Object == nil {
		return Failed(report.ReasonNotRestorable, "%v %s", errUnknownAction, u.Action.Type())
	}
	outcome, created, err := wr.Send(ctx, action.write(resource, u.Object, current))
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err), apierrors.IsInvalid(err) && current != nil:
		return Failed(report.ReasonConflict, "the object changed while it was restored (%v): left alone; run restore again to look at it afresh", err)
	case err != nil:
		return Failed(report.ReasonAPIError, "%v", err)
	}
	res := Result{Outcome: outcome}
	if created != nil && wr.Mode == report.DryRunNone {
		res.Evidence = []string{fmt.Sprintf("re-created with a new UID %s", created.GetUID())}
	}
	return res
}
