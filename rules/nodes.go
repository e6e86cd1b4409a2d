package rules

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
)

// nodeFields are what rules read of Nodes: conditions and taints.
var nodeFields = []string{"status.conditions", "spec.taints"}

// Well-known node labels and taints (k8s.io/api/core/v1).
const (
	outOfServiceTaint      = "node.kubernetes.io/out-of-service"
	excludeDisruptionLabel = "node.kubernetes.io/exclude-disruption"
	zoneLabel              = "topology.kubernetes.io/zone"
	regionLabel            = "topology.kubernetes.io/region"
	deprecatedZoneLabel    = "failure-domain.beta.kubernetes.io/zone"
	deprecatedRegionLabel  = "failure-domain.beta.kubernetes.io/region"
	outageMinNotReady      = 2 // a partial outage has more nodes not Ready than this
	// nodeLeaseNamespace holds the Lease each kubelet renews as its heartbeat.
	nodeLeaseNamespace = "kube-node-lease"
)

type nodeVerdict int

const (
	// nodeReady: Ready, or nothing to measure, or not Ready for too short a time: leave it.
	nodeReady nodeVerdict = iota
	// nodeReporting: not Ready, but its kubelet reports: it will finish what it was asked.
	nodeReporting
	// nodeLost: its kubelet will never confirm anything.
	nodeLost
)

type nodeJudgement struct {
	verdict  nodeVerdict
	reason   string
	evidence []string
	zone     string
}

// judgeNode judges a node as Kubernetes does. Lost: the Node is gone; or it is not Ready and
// carries the node.kubernetes.io/out-of-service taint (what PodGC acts on); or its Ready condition
// is Unknown (the node lifecycle controller's word for a kubelet that stopped reporting) for at
// least threshold; or Ready=False and the kubelet's last heartbeat is older than threshold.
// Ready=False with a newer heartbeat is a kubelet alive and reporting. The heartbeat is the later
// of the condition's lastHeartbeatTime and the renewal of the node's Lease in kube-node-lease:
// a kubelet whose status does not change posts it only every five minutes, but renews its Lease
// every few seconds.
func judgeNode(view *View, name string, threshold time.Duration) nodeJudgement {
	now := view.Now()
	node, exists := view.Get(Nodes.GroupResource(), "", name)
	if !exists {
		return nodeJudgement{verdict: nodeLost, reason: fmt.Sprintf("its node %s no longer exists", name), evidence: []string{fmt.Sprintf("node %s: no such Node", name)}}
	}
	j := nodeJudgement{zone: zoneKey(node)}
	ready, found := conditionOf(node, "Ready")
	since, beat := timeField(ready, "lastTransitionTime"), timeField(ready, "lastHeartbeatTime")
	status, _ := ready["status"].(string)
	if lease, ok := view.Get(Leases.GroupResource(), nodeLeaseNamespace, name); ok {
		if renewed, ok := leaseRenewTime(lease); ok && renewed.After(beat) {
			beat = renewed
		}
	}
	switch {
	case status != "True" && hasTaint(node, outOfServiceTaint):
		j.verdict, j.reason = nodeLost, fmt.Sprintf("its node %s is out of service", name)
		j.evidence = []string{fmt.Sprintf("node %s: not Ready, and taint %s", name, outOfServiceTaint)}
	case !found || since.IsZero() || status == "True":
	case status == "Unknown" && now.Sub(since) >= threshold:
		j.verdict = nodeLost
		j.reason = fmt.Sprintf("its node %s has not been Ready for %s", name, duration.HumanDuration(now.Sub(since)))
		j.evidence = []string{fmt.Sprintf("node %s: Ready=Unknown since %s (threshold %s): its kubelet stopped reporting", name, since.UTC().Format(time.RFC3339), threshold)}
	case status == "Unknown":
		j.evidence = []string{fmt.Sprintf("node %s: Ready=Unknown since %s, less than %s: it may come back", name, since.UTC().Format(time.RFC3339), threshold)}
	case beat.IsZero():
		j.evidence = []string{fmt.Sprintf("node %s: Ready=%s without a heartbeat to measure", name, status)}
	case now.Sub(beat) < threshold:
		j.verdict = nodeReporting
		j.reason = fmt.Sprintf("its node %s is not Ready, but its kubelet reports and will finish the deletion", name)
		j.evidence = []string{fmt.Sprintf("node %s: Ready=%s since %s, last heartbeat %s ago (threshold %s): its kubelet is alive",
			name, status, since.UTC().Format(time.RFC3339), duration.HumanDuration(max(now.Sub(beat), 0)), threshold)}
	default:
		j.verdict = nodeLost
		j.reason = fmt.Sprintf("its node %s has not been Ready for %s", name, duration.HumanDuration(now.Sub(since)))
		j.evidence = []string{fmt.Sprintf("node %s: Ready=%s since %s, no heartbeat for %s (threshold %s)",
			name, status, since.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(beat)), threshold)}
	}
	return j
}

