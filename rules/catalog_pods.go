package rules

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"
)

// CatalogPods force-deletes CatalogSource pods stuck Terminating on a lost node (F5): the kubelet
// never confirms the deletion, OLM before v0.28 waits for ever, and the catalog stays down. A pod
// labelled olm.catalogSource qualifies once it is past its grace period by --catalog-pod-slack
// and its node (spec.nodeName) is gone, or has not been Ready for --node-not-ready-for, or is not
// Ready and the pod carries DisruptionTarget=True (the node is being drained of it). A pod on a
// Ready node is never touched: its kubelet will finish the deletion. rules.catalog-pods.selector
// extends the rule to other bare pods (without a controller: a StatefulSet pod must never be
// force-deleted, its twin could start).
type CatalogPods struct {
	slack, nodeNotReadyFor time.Duration
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
	r := CatalogPods{slack: settings.CatalogPodSlack, nodeNotReadyFor: settings.NodeNotReadyFor, selector: labels.Nothing(), source: args.Selector}
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
	_ Authorized    = CatalogPods{}
)

const catalogSourceLabel = "olm.catalogSource"

// Name implements Rule.
func (CatalogPods) Name() string { return CatalogPodsName }

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
		{Resource: Nodes.GroupResource(), Fields: []string{"status.conditions"}},
	}
	if r.source != "" {
		requests = append(requests, ContentRequest{Resource: Pods.GroupResource(), Selector: r.source, Fields: podFields})
	}
	return requests
}

// Plan implements Rule.
func (r CatalogPods) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	for _, pod := range view.List(Pods.GroupResource()) {
		_, catalog := pod.Labels[catalogSourceLabel]
		bare := metav1.GetControllerOfNoCopy(pod) == nil
		if pod.DeletionTimestamp == nil || pod.Content == nil || !(catalog || (bare && r.selector.Matches(labels.Set(pod.Labels)))) {
			continue
		}
		if f, ok := r.decide(view, pod); ok {
			findings = append(findings, f)
		}
	}
	return findings
}

func (r CatalogPods) decide(view *View, pod *Object) (Finding, bool) {
	now := view.Now()
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
	// A pod's deletionTimestamp is when its grace period ends.
	overdue := now.Sub(pod.DeletionTimestamp.Time)
	nodeName := nestedString(pod, "spec", "nodeName")
	if overdue < r.slack || nodeName == "" || !view.Observed(Nodes.GroupResource(), "") {
		return Finding{}, false
	}
	evidence := []string{fmt.Sprintf("deletion requested at %s with a grace period of %s; %s past it (slack %s)",
		pod.DeletionTimestamp.Add(-grace).UTC().Format(time.RFC3339), grace, duration.HumanDuration(overdue), r.slack)}

	var reason string
	node, exists := view.Get(Nodes.GroupResource(), "", nodeName)
	ready, since, known := condition(node, "Ready")
	switch {
	case !exists:
		reason = fmt.Sprintf("its node %s no longer exists", nodeName)
		evidence = append(evidence, fmt.Sprintf("node %s: no such Node", nodeName))
	case !known || since.IsZero():
		return Finding{}, false // no Ready condition: nothing to measure
	case ready == "True":
		return Finding{}, false // the kubelet will finish the deletion
	case now.Sub(since) >= r.nodeNotReadyFor:
		reason = fmt.Sprintf("its node %s has not been Ready for %s", nodeName, duration.HumanDuration(now.Sub(since)))
		evidence = append(evidence, fmt.Sprintf("node %s: Ready=%s since %s (threshold %s)", nodeName, ready, since.UTC().Format(time.RFC3339), r.nodeNotReadyFor))
	case conditionStatus(pod, "DisruptionTarget") == "True":
		reason = fmt.Sprintf("it is a DisruptionTarget on node %s, which is not Ready", nodeName)
		evidence = append(evidence,
			fmt.Sprintf("node %s: Ready=%s since %s", nodeName, ready, since.UTC().Format(time.RFC3339)),
			"pod condition DisruptionTarget=True")
	default:
		return Finding{}, false // not Ready for too short a time: it may come back
	}
	if source := pod.Labels[catalogSourceLabel]; source != "" {
		evidence = append(evidence, fmt.Sprintf("serves CatalogSource %s/%s (label %s)", pod.Namespace, source, catalogSourceLabel))
	} else {
		evidence = append(evidence, fmt.Sprintf("bare pod matching %s", r.source))
	}
	return Finding{
		Severity: SeverityWarning,
		Object:   pod.Ref(),
		Reason:   "stuck terminating: " + reason,
		Evidence: evidence,
		Action:   Delete{GracePeriodSeconds: ptr.To[int64](0)},
	}, true
}

func conditionStatus(obj *Object, conditionType string) string {
	status, _, _ := condition(obj, conditionType)
	return status
}

// condition returns the status of an object's condition (status.conditions) and since when.
func condition(obj *Object, conditionType string) (status string, since time.Time, found bool) {
	if obj == nil {
		return "", time.Time{}, false
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Content, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == conditionType {
			status, _ = m["status"].(string)
			ts, _ := m["lastTransitionTime"].(string)
			since, _ = time.Parse(time.RFC3339, ts)
			return status, since, true
		}
	}
	return "", time.Time{}, false
}
