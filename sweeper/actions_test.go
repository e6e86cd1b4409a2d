package sweeper

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	rt "github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// undoCase is a record of an action and its object's pre-image, as restore reads them.
type undoCase struct {
	rec report.FindingResult
	pre *unstructured.Unstructured
}

func record(resource string, obj *unstructured.Unstructured, action report.ActionSummary) undoCase {
	return undoCase{rt.Record(resource, obj, action), report.Image(obj)}
}

func TestPlanUndo(t *testing.T) {
	const uid = types.UID("original")
	cm := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return rt.Object("v1", "ConfigMap", "shop", "cfg", uid, mutate...)
	}
	oldOwner := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: "old-owner"}
	newOwner := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: "new-owner"}

	// Delete: the object as it was before it was deleted.
	deleted := record("configmaps", cm(), report.ActionSummary{Type: "Delete"})
	pod := record("pods", rt.Object("v1", "Pod", "olm", "catalog-abc", uid), report.ActionSummary{Type: "Delete"})
	// RemoveFinalizers: one of two finalizers removed; the other keeps the object alive.
	finalized := record("configmaps", cm(rt.WithFinalizers("keep.example.com", "gone.example.com")),
		report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"gone.example.com"}})
	allFinalizers := record("configmaps", cm(rt.WithFinalizers("gone.example.com")),
		report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"gone.example.com"}})
	// SetOwnerReferences: a stale owner replaced by its successor.
	reowned := record("configmaps", cm(rt.WithOwners(oldOwner)),
		report.ActionSummary{Type: "SetOwnerReferences", AddOwnerReferences: []metav1.OwnerReference{newOwner}, RemoveOwnerReferences: []types.UID{"old-owner"}})
	disowned := record("configmaps", cm(rt.WithOwners(oldOwner)),
		report.ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"old-owner"}})
	// A controller reference (Controller is a *bool) kept, and a stale owner dropped.
	controller := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "etcd-operator", UID: "controller", Controller: new(true)}
	controlled := record("configmaps", cm(rt.WithOwners(controller, oldOwner)),
		report.ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"old-owner"}})
	// The stale owner replaced beside a controller, and gone since: it is not put back.
	replaced := record("configmaps", cm(rt.WithOwners(controller, oldOwner)),
		report.ActionSummary{Type: "SetOwnerReferences", AddOwnerReferences: []metav1.OwnerReference{newOwner}, RemoveOwnerReferences: []types.UID{"old-owner"}})
	unknown := record("configmaps", cm(), report.ActionSummary{Type: "Frobnicate"})

	tests := []struct {
		name         string
		rec          undoCase
		current      *unstructured.Unstructured
		wantAction   Action
		wantOutcome  report.Outcome
		wantReason   report.Reason
		wantEvidence bool
		// gone are the owners that do not exist.
		gone []types.UID
	}{
		// Delete.
		{name: "delete: gone, re-created", rec: deleted, wantAction: recreate{}},
		{name: "delete: a pod is never re-created", rec: pod, wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
		{name: "delete: a pod is never re-created, even if one of that name exists", rec: pod,
			current: rt.Object("v1", "Pod", "olm", "catalog-abc", "other"), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
		{name: "delete: still being deleted", rec: deleted, current: cm(rt.WithFinalizers("x"), rt.BeingDeleted),
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
		{name: "delete: the object was not deleted", rec: deleted, current: cm(),
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "delete: re-created as it was", rec: deleted, current: cm(rt.WithUID("recreated"), rt.Written),
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "delete: another object of that name", rec: deleted, current: cm(rt.WithUID("recreated"), rt.Relabeled),
			wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict},

		// RemoveFinalizers.
		{name: "finalizers: gone once released, re-created", rec: finalized, wantAction: recreate{}, wantEvidence: true},
		{name: "finalizers: back on the object", rec: finalized,
			current: cm(rt.WithFinalizers("keep.example.com", "gone.example.com"), rt.Written), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "finalizers: back on the object, though it is being deleted", rec: finalized,
			current: cm(rt.WithFinalizers("gone.example.com", "keep.example.com"), rt.BeingDeleted), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "finalizers: being deleted", rec: finalized,
			current: cm(rt.WithFinalizers("keep.example.com"), rt.BeingDeleted), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
		{name: "finalizers: as the sweep left it, re-added", rec: finalized,
			current: cm(rt.WithFinalizers("keep.example.com"), rt.Written), wantAction: addFinalizers{[]string{"gone.example.com"}}},
		{name: "finalizers: all removed, as the sweep left it, re-added", rec: allFinalizers, current: cm(rt.Written),
			wantAction: addFinalizers{[]string{"gone.example.com"}}},
		{name: "finalizers: changed otherwise since", rec: finalized,
			current: cm(rt.WithFinalizers("keep.example.com"), rt.Relabeled), wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict},
		{name: "finalizers: re-created as it was", rec: finalized,
			current: cm(rt.WithUID("recreated"), rt.WithFinalizers("keep.example.com", "gone.example.com")), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "finalizers: another object of that name", rec: finalized,
			current: cm(rt.WithUID("recreated"), rt.WithFinalizers("keep.example.com")), wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict},

		// SetOwnerReferences.
		{name: "owners: gone", rec: reowned, wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
		{name: "owners: as the sweep left them, put back", rec: reowned, current: cm(rt.WithOwners(newOwner), rt.Written),
			wantAction: setOwners{refs: []metav1.OwnerReference{oldOwner},
				change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}, Remove: []types.UID{"new-owner"}}}},
		{name: "owners: all removed, as the sweep left them, put back", rec: disowned, current: cm(rt.Written),
			wantAction: setOwners{refs: []metav1.OwnerReference{oldOwner}, change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}}}},
		{name: "owners: an unchanged controller reference is not reported as added", rec: controlled, current: cm(rt.WithOwners(controller), rt.Written),
			wantAction: setOwners{refs: []metav1.OwnerReference{controller, oldOwner}, change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}}}},
		{name: "owners: as they were before", rec: reowned, current: cm(rt.WithOwners(oldOwner), rt.Written),
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "owners: changed otherwise since", rec: reowned, current: cm(rt.WithOwners(newOwner), rt.Relabeled),
			wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict},
		{name: "owners: re-created as it was", rec: reowned, current: cm(rt.WithUID("recreated"), rt.WithOwners(oldOwner)),
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},
		{name: "owners: another object of that name", rec: reowned, current: cm(rt.WithUID("recreated"), rt.WithOwners(newOwner)),
			wantOutcome: report.OutcomeFailed, wantReason: report.ReasonConflict},

		{name: "owners: an owner that is gone is not put back", rec: replaced, current: cm(rt.WithOwners(controller, newOwner), rt.Written), gone: []types.UID{"old-owner"},
			wantAction: setOwners{refs: []metav1.OwnerReference{controller}, change: rules.SetOwnerReferences{Remove: []types.UID{"new-owner"}}}, wantEvidence: true},
		{name: "owners: as they were before but for an owner that is gone", rec: replaced, current: cm(rt.WithOwners(controller), rt.Written), gone: []types.UID{"old-owner"},
			wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonResolved},

		{name: "an action restore does not know", rec: unknown, current: cm(), wantOutcome: report.OutcomeSkipped, wantReason: report.ReasonNotRestorable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.rec.pre.DeepCopy()
			got := PlanUndo(tt.rec.rec, want, tt.current, func(ref metav1.OwnerReference) bool { return !slices.Contains(tt.gone, ref.UID) })
			assert.Equal(t, tt.wantAction, got.Action)
			assert.Equal(t, tt.wantOutcome, got.Result.Outcome)
			assert.Equal(t, tt.wantReason, got.Result.Reason)
			if got.Action == nil {
				assert.NotEmpty(t, got.Result.Detail, "a skip or a failure says why")
			}
			assert.Equal(t, tt.wantEvidence, len(got.Evidence) > 0, "evidence: %q", got.Evidence)
			assert.Equal(t, tt.rec.pre, want, "the pre-image is not modified")
		})
	}
}

func TestUndoOf(t *testing.T) {
	tests := []struct {
		action report.ActionSummary
		want   Action
	}{
		{action: report.ActionSummary{Type: "Delete"}, want: recreate{}},
		{action: report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"a", "b"}}, want: addFinalizers{[]string{"a", "b"}}},
		{action: report.ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"x"}}, want: setOwners{}},
	}
	for _, tt := range tests {
		t.Run(tt.action.Type, func(t *testing.T) {
			assert.Equal(t, tt.want, UndoOf(report.FindingResult{Action: &tt.action}))
		})
	}
}
