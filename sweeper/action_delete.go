package sweeper

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// deleteObject deletes the object, with the UID and resourceVersion read as preconditions, so that
// a re-created object of the same name is never deleted by mistake. Restore re-creates it with
// recreate; never a pod.
type deleteObject rules.Delete

func (a deleteObject) Type() string   { return rules.Delete(a).Type() }
func (a deleteObject) String() string { return rules.Delete(a).String() }

func (deleteObject) of(a rules.Action) (change, bool) {
	this, ok := a.(rules.Delete)
	return deleteObject(this), ok
}

func (deleteObject) read(s *report.ActionSummary) change {
	return deleteObject{GracePeriodSeconds: s.GracePeriodSeconds}
}

func (a deleteObject) Summary() *report.ActionSummary {
	return &report.ActionSummary{Type: a.Type(), GracePeriodSeconds: a.GracePeriodSeconds}
}

func (a deleteObject) write(obj *rules.Object) (Write, error) {
	uid, resourceVersion := obj.UID, obj.ResourceVersion
	return Write{Resource: obj.Resource.GroupVersionResource, Namespace: obj.Namespace, Name: obj.Name, delete: &metav1.DeleteOptions{
		GracePeriodSeconds: a.GracePeriodSeconds,
		Preconditions:      &metav1.Preconditions{UID: &uid, ResourceVersion: &resourceVersion},
	}}, nil
}

func (a deleteObject) waitsForMinAge() bool { return true }

func (a deleteObject) took(before, fresh *rules.Object) bool {
	return before.DeletionTimestamp == nil && fresh.DeletionTimestamp != nil
}

func (a deleteObject) inverse() Action { return recreate{} }

func (a deleteObject) undo(rec report.FindingResult, want, current *unstructured.Unstructured) Undo {
	gv, _ := schema.ParseGroupVersion(rec.Object.APIVersion)
	if rec.Before != nil && gv.WithResource(rec.Before.Resource).GroupResource() == rules.Pods.GroupResource() {
		return Undo{Result: Skipped(report.ReasonNotRestorable, "a deleted pod is re-created by its controller (a CatalogSource's by OLM), never by restore")}
	}
	if u, done := undoElsewhere(rec, want, current); done {
		return u
	}
	if current.GetDeletionTimestamp() == nil {
		return Undo{Result: Skipped(report.ReasonResolved, "the object was not deleted: nothing to undo")}
	}
	return Undo{Result: Skipped(report.ReasonNotRestorable, "its deletion is under way (finalizers %s); once it is gone, restore re-creates it",
		strings.Join(current.GetFinalizers(), ", "))}
}

// recreate creates a deleted object again from its pre-image (want), as a Create, which fails if
// an object of that name appeared meanwhile; for a CustomResourceDefinition, restore re-creates its
// custom resources afterwards.
type recreate struct{ instances int }

func (recreate) Type() string { return "Create" }

func (a recreate) String() string {
	if a.instances > 0 {
		return fmt.Sprintf("re-create from the pre-image, with %d custom resources", a.instances)
	}
	return "re-create from the pre-image"
}

func (a recreate) Summary() *report.ActionSummary { return &report.ActionSummary{Type: a.Type()} }

func (a recreate) write(resource schema.GroupVersionResource, want, _ *unstructured.Unstructured) Write {
	return Write{Resource: resource, Namespace: want.GetNamespace(), Name: want.GetName(), create: want}
}

// Recreate is the action that re-creates a deleted object, with instances custom resources if it
// is a CustomResourceDefinition, as the report shows it.
func Recreate(instances int) Action { return recreate{instances: instances} }
