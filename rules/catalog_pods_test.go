package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// node has a Ready condition of status, since ago.
func node(name, status string, ago time.Duration) *Object {
	return object(Nodes, "", name, withContent(map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "MemoryPressure", "status": "Unknown", "lastTransitionTime": testNow.Add(-time.Hour).Format(time.RFC3339)},
		map[string]any{"type": "Ready", "status": status, "lastTransitionTime": testNow.Add(-ago).Format(time.RFC3339)},
	}}}))
}

// terminatingPod is on nodeName, past its 30s grace period by overdue.
func terminatingPod(name, nodeName string, overdue time.Duration, opts ...func(*Object)) *Object {
	pod := object(Pods, "olm", name, withLabels(catalogSourceLabel, "operatorhubio-catalog", "olm.managed", "true"), func(o *Object) {
		ts := metav1.NewTime(testNow.Add(-overdue))
		o.DeletionTimestamp = &ts
		o.DeletionGracePeriodSeconds = ptr.To[int64](30)
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "CatalogSource", Name: "operatorhubio-catalog", UID: "cs", Controller: ptr.To(true)}}
	}, withContent(map[string]any{"spec": map[string]any{"nodeName": nodeName}}))
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func withPodCondition(conditionType, status string) func(*Object) {
	return func(o *Object) {
		o.Content["status"] = map[string]any{"conditions": []any{map[string]any{"type": conditionType, "status": status}}}
	}
}

func TestCatalogPods(t *testing.T) {
	rule, err := NewCatalogPods(CatalogPodsArgs{Selector: "app=registry"}, Settings{CatalogPodSlack: time.Minute, NodeNotReadyFor: 5 * time.Minute})
	require.NoError(t, err)
	bare := func(o *Object) { o.Labels = map[string]string{"app": "registry"}; o.OwnerReferences = nil }
	tests := []struct {
		name       string
		coverage   Coverage
		objects    []*Object
		wantReason string
		evidence   []string
	}{
		{
			name:       "node Unknown for 10m: force-deleted",
			objects:    []*Object{node("worker-1", "Unknown", 10*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 10m",
			evidence: []string{
				"deletion requested at 2026-11-23T11:57:30Z with a grace period of 30s; 2m past it (slack 1m0s)",
				"node worker-1: Ready=Unknown since 2026-11-23T11:50:00Z (threshold 5m0s)",
				"serves CatalogSource olm/operatorhubio-catalog (label olm.catalogSource)",
			},
		},
		{
			name:       "node False for 5m exactly",
			objects:    []*Object{node("worker-1", "False", 5*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 5m",
		},
		{
			name:    "node Ready: never",
			objects: []*Object{node("worker-1", "True", time.Hour), terminatingPod("p", "worker-1", time.Hour)},
		},
		{
			name:    "node Ready, pod a DisruptionTarget: never",
			objects: []*Object{node("worker-1", "True", time.Hour), terminatingPod("p", "worker-1", time.Hour, withPodCondition("DisruptionTarget", "True"))},
		},
		{
			name:    "node not Ready for a minute only",
			objects: []*Object{node("worker-1", "Unknown", time.Minute), terminatingPod("p", "worker-1", time.Hour)},
		},
		{
			name:       "node not Ready for a minute, pod a DisruptionTarget",
			objects:    []*Object{node("worker-1", "Unknown", time.Minute), terminatingPod("p", "worker-1", 2*time.Minute, withPodCondition("DisruptionTarget", "True"))},
			wantReason: "stuck terminating: it is a DisruptionTarget on node worker-1, which is not Ready",
			evidence:   []string{"pod condition DisruptionTarget=True"},
		},
		{
			name:       "node gone",
			objects:    []*Object{terminatingPod("p", "worker-9", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-9 no longer exists",
			evidence:   []string{"node worker-9: no such Node"},
		},
		{
			name:     "node gone, but Nodes not listed: nothing",
			coverage: Coverage{Failed: []schema.GroupResource{Nodes.GroupResource()}},
			objects:  []*Object{terminatingPod("p", "worker-9", 2*time.Minute)},
		},
		{
			name:    "within its grace period plus slack",
			objects: []*Object{node("worker-1", "Unknown", time.Hour), terminatingPod("p", "worker-1", 59*time.Second)},
		},
		{
			name:    "not labelled olm.catalogSource",
			objects: []*Object{node("worker-1", "Unknown", time.Hour), terminatingPod("p", "worker-1", time.Hour, func(o *Object) { o.Labels = nil })},
		},
		{
			name:    "not terminating",
			objects: []*Object{node("worker-1", "Unknown", time.Hour), terminatingPod("p", "worker-1", time.Hour, func(o *Object) { o.DeletionTimestamp = nil })},
		},
		{
			name:    "no Ready condition to measure",
			objects: []*Object{object(Nodes, "", "worker-1", withContent(map[string]any{})), terminatingPod("p", "worker-1", time.Hour)},
		},
		{
			name:       "a bare pod matching the configured selector",
			objects:    []*Object{node("worker-1", "Unknown", time.Hour), terminatingPod("p", "worker-1", time.Hour, bare)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 60m",
			evidence:   []string{"bare pod matching app=registry"},
		},
		{
			name: "a controlled pod matching the selector: never (a StatefulSet's twin could start)",
			objects: []*Object{node("worker-1", "Unknown", time.Hour), terminatingPod("p", "worker-1", time.Hour, bare, func(o *Object) {
				o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "ss", Controller: ptr.To(true)}}
			})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := rule.Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
			if tt.wantReason == "" {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, SeverityWarning, f.Severity)
			assert.Equal(t, tt.wantReason, f.Reason)
			assert.Equal(t, Delete{GracePeriodSeconds: ptr.To[int64](0)}, f.Action)
			for _, e := range tt.evidence {
				assert.Contains(t, f.Evidence, e)
			}
		})
	}
}

func TestCatalogPodsReadsOnlyWhatItNeeds(t *testing.T) {
	assert.Equal(t, []ContentRequest{
		{Resource: Pods.GroupResource(), Selector: "olm.catalogSource", Fields: []string{"spec.nodeName", "status.conditions"}},
		{Resource: Nodes.GroupResource(), Fields: []string{"status.conditions"}},
	}, CatalogPods{}.ReadsContent())
	assert.Len(t, CatalogPods{source: "app=registry"}.ReadsContent(), 3)
}
