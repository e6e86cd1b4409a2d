package sweeper

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// setOwnerReferences adds and removes ownerReferences and keeps every other one: a JSON patch that
// tests the UID and resourceVersion as read. Restore puts them back with setOwners.
type setOwnerReferences rules.SetOwnerReferences

func (a setOwnerReferences) Type() string   { return rules.SetOwnerReferences(a).Type() }
func (a setOwnerReferences) String() string { return rules.SetOwnerReferences(a).String() }

func (setOwnerReferences) of(a rules.Action) (change, bool) {
	this, ok := a.(rules.SetOwnerReferences)
	return setOwnerReferences(this), ok
}

func (setOwnerReferences) read(s *report.ActionSummary) change {
	return setOwnerReferences{Add: s.AddOwnerReferences, Remove: s.RemoveOwnerReferences}
}

func (a setOwnerReferences) Summary() *report.ActionSummary {
	return &report.ActionSummary{Type: a.Type(), AddOwnerReferences: a.Add, RemoveOwnerReferences: a.Remove}
}

func (a setOwnerReferences) write(obj *rules.Object) (Write, error) {
	return Write{Resource: obj.Resource.GroupVersionResource, Namespace: obj.Namespace, Name: obj.Name, patch: []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: obj.UID},
		{Op: "test", Path: "/metadata/resourceVersion", Value: obj.ResourceVersion},
		{Op: "add", Path: "/metadata/ownerReferences", Value: ownerReferences(obj.OwnerReferences, rules.SetOwnerReferences(a))},
	}}, nil
}

func (a setOwnerReferences) waitsForMinAge() bool { return true }

func (a setOwnerReferences) took(_, fresh *rules.Object) bool {
	for _, add := range a.Add {
		if !slices.ContainsFunc(fresh.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == add.UID }) {
			return false
		}
	}
	return !slices.ContainsFunc(fresh.OwnerReferences, func(ref metav1.OwnerReference) bool { return slices.Contains(a.Remove, ref.UID) })
}

func (a setOwnerReferences) inverse() Action { return setOwners{} }

func (a setOwnerReferences) undo(rec report.FindingResult, want, current *unstructured.Unstructured) Undo {
	if current == nil {
		return Undo{Result: Skipped(report.ReasonNotRestorable, "the object no longer exists")}
	}
	if u, done := undoElsewhere(rec, want, current); done {
		return u
	}
	var u Undo
	after := want.DeepCopy()
	after.SetOwnerReferences(nilIfEmpty(ownerReferences(want.GetOwnerReferences(), rules.SetOwnerReferences(a))))
	refs := want.GetOwnerReferences()
	switch {
	case reflect.DeepEqual(refs, current.GetOwnerReferences()):
		u.Result = Skipped(report.ReasonResolved, "the ownerReferences are as they were before the sweep")
	case !sameImage(after, current):
		u.Result = Failed(report.ReasonConflict, "the object changed after the sweep set its ownerReferences: left alone")
	default:
		u.Action = setOwners{refs: refs, change: ownerChange(current.GetOwnerReferences(), refs)}
	}
	return u
}

// setOwners puts the object's ownerReferences back as they were, exactly, in their order: a JSON
// patch that tests the UID and resourceVersion read.
type setOwners struct {
	refs   []metav1.OwnerReference
	change rules.SetOwnerReferences
}

func (setOwners) Type() string { return (rules.SetOwnerReferences{}).Type() }

func (a setOwners) String() string { return a.change.String() }

func (a setOwners) Summary() *report.ActionSummary { return setOwnerReferences(a.change).Summary() }

func (a setOwners) write(resource schema.GroupVersionResource, _, current *unstructured.Unstructured) Write {
	refs := a.refs
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return Write{Resource: resource, Namespace: current.GetNamespace(), Name: current.GetName(), patch: []jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: current.GetUID()},
		{Op: "test", Path: "/metadata/resourceVersion", Value: current.GetResourceVersion()},
		{Op: "add", Path: "/metadata/ownerReferences", Value: refs},
	}}
}

// ownerChange is what turns the references from into to, for the report.
func ownerChange(from, to []metav1.OwnerReference) rules.SetOwnerReferences {
	var change rules.SetOwnerReferences
	for _, ref := range to {
		// Equal, not ==: Controller and BlockOwnerDeletion are pointers.
		if !slices.ContainsFunc(from, func(f metav1.OwnerReference) bool { return reflect.DeepEqual(f, ref) }) {
			change.Add = append(change.Add, ref)
		}
	}
	for _, ref := range from {
		if !slices.ContainsFunc(to, func(t metav1.OwnerReference) bool { return t.UID == ref.UID }) {
			change.Remove = append(change.Remove, ref.UID)
		}
	}
	return change
}
