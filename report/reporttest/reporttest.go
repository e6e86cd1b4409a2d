// Package reporttest builds reports for tests the way the engine builds them: from rules'
// findings and what became of their actions.
package reporttest

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Result is what became of an action.
type Result struct {
	Outcome report.Outcome
	Reason  report.Reason
	Detail  string
	Before  *report.PreImage
}

// Skipped is an action skipped for reason.
func Skipped(reason report.Reason, detail string) Result {
	return Result{Outcome: report.OutcomeSkipped, Reason: reason, Detail: detail}
}

// Failed is an action that failed for reason.
func Failed(reason report.Reason, detail string) Result {
	return Result{Outcome: report.OutcomeFailed, Reason: reason, Detail: detail}
}

// New is the report of a client dry run that started at start.
func New(start time.Time) *report.Report {
	return report.New(start, report.Metadata{Mode: report.DryRunClient})
}

// Add adds a rule's finding to r, with what became of its action.
func Add(r *report.Report, f rules.Finding, res Result) {
	fr := report.FindingResult{Rule: f.Rule, Severity: f.Severity, Object: report.ObjectOf(f.Object), Reason: f.Reason, Evidence: slices.Clone(f.Evidence), Symptom: f.Symptom,
		OperatorGone: f.OperatorGone}
	if fr.Evidence == nil {
		fr.Evidence = []string{}
	}
	for _, b := range f.BlockedBy {
		fr.BlockedBy = append(fr.BlockedBy, report.ObjectOf(b))
	}
	if f.Action != nil {
		fr.Action = &report.ActionSummary{Type: f.Action.Type()}
		switch a := f.Action.(type) {
		case rules.RemoveFinalizers:
			fr.Action.Finalizers = a.Finalizers
		case rules.SetOwnerReferences:
			fr.Action.AddOwnerReferences, fr.Action.RemoveOwnerReferences = a.Add, a.Remove
		case rules.Delete:
			fr.Action.GracePeriodSeconds = a.GracePeriodSeconds
		}
		fr.Outcome, fr.Error, fr.Before = res.Outcome, res.Detail, res.Before
		switch res.Outcome {
		case report.OutcomeFailed:
			fr.FailReason = res.Reason
		case report.OutcomeSkipped:
			fr.SkipReason = res.Reason
		}
	}
	r.Add(fr)
}

// Sample is a report of cluster prod with a finding of each outcome and two errors, one fatal: it
// has failed.
func Sample() *report.Report {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := New(start)
	r.Metadata.Version, r.Metadata.Cluster = "v1.2.3", "prod"
	r.Summary.Resources, r.Summary.Scanned = 3, 42
	cm := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "shop", Name: "a|b", UID: "u1"}
	logging := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "loggings"}, Kind: "Logging", Name: "all", UID: "u2"}
	grace := int64(0)
	Add(r, rules.Finding{Rule: "stuck-terminating", Symptom: true, Severity: rules.SeverityInfo, Object: cm, Reason: "terminating for 1h", Evidence: []string{"finalizers: x"}}, Result{})
	Add(r, rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: logging, Reason: "operator gone",
		Action: rules.RemoveFinalizers{Finalizers: []string{"x"}}}, Result{Outcome: report.OutcomeApplied})
	Add(r, rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "pod lost",
		Action: rules.Delete{GracePeriodSeconds: &grace}}, Skipped(report.ReasonLimit, "--max-actions=1 reached"))
	Add(r, rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "owner",
		Action: rules.SetOwnerReferences{Remove: []types.UID{"old"}}}, Failed(report.ReasonAPIError, "forbidden"))
	Add(r, rules.Finding{Rule: "orphans", Severity: rules.SeverityWarning, Object: cm, Reason: "dry",
		Action: rules.RemoveFinalizers{Finalizers: []string{"y"}}}, Result{Outcome: report.OutcomeDryRun})
	r.Errors = append(r.Errors, report.Error{Stage: report.StageObserve, Resource: "pods", Message: "forbidden"},
		report.Error{Stage: report.StagePlan, Rule: "broken", Message: "rule panicked: boom", Fatal: true})
	r.Metadata.EndTime.Time = start.Add(1500 * time.Millisecond)
	r.Summary.HoldBack(100) // the action held back by --max-actions=100
	return r
}

