package sweeper

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// removeFinalizers removes exactly the named finalizers: a JSON patch that tests the UID, the
// resourceVersion and the finalizers as read, then replaces them. Restore puts them back with addFinalizers.
type removeFinalizers rules.RemoveFinalizers

func (a removeFinalizers) Type() string   { return rules.RemoveFinalizers(a).Type() }
func (a removeFinalizers) String() string { return rules.RemoveFinalizers(a).String() }

func (removeFinalizers) of(a rules.Action) (change, bool) {
	this, ok := a.(rules.RemoveFinalizers)
	return removeFinalizers(this), ok
}

func (removeFinalizers) read(s *report.ActionSummary) change {
	return removeFinalizers{Finalizers: s.Finalizers}
}

func (a removeFinalizers) Summary() *report.ActionSummary {
	return &report.ActionSummary{Type: a.Type(), Finalizers: a.Finalizers}
}

func (a removeFinalizers) write(obj *rules.Object) (Write, error) {
	remaining := slices.DeleteFunc(slices.Clone(obj.Finalizers), func(f string) bool { return slices.Contains(a.Finalizers, f) })
	if len(remaining) == len(obj.Finalizers) {
		return Write{}, errNothingToDo
	}
	return Write{Resource: obj.Resource.GroupVersionResource, Namespace: obj.Namespace, Name: obj.Name, patch: []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: obj.UID},
		{Op: "test", Path: "/metadata/resourceVersion", Value: obj.ResourceVersion},
		{Op: "test", Path: "/metadata/finalizers", Value: obj.Finalizers},
		{Op: "replace", Path: "/metadata/finalizers", Value: remaining},
	}}, nil
}

func (a removeFinalizers) waitsForMinAge() bool { return false }

func (a removeFinalizers) took(_, fresh *rules.Object) bool {
	return !slices.ContainsFunc(fresh.Finalizers, func(f string) bool { return slices.Contains(a.Finalizers, f) })
}

func (a removeFinalizers) inverse() Action { return addFinalizers{a.Finalizers} }

func (a removeFinalizers) undo(rec report.FindingResult, want, current *unstructured.Unstructured) Undo {
	if u, done := undoElsewhere(rec, want, current); done {
		if current == nil {
			u.Evidence = append(u.Evidence, "the object was deleted once its finalizers were released: it is re-created from the pre-image, without deletionTimestamp")
		}
		return u
	}
	var u Undo
	after := want.DeepCopy()
	after.SetFinalizers(nilIfEmpty(slices.DeleteFunc(slices.Clone(want.GetFinalizers()), func(f string) bool { return slices.Contains(a.Finalizers, f) })))
	switch {
	case !slices.ContainsFunc(a.Finalizers, func(f string) bool { return !slices.Contains(current.GetFinalizers(), f) }):
		u.Result = Skipped(report.ReasonResolved, "the finalizers are on the object")
	case current.GetDeletionTimestamp() != nil:
		u.Result = Skipped(report.ReasonNotRestorable, "the object is being deleted, and the API server adds no finalizer to an object being deleted")
	case !sameImage(after, current):
		u.Result = Failed(report.ReasonConflict, "the object changed after the sweep removed its finalizers: left alone")
	default:
		u.Action = addFinalizers{a.Finalizers}
	}
	return u
}

// addFinalizers puts removed finalizers back on the object, by server-side apply of only them,
// with the UID and resourceVersion read as preconditions.
type addFinalizers struct{ finalizers []string }

func (addFinalizers) Type() string { return "AddFinalizers" }

func (a addFinalizers) String() string { return "add finalizers " + strings.Join(a.finalizers, ", ") }

func (a addFinalizers) Summary() *report.ActionSummary {
	return &report.ActionSummary{Type: a.Type(), Finalizers: a.finalizers}
}

func (a addFinalizers) write(resource schema.GroupVersionResource, _, current *unstructured.Unstructured) Write {
	apply := &unstructured.Unstructured{}
	apply.SetAPIVersion(current.GetAPIVersion())
	apply.SetKind(current.GetKind())
	apply.SetNamespace(current.GetNamespace())
	apply.SetName(current.GetName())
	apply.SetUID(current.GetUID())
	apply.SetResourceVersion(current.GetResourceVersion())
	apply.SetFinalizers(a.finalizers)
	return Write{Resource: resource, Namespace: current.GetNamespace(), Name: current.GetName(), apply: apply}
}