func hasTaint(node *Object, key string) bool {
	taints, _, _ := unstructured.NestedSlice(node.Content, "spec", "taints")
	for _, t := range taints {
		if m, _ := t.(map[string]any); m["key"] == key {
			return true
		}
	}
	return false
}

// zoneKey is the node lifecycle controller's zone of a node (component-helpers
// node/topology.GetZoneKey): region and zone.
func zoneKey(node *Object) string {
	region, zone := regionZone(node)
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// regionZone are a node's region and zone labels, the deprecated beta labels first.
func regionZone(node *Object) (region, zone string) {
	zone, ok := node.Labels[deprecatedZoneLabel]
	if !ok {
		zone = node.Labels[zoneLabel]
	}
	region, ok = node.Labels[deprecatedRegionLabel]
	if !ok {
		region = node.Labels[regionLabel]
	}
	return region, zone
}

// zoneStates counts, zone by zone, Ready nodes and the others, as the node lifecycle controller
// does (ComputeZoneState); nodes labelled node.kubernetes.io/exclude-disruption do not count.
type zoneStates map[string]*zoneState

type zoneState struct {
	name              string
	ready, notReady   int
	unhealthyFraction float64
}

func (r CatalogPods) zones(view *View) zoneStates {
	zones := zoneStates{}
	for _, node := range view.List(Nodes.GroupResource()) {
		if _, excluded := node.Labels[excludeDisruptionLabel]; excluded {
			continue
		}
		key := zoneKey(node)
		z, ok := zones[key]
		if !ok {
			_, name := regionZone(node)
			z = &zoneState{name: name, unhealthyFraction: r.unhealthyZoneThreshold}
			zones[key] = z
		}
		if conditionStatus(node, "Ready") == "True" {
			z.ready++
		} else {
			z.notReady++
		}
	}
	return zones
}

// outage reports whether a zone is in a full disruption (no Ready node) or a partial one (more
// than two nodes not Ready, and at least the unhealthy fraction of them): there, the node
// lifecycle controller stops evicting, and the sweeper force-deletes nothing.
func (zones zoneStates) outage(key string) (bool, string) {
	z, ok := zones[key]
	if !ok {
		return false, ""
	}
	total := z.ready + z.notReady
	name := z.name
	if name == "" {
		name = "(nodes without a zone label)"
	}
	switch {
	case z.ready == 0 && z.notReady > 0:
		return true, fmt.Sprintf("zone %s: no Ready node of %d: a zone-wide outage; nothing is force-deleted there", name, total)
	case z.notReady > outageMinNotReady && float64(z.notReady)/float64(total) >= z.unhealthyFraction:
		return true, fmt.Sprintf("zone %s: %d of %d nodes not Ready (unhealthy at %.0f%%): a zone-wide outage; nothing is force-deleted there",
			name, z.notReady, total, 100*z.unhealthyFraction)
	}
	return false, ""
}
