package sweeper

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// Undo is what puts one object back as a record says it was before its sweep: an action to send,
// or the result that says why there is none, with what restore found out on the way.
type Undo struct {
	Action   Action
	Result   Result
	Evidence []string
}

// UndoOf is the action that undoes rec's, as the report names it before anything is read.
func UndoOf(rec report.FindingResult) Action {
	if c, ok := changeNamed(rec.Action); ok {
		return c.inverse()
	}
	return recreate{}
}

// PlanUndo decides what undoes rec's action, given the object as restore wants it back (want: the
// pre-image, owners remapped) and as it is now (current, nil if it does not exist).
func PlanUndo(rec report.FindingResult, want, current *unstructured.Unstructured) Undo {
	c, ok := changeNamed(rec.Action)
	if !ok {
		return Undo{Result: Skipped(report.ReasonNotRestorable, "restore does not know action %s", rec.Action.Type)}
	}
	return c.undo(rec, want, current)
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

// Undo sends an action that undoes a sweep's, planned by PlanUndo from want and current, with the
// same kind of preconditions as a sweep's writes: a create fails if the object exists meanwhile; a
// change tests the UID and resourceVersion read. A lost race is left alone, for restore to be run
// again: nothing is re-planned.
func (wr *Writer) Undo(ctx context.Context, resource schema.GroupVersionResource, action Action, want, current *unstructured.Unstructured) Result {
	u, ok := action.(undoing)
	if !ok {
		return Failed(report.ReasonNotRestorable, "%v %s", errUnknownAction, action.Type())
	}
	outcome, created, err := wr.Send(ctx, u.write(resource, want, current))
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
