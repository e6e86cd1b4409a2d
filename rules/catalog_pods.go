package rules

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
)

// CatalogPods force-deletes CatalogSource pods stuck Terminating on a lost node (F5): the kubelet
// never confirms the deletion, OLM without PR #3366 (v0.28.0 among them, as test/controllers
// shows) counts the pod as its registry server and waits for ever, and the catalog stays down. A pod
// labelled olm.catalogSource qualifies once it is past its grace period by --catalog-pod-slack
// and its node (spec.nodeName) is lost, as Kubernetes judges it (see judgeNode). A pod on a node
// whose kubelet still reports is only reported: the kubelet will finish the deletion. In a zone
// where most nodes are not Ready at once, nothing is force-deleted (zone-outage), as the node
// lifecycle controller stops evicting there. A labelled pod with a controller other than its
// CatalogSource is not OLM's registry pod, and is left alone. rules.catalog-pods.selector extends the rule to
// other bare pods (without a controller: a StatefulSet pod must never be force-deleted, its twin
// could start).
type CatalogPods struct {
	slack, nodeNotReadyFor time.Duration
	unhealthyZoneThreshold float64
	// selector is rules.catalog-pods.selector, parsed; source is as configured.
	selector labels.Selector
	source   string
}

// CatalogPodsName is the name of rule catalog-pods.
const CatalogPodsName = "catalog-pods"

// CatalogPodsArgs are the arguments of catalog-pods: rules.catalog-pods in the config file. Its
// thresholds are --catalog-pod-slack and --node-not-ready-for.
type CatalogPodsArgs struct {
	// Selector, a label selector, extends the rule to other bare pods on lost nodes.
	Selector string `json:"selector,omitempty"`
}

// NewCatalogPods builds catalog-pods.
func NewCatalogPods(args CatalogPodsArgs, settings Settings) (CatalogPods, error) {
	r := CatalogPods{
		slack:                  settings.CatalogPodSlack,
		nodeNotReadyFor:        settings.NodeNotReadyFor,
		unhealthyZoneThreshold: settings.UnhealthyZoneThreshold,
		selector:               labels.Nothing(),
		source:                 args.Selector,
	}
	if args.Selector != "" {
		selector, err := labels.Parse(args.Selector)
		if err != nil {
			return r, fmt.Errorf("rules.catalog-pods.selector %q: %w", args.Selector, err)
		}
		r.selector = selector
	}
	return r, nil
}

var (
	_ ContentReader = CatalogPods{}
	_ WholeReader   = CatalogPods{}
	_ Authorized    = CatalogPods{}
)

const catalogSourceLabel = "olm.catalogSource"

// A CatalogSource, as an ownerReference names it, in any version.
const (
	catalogSourceKind  = "CatalogSource"
	catalogSourceGroup = "operators.coreos.com"
)

// Name implements Rule.
func (CatalogPods) Name() string { return CatalogPodsName }

// Writes implements Authorized: it deletes pods.
func (CatalogPods) Writes() []Write { return deletes([]Resource{Pods}) }

// MayHaveWritten implements Authorized: a pod (which restore never re-creates: its controller does).
func (CatalogPods) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	return sameKind(Pods, obj)
}

// Admission implements Authorized: a terminating pod labelled as a CatalogSource's registry, bare
// or controlled by its CatalogSource. A pod with another controller is never force-deleted: its
// twin could start.
func (CatalogPods) Admission() Admission {
	return Admission{Deletes: []Resource{Pods}, When: fmt.Sprintf(`has(oldObject.metadata.deletionTimestamp) && '%s' in variables.labels &&
  (!has(oldObject.metadata.ownerReferences) || oldObject.metadata.ownerReferences.all(r,
    !has(r.controller) || !r.controller || (r.kind == '%s' && r.apiVersion.startsWith('%s/'))))`,
		catalogSourceLabel, catalogSourceKind, catalogSourceGroup)}
}

// PolicyRules implements Authorized.
func (CatalogPods) PolicyRules() []rbacv1.PolicyRule {
	return deletePolicy([]Resource{Pods})
}

// ReadsContent implements ContentReader: the node and conditions of the pods it may act on, and
// the conditions of nodes.
func (r CatalogPods) ReadsContent() []ContentRequest {
	podFields := []string{"spec.nodeName", "status.conditions"}
	requests := []ContentRequest{
		{Resource: Pods.GroupResource(), Selector: catalogSourceLabel, Fields: podFields},
		{Resource: Nodes.GroupResource(), Fields: nodeFields},
		{Resource: Leases.GroupResource(), Fields: leaseFields}, // the nodes' heartbeats
	}
	if r.source != "" {
		requests = append(requests, ContentRequest{Resource: Pods.GroupResource(), Selector: r.source, Fields: podFields})
	}
	return requests
}

