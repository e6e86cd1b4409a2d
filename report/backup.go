package report

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PreImage is an object as it was read right before the sweeper wrote to it: what restore brings
// back.
type PreImage struct {
	// Resource is the object's resource by its plural name ("clusterroles"); the object's
	// apiVersion gives its group and version.
	Resource string `json:"resource"`
	// Object is the object without status and what the API server sets (uid, resourceVersion,
	// managedFields, creationTimestamp, generation, deletionTimestamp).
	Object *unstructured.Unstructured `json:"object"`
	// Instances are, for a CustomResourceDefinition that was deleted, its custom resources, which
	// went with it, in the same form.
	Instances []*unstructured.Unstructured `json:"instances,omitempty"`
}

// Image is obj as a pre-image keeps it: without status and what the server sets.
func Image(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, field := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", field)
	}
	return out
}

// The identity of a backup record.
const (
	BackupAPIVersion = APIVersion
	BackupKind       = "SweepBackup"
)

// BackupRecord is one file of --backup-dir: a write the sweeper was about to make, with the
// pre-image of its object, and, once known, its outcome. A record without an outcome is of a run
// that ended before the write's answer: restore judges it by the object as it is.
type BackupRecord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Cluster and StartTime say which run wrote it.
	Cluster   string      `json:"cluster"`
	StartTime metav1.Time `json:"startTime"`
	// Finding is the finding whose action the write carries out, with its pre-image in before.
	Finding FindingResult `json:"finding"`
}
