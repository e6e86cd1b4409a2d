package sweeper

import (
	"errors"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Action is an action as the engine carries it out: a rule's (RemoveFinalizers,
// SetOwnerReferences, Delete) or restore's (Create, AddFinalizers, SetOwnerReferences). Each type
// is one implementation, in a file of its own with its inverse: how to write it, how to tell it
// done, how to show it and how to undo it.
type Action interface {
	rules.Action
	// Summary is the action as a report shows it, and as restore reads it back.
	Summary() *report.ActionSummary
}

// change is an action a rule plans.
type change interface {
	Action
	// of is a, if it is a rule's action of this type.
	of(a rules.Action) (change, bool)
	// read is the action a report's summary of one of this type records.
	read(s *report.ActionSummary) change
	// write is the request that carries the action out on obj as it was read, guarded by
	// preconditions; errNothingToDo if obj no longer needs it.
	write(obj *rules.Object) (Write, error)
	// took reports whether fresh, read again after a write whose answer was lost, shows it done.
	took(before, fresh *rules.Object) bool
	// waitsForMinAge says whether the action waits until its object is --min-age old (and older
	// than the sweep): what deletes or re-owns an object does; a release of finalizers has
	// --min-terminating-age, which its rule applies.
	waitsForMinAge() bool
	// undo plans what puts the object of rec back as it was before the action: want is its
	// pre-image as restore writes it back, current the object as it is now (nil if it is gone).
	undo(rec report.FindingResult, want, current *unstructured.Unstructured) Undo
	// inverse is the action that undoes this one, as a report names it before anything is read.
	inverse() Action
}

// undoing is an action restore takes: what undoes a change.
type undoing interface {
	Action
	// write is the request that puts the object back as want, given it as current (nil if gone).
	write(resource schema.GroupVersionResource, want, current *unstructured.Unstructured) Write
}

var (
	// errNothingToDo is what write returns for an action the object no longer needs.
	errNothingToDo = errors.New("none of the finalizers to remove is on the object any more")
	// errUnknownAction is a rule's action the engine cannot send: a bug.
	errUnknownAction = errors.New("unknown action")
)

// changes are the engine's implementations of the actions rules plan: a new type of action is a
// file of its own and a line here.
func changes() []change { return []change{removeFinalizers{}, setOwnerReferences{}, deleteObject{}} }

// changeOf is the engine's implementation of a rule's action.
func changeOf(a rules.Action) (change, bool) {
	for _, c := range changes() {
		if this, ok := c.of(a); ok {
			return this, true
		}
	}
	return nil, false
}

// changeNamed is the engine's implementation of an action a report records.
func changeNamed(s *report.ActionSummary) (change, bool) {
	for _, c := range changes() {
		if c.Type() == s.Type {
			return c.read(s), true
		}
	}
	return nil, false
}

// Summarize is an action as the report shows it.
func Summarize(a rules.Action) *report.ActionSummary {
	if engine, ok := a.(Action); ok {
		return engine.Summary()
	}
	if c, ok := changeOf(a); ok {
		return c.Summary()
	}
	return &report.ActionSummary{Type: a.Type()}
}

// sameImage reports whether two objects are the same but for status and what the server sets.
func sameImage(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(report.Image(a).Object, report.Image(b).Object)
}

// SameImage reports whether two objects are the same but for status and what the server sets.
func SameImage(a, b *unstructured.Unstructured) bool { return sameImage(a, b) }

// nilIfEmpty is list, or nil if it is empty: the API server keeps no empty list of finalizers or
// ownerReferences, so an image to compare with an object must not hold one.
func nilIfEmpty[T any](list []T) []T {
	if len(list) == 0 {
		return nil
	}
	return list
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
