package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// operator is a real operator as its tests walk it: the workload that runs it (the process itself
// runs outside the cluster, started and stopped by the test), and the finalizer it puts on the
// objects of resource.
type operator struct {
	namespace string
	// kind and name are the workload's: Deployment or StatefulSet.
	kind, name string
	resource   schema.GroupVersionResource
	finalizer  string
}

func (o operator) objects() dynamic.ResourceInterface {
	return testCluster.Dynamic.Resource(o.resource).Namespace(o.namespace)
}

func (o operator) workloads() dynamic.ResourceInterface {
	return testCluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: strings.ToLower(o.kind) + "s"}).Namespace(o.namespace)
}

// workloadHas waits until the workload's status field (availableReplicas, replicas) is n.
func (o operator) workloadHas(t *testing.T, field string, n int64) {
	t.Helper()
	testCluster.Eventually(t, time.Minute, fmt.Sprintf("%s %s has %s %d", o.kind, o.name, field, n), func() bool {
		w, err := o.workloads().Get(context.Background(), o.name, metav1.GetOptions{})
		got, _, _ := unstructured.NestedInt64(w.Object, "status", field)
		return err == nil && got == n
	})
}

// gone waits until obj is gone.
func (o operator) gone(t *testing.T, obj *unstructured.Unstructured, what string) {
	t.Helper()
	testCluster.Eventually(t, 2*time.Minute, what, func() bool {
		_, err := o.objects().Get(context.Background(), obj.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// releaseAtCleanup removes the finalizers of objs when the test ends, whatever it left.
func (o operator) releaseAtCleanup(t *testing.T, objs []*unstructured.Unstructured) {
	t.Cleanup(func() {
		for _, obj := range objs {
			_, _ = o.objects().Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
}

// keptWhileAvailable deletes obj while the workload is available but the operator's process is
// stopped: the sweep reports obj, names the workload, and releases nothing.
func (o operator) keptWhileAvailable(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, o.objects().Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}))
	rep := sweep(t)
	f := cluster.FindingAbout(rep, "orphaned-finalizers", obj)
	require.NotNil(t, f, "the terminating %s is reported", obj.GetKind())
	assert.Nil(t, f.Action, "its operator runs: nothing released")
	assert.Contains(t, strings.Join(f.Evidence, "\n"), o.kind+" "+o.namespace+"/"+o.name, "the finding names the controller")
	now, err := o.objects().Get(context.Background(), obj.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{o.finalizer}, now.GetFinalizers())
}

// warnedWhenScaledToZero scales the workload to 0 and deletes obj: the sweep warns, and releases
// nothing.
func (o operator) warnedWhenScaledToZero(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	_, err := o.workloads().Patch(context.Background(), o.name, types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	o.workloadHas(t, "replicas", 0)
	require.NoError(t, o.objects().Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}))
	rep := sweep(t)
	f := cluster.FindingAbout(rep, "orphaned-finalizers", obj)
	require.NotNil(t, f)
	assert.Nil(t, f.Action, "scaled to 0 is not uninstalled")
	assert.Equal(t, "controller scaled to 0; scale it up instead of removing "+o.finalizer+": "+o.kind+" "+o.namespace+"/"+o.name, f.Reason)
	assert.Empty(t, cluster.ActedOn(rep, o.namespace))
}

// releasedWhenUninstalled deletes the workload, as an uninstall does: the sweep, with the shipped
// config, releases obj, which then goes.
func (o operator) releasedWhenUninstalled(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	require.NoError(t, o.workloads().Delete(context.Background(), o.name, metav1.DeleteOptions{}))
	testCluster.Eventually(t, time.Minute, o.kind+" "+o.name+" is gone", func() bool {
		_, err := o.workloads().Get(context.Background(), o.name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	rep := sweep(t)
	f := cluster.FindingAbout(rep, "orphaned-finalizers", obj)
	require.NotNil(t, f)
	assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s %s", f.Reason, f.Error)
	assert.Equal(t, []string{"orphaned-finalizers " + obj.GetKind() + " " + obj.GetName()}, cluster.ActedOn(rep, o.namespace))
	o.gone(t, obj, "the released "+obj.GetKind()+" is gone")
}