// ReadsWhole implements WholeReader: what it reads in full: the pods, their nodes and the nodes'
// Leases (in kube-node-lease, whichever shard owns it), and every node of a pod's zone.
func (r CatalogPods) ReadsWhole() []schema.GroupResource {
	return contentResources(r.ReadsContent())
}

// Plan implements Rule.
func (r CatalogPods) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	var zones zoneStates // computed on the first pod that needs them
	for _, pod := range view.List(Pods.GroupResource()) {
		controller := pod.ControllerRef()
		bare := controller == nil
		// OLM's registry pods are bare, or controlled by their CatalogSource; a pod with another
		// controller is that controller's to replace, never force-deleted: its twin could start.
		_, labelled := pod.Labels[catalogSourceLabel]
		catalog := labelled && (bare || catalogSourceRef(controller))
		if pod.DeletionTimestamp == nil || pod.Content == nil || !(catalog || (bare && r.selector.Matches(labels.Set(pod.Labels)))) {
			continue
		}
		if zones == nil {
			zones = r.zones(view)
		}
		if f, ok := r.decide(view, zones, pod); ok {
			findings = append(findings, f)
		}
	}
	return findings
}

// catalogSourceRef reports whether ref names a CatalogSource of OLM v0.
func catalogSourceRef(ref *metav1.OwnerReference) bool {
	return ref != nil && ref.Kind == catalogSourceKind && strings.HasPrefix(ref.APIVersion, catalogSourceGroup+"/")
}

func (r CatalogPods) decide(view *View, zones zoneStates, pod *Object) (Finding, bool) {
	now := view.Now()
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
	// A pod's deletionTimestamp is when its grace period ends.
	overdue := now.Sub(pod.DeletionTimestamp.Time)
	nodeName := nestedString(pod, "spec", "nodeName")
	if overdue < r.slack || nodeName == "" || !view.Observed(Nodes.GroupResource(), "") {
		return Finding{}, false
	}
	node := judgeNode(view, nodeName, r.nodeNotReadyFor)
	if node.verdict == nodeReady {
		return Finding{}, false // the kubelet will finish the deletion, or nothing can be measured
	}
	f := Finding{
		Severity: SeverityWarning,
		Object:   pod.Ref(),
		Reason:   "stuck terminating: " + node.reason,
		Evidence: append([]string{fmt.Sprintf("deletion requested at %s with a grace period of %s; %s past it (slack %s)",
			pod.DeletionTimestamp.Add(-grace).UTC().Format(time.RFC3339), grace, duration.HumanDuration(overdue), r.slack)}, node.evidence...),
	}
	if conditionStatus(pod, "DisruptionTarget") == "True" {
		f.Evidence = append(f.Evidence, "pod condition DisruptionTarget=True: being evicted, which alone does not make its node lost")
	}
	if source := pod.Labels[catalogSourceLabel]; source != "" {
		f.Evidence = append(f.Evidence, fmt.Sprintf("serves CatalogSource %s/%s (label %s)", pod.Namespace, source, catalogSourceLabel))
	} else {
		f.Evidence = append(f.Evidence, fmt.Sprintf("bare pod matching %s", r.source))
	}
	if node.verdict == nodeReporting {
		f.Severity = SeverityInfo
		return f, true // report only: its kubelet is alive
	}
	f.Action = Delete{GracePeriodSeconds: ptr.To[int64](0)}
	f.Facts = []Fact{r.nodeLost(nodeName)}
	if outage, detail := zones.outage(node.zone); outage {
		f.Held = &Held{Reason: HeldZoneOutage, Detail: detail}
	}
	return f, true
}

// nodeLost is the fact that a node is lost, and its zone not in an outage: read again, every
// Node says the same.
func (r CatalogPods) nodeLost(name string) Fact {
	return factOf{
		key: fmt.Sprintf("node %s lost for %s", name, r.nodeNotReadyFor),
		reads: []Read{
			{Resource: Nodes.GroupResource(), Fields: nodeFields},
			{Resource: Leases.GroupResource(), Namespace: nodeLeaseNamespace, Fields: leaseFields},
		},
		holds: func(view *View) (bool, string) {
			node := judgeNode(view, name, r.nodeNotReadyFor)
			if node.verdict != nodeLost {
				return false, fmt.Sprintf("re-checked live: node %s is not lost now: %s", name, strings.Join(node.evidence, "; "))
			}
			if outage, detail := r.zones(view).outage(node.zone); outage {
				return false, "re-checked live: " + detail
			}
			return true, fmt.Sprintf("re-checked live: node %s is still lost: %s", name, strings.Join(node.evidence, "; "))
		},
	}
}
