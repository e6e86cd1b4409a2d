package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// TestF5CatalogPodOnLostNode runs F5 with the real node lifecycle controller, taint manager,
// scheduler, kwok kubelets and catalog-operator. A node is lost; the taint manager evicts the
// catalog pod on it, which stays Terminating, as no kubelet confirms it. OLM v0.28.0 counts that
// pod as its registry server (the force-deletion of PR #3201 runs only when its health check
// fails, which PR #3366 later fixed), so the catalog never recovers. The sweeper force-deletes
// the pod and OLM runs the catalog again. A pod on a live node is kept; a pod whose node is away
// for less than --node-not-ready-for is left alone, and its kubelet, back, finishes the deletion.
func TestF5CatalogPodOnLostNode(t *testing.T) {
	setUpOnce(t)
	ctx := context.Background()
	ns := testCluster.NewNamespace(t, "f5")
	doomed, err := testCluster.StartNodes(ctx, "doomed", map[string]string{cluster.CatalogNodeLabel + "lost": "true"}, "doomed-1")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testCluster.Kube.CoreV1().Nodes().Delete(ctx, "doomed-1", metav1.DeleteOptions{}) })
	blip, err := testCluster.StartNodes(ctx, "blip", map[string]string{cluster.CatalogNodeLabel + "blip": "true"}, "blip-1")
	require.NoError(t, err)
	require.NoError(t, setNodeLabel(ctx, stableNodes[1], cluster.CatalogNodeLabel+"live", "true"))
	t.Cleanup(func() { _ = setNodeLabel(ctx, stableNodes[1], cluster.CatalogNodeLabel+"live", "") })
	for name, tolerateLostNodes := range map[string]bool{"lost": false, "blip": true, "live": false} {
		require.NoError(t, testCluster.CreateCatalogSourceOnNodes(ctx, ns, name, tolerateLostNodes))
	}
	pods, err := testCluster.WaitCatalogPods(ctx, ns, "lost", "blip", "live")
	require.NoError(t, err)
	require.Equal(t, "doomed-1", pods["lost"].Spec.NodeName)
	require.Equal(t, "blip-1", pods["blip"].Spec.NodeName)

	// The doomed node's kubelet stops for good; the taint manager evicts the catalog pod.
	require.NoError(t, doomed.Stop())
	require.NoError(t, testCluster.WaitNodeReady(ctx, "doomed-1", corev1.ConditionUnknown))
	repairs, err := testCluster.OLMRepairsDeadCatalogPods()
	require.NoError(t, err)
	if repairs {
		f5OLMRepairs(t, ns, pods, blip)
		return
	}
	pods["lost"], err = testCluster.WaitEvicted(ctx, pods["lost"])
	require.NoError(t, err)
	graceEnds := pods["lost"].DeletionTimestamp.Time
	// Shortly before the sweep, another node's kubelet goes away, and an admin deletes its pod.
	time.Sleep(time.Until(graceEnds.Add(-15 * time.Second)))
	blipGoesAway(t, ns, pods, blip)
	// The catalog can run elsewhere once its pod is gone.
	require.NoError(t, setNodeLabel(ctx, stableNodes[0], cluster.CatalogNodeLabel+"lost", "true"))
	t.Cleanup(func() { _ = setNodeLabel(ctx, stableNodes[0], cluster.CatalogNodeLabel+"lost", "") })
	time.Sleep(time.Until(graceEnds))
	require.False(t, gone(t, pods["lost"]), "OLM waits for the evicted pod")
	require.Nil(t, servingPod(t, ns, "lost"), "and runs no other")

	rep := sweep(t)

	lost := cluster.FindingAbout(rep, "catalog-pods", podObject(pods["lost"]))
	require.NotNil(t, lost, "the pod on the lost node is reported")
	assert.Equal(t, report.OutcomeApplied, lost.Outcome, "%s %s", lost.Reason, lost.Error)
	assert.Contains(t, lost.Reason, "its node doomed-1 has not been Ready for")
	assert.Contains(t, lost.Evidence, "pod condition DisruptionTarget=True: being evicted, which alone does not make its node lost")
	assert.True(t, gone(t, pods["lost"]), "force-deleted")
	assert.Nil(t, cluster.FindingAbout(rep, "catalog-pods", podObject(pods["blip"])), "its node may come back")
	if live := servingPod(t, ns, "live"); assert.NotNil(t, live, "a pod on a live node is kept") {
		assert.Equal(t, pods["live"].UID, live.UID, "a pod on a live node is kept")
	}
	assert.Equal(t, []string{"catalog-pods Pod " + pods["lost"].Name}, cluster.ActedOn(rep, ns))
	testCluster.Eventually(t, time.Minute, "OLM runs the catalog again, on a Ready node", func() bool {
		pod := servingPod(t, ns, "lost")
		return pod != nil && pod.Spec.NodeName == stableNodes[0]
	})

	blipEnds(t, pods)
}