// Chained has three stuck namespaces: one held by a CR on an orphaned finalizer and by a dead
// APIService, one by a CR whose controller runs (which explains nothing: it will finish), one by
// nothing; and a finding in no chain.
func Chained() *report.Report {
	r := New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	ns := func(name string) rules.ObjectRef {
		return rules.ObjectRef{Resource: rules.Namespaces.GroupVersionResource, Kind: "Namespace", Name: name, UID: types.UID("ns-" + strings.ToLower(name))}
	}
	cr := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "syslogngconfigs"},
		Kind: "SyslogNGConfig", Namespace: "logging", Name: "s1", UID: "cr"}
	api := rules.ObjectRef{Resource: rules.APIServices.GroupVersionResource, Kind: "APIService", Name: "v1.packages.operators.coreos.com", UID: "api"}
	other := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "shop", Name: "c", UID: "cm"}
	waiting := cr
	waiting.Namespace, waiting.UID = "waiting", "cr-waiting"
	add := func(rule string, severity rules.Severity, action rules.Action, obj rules.ObjectRef, reason string, blockedBy ...rules.ObjectRef) {
		Add(r, rules.Finding{Rule: rule, Severity: severity, Action: action, Object: obj, Reason: reason, BlockedBy: blockedBy,
			Symptom: rule == rules.StuckTerminatingName}, Result{Outcome: report.OutcomePlanned})
	}
	info, warning := rules.SeverityInfo, rules.SeverityWarning
	add("orphaned-finalizers", warning, rules.RemoveFinalizers{Finalizers: []string{"x"}}, cr, "operator gone")
	add("dead-apiservices", warning, nil, api, "Service olm/packageserver-service is gone")
	add("orphaned-finalizers", info, nil, other, "owner unknown")
	add("orphaned-finalizers", info, nil, waiting, "owner still present")
	add("stuck-terminating", info, nil, cr, "terminating for 1h")
	add("stuck-terminating", info, nil, ns("logging"), "terminating for 1h", api, cr)
	add("stuck-terminating", info, nil, ns("empty"), "terminating for 1h")
	add("stuck-terminating", info, nil, ns("waiting"), "terminating for 1h", waiting)
	r.CountStuckNamespaces(report.EveryNamespace)
	return r
}

// Object is an object as read from the API server: with what the server sets, and the changes of
// mutate.
func Object(apiVersion, kind, namespace, name string, uid types.UID, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": map[string]any{
			"name":              name,
			"uid":               string(uid),
			"resourceVersion":   "100",
			"creationTimestamp": "2026-11-01T00:00:00Z",
			"managedFields":     []any{map[string]any{"manager": "operator", "operation": "Update"}},
			"labels":            map[string]any{"app": "etcd"},
		},
		"data":   map[string]any{"k": "v"},
		"status": map[string]any{"phase": "Active"},
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	for _, m := range mutate {
		m(u)
	}
	return u
}

// WithFinalizers sets the object's finalizers.
func WithFinalizers(finalizers ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetFinalizers(finalizers) }
}

// WithOwners sets the object's ownerReferences.
func WithOwners(refs ...metav1.OwnerReference) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetOwnerReferences(refs) }
}

// WithUID sets the object's UID: another object of the same name.
func WithUID(uid types.UID) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetUID(uid) }
}

// BeingDeleted sets the object's deletionTimestamp.
func BeingDeleted(u *unstructured.Unstructured) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	u.SetDeletionTimestamp(&now)
}

// Written is what a later write leaves: a new resourceVersion, which a comparison of images
// ignores.
func Written(u *unstructured.Unstructured) { u.SetResourceVersion("200") }

// Relabeled is the object changed by someone else.
func Relabeled(u *unstructured.Unstructured) {
	u.SetLabels(map[string]string{"app": "etcd", "changed": "by someone"})
}

// Record is the record of an applied action on obj, with obj's pre-image.
func Record(resource string, obj *unstructured.Unstructured, action report.ActionSummary) report.FindingResult {
	return report.FindingResult{
		Rule:     "orphaned-finalizers",
		Severity: rules.SeverityWarning,
		Object: report.ObjectSummary{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(),
			Name: obj.GetName(), UID: obj.GetUID()},
		Evidence: []string{},
		Action:   &action,
		Outcome:  report.OutcomeApplied,
		Before:   &report.PreImage{Resource: resource, Finalizers: obj.GetFinalizers(), OwnerReferences: obj.GetOwnerReferences()},
	}
}

// ReleasedRole is ClusterRole name as it was before a RemoveFinalizers released it: ReleaseRecord's
// pre-image.
func ReleasedRole(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": name, "finalizers": []any{"example.com/cleanup"}},
		"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get"}}},
	}}
}

// ReleaseRecord is the record of a RemoveFinalizers on ClusterRole name with outcome, as the
// applier keeps it before the write (outcome "") and after; its pre-image is ReleasedRole, kept
// wherever the caller keeps it.
func ReleaseRecord(name string, outcome report.Outcome) report.FindingResult {
	return report.FindingResult{
		Rule:     "orphaned-finalizers",
		Severity: rules.SeverityWarning,
		Object:   report.ObjectSummary{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: name, UID: types.UID("uid-" + name)},
		Reason:   "its operator is gone",
		Evidence: []string{"no deployment of the operator"},
		Action:   &report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"example.com/cleanup"}},
		Outcome:  outcome,
		Before:   &report.PreImage{Resource: "clusterroles", Finalizers: []string{"example.com/cleanup"}},
	}
}
