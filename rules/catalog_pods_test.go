package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// node has a Ready condition of status, since ago, last reported then (Ready=True and False: 10s
// ago, its kubelet alive).
func node(name, status string, ago time.Duration, opts ...func(*Object)) *Object {
	beat := ago
	if status != "Unknown" {
		beat = 10 * time.Second
	}
	return object(Nodes, "", name, append([]func(*Object){withContent(map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "MemoryPressure", "status": "Unknown", "lastTransitionTime": testNow.Add(-time.Hour).Format(time.RFC3339)},
		map[string]any{"type": "Ready", "status": status, "lastTransitionTime": testNow.Add(-ago).Format(time.RFC3339),
			"lastHeartbeatTime": testNow.Add(-beat).Format(time.RFC3339)},
	}}})}, opts...)...)
}

// lastReported makes a node's last heartbeat ago.
func lastReported(ago time.Duration) func(*Object) {
	return func(o *Object) {
		conditions := o.Content["status"].(map[string]any)["conditions"].([]any)
		conditions[1].(map[string]any)["lastHeartbeatTime"] = testNow.Add(-ago).Format(time.RFC3339)
	}
}

func inZone(zone string) func(*Object) { return withLabels("topology.kubernetes.io/zone", zone) }

func withTaint(key string) func(*Object) {
	return func(o *Object) {
		o.Content["spec"] = map[string]any{"taints": []any{map[string]any{"key": key, "effect": "NoExecute"}}}
	}
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
	rule, err := NewCatalogPods(CatalogPodsArgs{Selector: "app=registry"}, Settings{CatalogPodSlack: time.Minute, NodeNotReadyFor: 5 * time.Minute, UnhealthyZoneThreshold: 0.55})
	require.NoError(t, err)
	bare := func(o *Object) { o.Labels = map[string]string{"app": "registry"}; o.OwnerReferences = nil }
	tests := []struct {
		name       string
		coverage   Coverage
		objects    []*Object
		wantReason string
		evidence   []string
		reportOnly bool
		held       string
	}{
		{
			name:       "node Unknown for 10m: force-deleted",
			objects:    []*Object{node("worker-1", "Unknown", 10*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 10m",
			evidence: []string{
				"deletion requested at 2026-11-23T11:57:30Z with a grace period of 30s; 2m past it (slack 1m0s)",
				"node worker-1: Ready=Unknown since 2026-11-23T11:50:00Z (threshold 5m0s): its kubelet stopped reporting",
				"serves CatalogSource olm/operatorhubio-catalog (label olm.catalogSource)",
			},
		},
		{
			name:       "node Unknown for 5m exactly",
			objects:    []*Object{node("worker-1", "Unknown", 5*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 5m",
		},
		{
			name:       "node False for an hour, its kubelet reporting: report only",
			objects:    []*Object{node("worker-1", "False", time.Hour), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 is not Ready, but its kubelet reports and will finish the deletion",
			evidence:   []string{"node worker-1: Ready=False since 2026-11-23T11:00:00Z, last heartbeat 10s ago (threshold 5m0s): its kubelet is alive"},
			reportOnly: true,
		},
		{
			name:       "node False, no heartbeat for 10m: lost",
			objects:    []*Object{node("worker-1", "False", time.Hour, lastReported(10*time.Minute)), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 60m",
			evidence:   []string{"node worker-1: Ready=False since 2026-11-23T11:00:00Z, no heartbeat for 10m (threshold 5m0s)"},
		},
		{
			name:       "out-of-service taint: lost at once",
			objects:    []*Object{node("worker-1", "Unknown", time.Minute, withTaint("node.kubernetes.io/out-of-service")), terminatingPod("p", "worker-1", 2*time.Minute)},
			wantReason: "stuck terminating: its node worker-1 is out of service",
			evidence:   []string{"node worker-1: not Ready, and taint node.kubernetes.io/out-of-service"},
		},
		{
			name:    "out-of-service taint left on a Ready node: never",
			objects: []*Object{node("worker-1", "True", time.Hour, withTaint("node.kubernetes.io/out-of-service")), terminatingPod("p", "worker-1", 2*time.Minute)},
		},
		{
			name: "node False, its status old but its Lease renewed: reporting",
			objects: []*Object{node("worker-1", "False", time.Hour, lastReported(10*time.Minute)), terminatingPod("p", "worker-1", 2*time.Minute),
				object(Leases, "kube-node-lease", "worker-1", withContent(map[string]any{"spec": map[string]any{"renewTime": testNow.Add(-5 * time.Second).Format(time.RFC3339Nano)}}))},
			wantReason: "stuck terminating: its node worker-1 is not Ready, but its kubelet reports and will finish the deletion",
			reportOnly: true,
		},
		{
			name: "a labelled pod controlled by a ReplicaSet: not OLM's, never",
			objects: []*Object{node("worker-1", "Unknown", 10*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute, func(o *Object) {
				o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "registry-7d9f", UID: "rs", Controller: ptr.To(true)}}
			})},
		},
		{
			name:       "a labelled bare pod: OLM's",
			objects:    []*Object{node("worker-1", "Unknown", 10*time.Minute), terminatingPod("p", "worker-1", 2*time.Minute, func(o *Object) { o.OwnerReferences = nil })},
			wantReason: "stuck terminating: its node worker-1 has not been Ready for 10m",
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
			name:    "node not Ready for a minute, pod a DisruptionTarget: not enough",
			objects: []*Object{node("worker-1", "Unknown", time.Minute), terminatingPod("p", "worker-1", 2*time.Minute, withPodCondition("DisruptionTarget", "True"))},
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
			name: "a zone with more than two nodes not Ready, and 55% of them: held",
			objects: []*Object{
				node("a-1", "Unknown", time.Hour, inZone("a")), node("a-2", "Unknown", time.Hour, inZone("a")), node("a-3", "Unknown", time.Hour, inZone("a")),
				node("a-4", "True", time.Hour, inZone("a")), node("a-5", "True", time.Hour, inZone("a")),
				terminatingPod("p", "a-1", 2*time.Minute),
			},
			wantReason: "stuck terminating: its node a-1 has not been Ready for 60m",
			held:       "zone a: 3 of 5 nodes not Ready (unhealthy at 55%): a zone-wide outage; nothing is force-deleted there",
		},
		{
			name: "a zone with no Ready node: held",
			objects: []*Object{
				node("b-1", "Unknown", time.Hour, inZone("b")), node("c-1", "True", time.Hour, inZone("c")),
				terminatingPod("p", "b-1", 2*time.Minute),
			},
			wantReason: "stuck terminating: its node b-1 has not been Ready for 60m",
			held:       "zone b: no Ready node of 1: a zone-wide outage; nothing is force-deleted there",
		},
		{
			name: "two nodes not Ready in a zone of three: not an outage",
			objects: []*Object{
				node("a-1", "Unknown", time.Hour, inZone("a")), node("a-2", "Unknown", time.Hour, inZone("a")), node("a-3", "True", time.Hour, inZone("a")),
				terminatingPod("p", "a-1", 2*time.Minute),
			},
			wantReason: "stuck terminating: its node a-1 has not been Ready for 60m",
		},
		{
			name: "nodes excluded from disruption checks do not count",
			objects: []*Object{
				node("b-1", "Unknown", time.Hour, inZone("b")), node("b-2", "True", time.Hour, inZone("b"), withLabels("node.kubernetes.io/exclude-disruption", "")),
				node("b-3", "True", time.Hour, inZone("b")),
				terminatingPod("p", "b-1", 2*time.Minute),
			},
			wantReason: "stuck terminating: its node b-1 has not been Ready for 60m",
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
			// A cluster of healthy nodes around them: one lost node is no zone-wide outage.
			healthy := []*Object{node("healthy-1", "True", time.Hour), node("healthy-2", "True", time.Hour), node("healthy-3", "True", time.Hour)}
			findings := rule.Plan(context.Background(), viewWith(tt.coverage, append(tt.objects, healthy...)...))
			if tt.wantReason == "" {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, tt.wantReason, f.Reason)
			for _, e := range tt.evidence {
				assert.Contains(t, f.Evidence, e)
			}
			if tt.reportOnly {
				assert.Equal(t, SeverityInfo, f.Severity)
				assert.Nil(t, f.Action)
				return
			}
			assert.Equal(t, SeverityWarning, f.Severity)
			assert.Equal(t, Delete{GracePeriodSeconds: ptr.To[int64](0)}, f.Action)
			require.Len(t, f.Facts, 1, "the node is read again before the delete")
			if tt.held == "" {
				assert.Nil(t, f.Held)
			} else {
				assert.Equal(t, &Held{Reason: "zone-outage", Detail: tt.held}, f.Held)
			}
		})
	}
}

func TestCatalogPodsReadsOnlyWhatItNeeds(t *testing.T) {
	assert.Equal(t, []ContentRequest{
		{Resource: Pods.GroupResource(), Selector: "olm.catalogSource", Fields: []string{"spec.nodeName", "status.conditions"}},
		{Resource: Nodes.GroupResource(), Fields: []string{"status.conditions", "spec.taints"}},
		{Resource: Leases.GroupResource(), Fields: []string{"spec.holderIdentity", "spec.leaseDurationSeconds", "spec.renewTime", "spec.acquireTime"}},
	}, CatalogPods{}.ReadsContent())
	assert.Len(t, CatalogPods{source: "app=registry"}.ReadsContent(), 4)
}

// TestCatalogPodsPolicyRules: get and delete on pods, with no opt-in: the only delete the rules
// make by default.
func TestCatalogPodsPolicyRules(t *testing.T) {
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "delete"}}},
		policyRulesOf(t, CatalogPodsName, nil, Settings{}))
}