// f5OLMRepairs is F5 with an OLM that force-deletes its own registry pods on a dead node
// (operator-framework/operator-lifecycle-manager#3366, v0.29.0 and later): the catalog-operator
// deletes the evicted pod itself, long before its grace period ends, and runs the catalog again
// once a node may take it. The sweeper and OLM do not fight: the sweep after it finds the pod
// gone and acts on nothing, fails nothing, and leaves OLM's new pod alone; the pod of a node away
// for less than --node-not-ready-for is left to its kubelet, as with an older OLM.
func f5OLMRepairs(t *testing.T, ns string, pods map[string]*corev1.Pod, blip *cluster.Process) {
	t.Helper()
	ctx := context.Background()
	lostAt := time.Now()
	testCluster.Eventually(t, time.Minute, "OLM force-deletes its evicted registry pod itself", func() bool { return gone(t, pods["lost"]) })
	t.Logf("OLM deleted the registry pod of the lost node %s after the node was Unknown", time.Since(lostAt).Round(time.Second))
	assert.Less(t, time.Since(lostAt), 25*time.Second, "within the pod's grace period (30 s after its eviction, 5 s after the node is lost): OLM force-deleted it")
	// The catalog can run elsewhere.
	require.NoError(t, setNodeLabel(ctx, stableNodes[0], cluster.CatalogNodeLabel+"lost", "true"))
	t.Cleanup(func() { _ = setNodeLabel(ctx, stableNodes[0], cluster.CatalogNodeLabel+"lost", "") })
	var replacement *corev1.Pod
	testCluster.Eventually(t, time.Minute, "OLM runs the catalog again, on a Ready node", func() bool {
		replacement = servingPod(t, ns, "lost")
		return replacement != nil && replacement.Spec.NodeName == stableNodes[0]
	})
	// Another node's kubelet goes away, and an admin deletes its pod.
	blipGoesAway(t, ns, pods, blip)
	time.Sleep(2 * time.Second) // past the admin's one-second grace period

	rep := sweep(t)

	for _, f := range rep.Findings {
		if f.Object.Namespace == ns {
			assert.NotEqual(t, report.OutcomeFailed, f.Outcome, "%s %s %s: %s", f.Rule, f.Object.Kind, f.Object.Name, f.Error)
		}
	}
	assert.Nil(t, cluster.FindingAbout(rep, "catalog-pods", podObject(pods["lost"])), "OLM deleted it already")
	assert.Nil(t, cluster.FindingAbout(rep, "catalog-pods", podObject(replacement)), "OLM's new pod runs on a Ready node")
	assert.Nil(t, cluster.FindingAbout(rep, "catalog-pods", podObject(pods["blip"])), "its node may come back")
	assert.Empty(t, cluster.ActedOn(rep, ns), "nothing left to do")
	// OLM deleted the pod (a second attempt, on a stale cache, finds it gone: no error), and none of
	// its deletions failed.
	var deletions int
	for _, line := range strings.Split(testCluster.Log("catalog-operator"), "\n") {
		if strings.Contains(line, "force deleting dead pod") && strings.Contains(line, pods["lost"].Name) {
			deletions++
		}
		assert.NotContains(t, line, "error deleting dead pods")
	}
	assert.GreaterOrEqual(t, deletions, 1, "OLM says it force-deleted the pod")
	if now := servingPod(t, ns, "lost"); assert.NotNil(t, now, "OLM's new pod serves") {
		assert.Equal(t, replacement.UID, now.UID, "and is the one it made")
	}
	if live := servingPod(t, ns, "live"); assert.NotNil(t, live, "a pod on a live node is kept") {
		assert.Equal(t, pods["live"].UID, live.UID, "a pod on a live node is kept")
	}
	blipEnds(t, pods)
}

// blipGoesAway stops the kubelet of the blip node and deletes its catalog pod, as an admin does:
// the pod stays Terminating while its node is away.
func blipGoesAway(t *testing.T, ns string, pods map[string]*corev1.Pod, blip *cluster.Process) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, blip.Stop())
	require.NoError(t, testCluster.WaitNodeReady(ctx, "blip-1", corev1.ConditionUnknown))
	require.NoError(t, testCluster.Kube.CoreV1().Pods(ns).Delete(ctx, pods["blip"].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}))
}

// blipEnds starts the blip node's kubelet again, which finishes the deletion of its pod itself.
func blipEnds(t *testing.T, pods map[string]*corev1.Pod) {
	t.Helper()
	_, err := testCluster.StartKwok("blip")
	require.NoError(t, err)
	require.NoError(t, testCluster.WaitNodeReady(context.Background(), "blip-1", corev1.ConditionTrue))
	testCluster.Eventually(t, time.Minute, "the kubelet finishes the deletion", func() bool { return gone(t, pods["blip"]) })
}

// servingPod returns the pod that serves a CatalogSource of namespace, or nil.
func servingPod(t *testing.T, namespace, source string) *corev1.Pod {
	t.Helper()
	pod, err := testCluster.ServingCatalogPod(context.Background(), namespace, source)
	require.NoError(t, err)
	return pod
}

// gone reports whether pod no longer exists, by UID: OLM may have made another of the same name.
func gone(t *testing.T, pod *corev1.Pod) bool {
	t.Helper()
	now, err := testCluster.Kube.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return now.UID != pod.UID
}

// setNodeLabel sets a label of a node to value, or removes it if value is empty.
func setNodeLabel(ctx context.Context, node, label, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, label, value)
	if value == "" {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label)
	}
	_, err := testCluster.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// podObject is pod as the unstructured object the report helpers take.
func podObject(pod *corev1.Pod) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind("Pod")
	obj.SetNamespace(pod.Namespace)
	obj.SetName(pod.Name)
	return obj
}
