package rules

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Refusal is a write an object refuses while it stands: an admission webhook whose backend is
// dead, with failurePolicy Fail, refuses every request its rules and selectors match — a
// finalizer's release among them. A finding that carries one is a blocker: an action its Refusal
// matches depends on the blocker's own action (its deletion) in the same run, and is skipped,
// naming it, when that is not done: never sent to fail.
type Refusal struct {
	// Webhook is the name of the webhook that refuses.
	Webhook string
	// Why says why it refuses: "its Service webhooks/gizmo-webhook is gone".
	Why               string
	rules             []admissionRule
	namespaceSelector labels.Selector // nil: every namespace
	objectSelector    labels.Selector // nil: every object
}

// admissionRule is one entry of a webhook's rules[].
type admissionRule struct {
	operations, groups, resources []string
	scope                         string
}

// refusalOf is the Refusal of a dead webhook with failurePolicy Fail: hook is an entry of a
// configuration's webhooks[]. A selector that does not parse selects everything: a webhook
// whose reach is unclear counts as refusing.
func refusalOf(hook map[string]any, why string) Refusal {
	r := Refusal{Why: why}
	r.Webhook, _ = hook["name"].(string)
	entries, _, _ := unstructured.NestedSlice(hook, "rules")
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		var rule admissionRule
		rule.operations, _, _ = unstructured.NestedStringSlice(entry, "operations")
		rule.groups, _, _ = unstructured.NestedStringSlice(entry, "apiGroups")
		rule.resources, _, _ = unstructured.NestedStringSlice(entry, "resources")
		rule.scope, _, _ = unstructured.NestedString(entry, "scope")
		r.rules = append(r.rules, rule)
	}
	r.namespaceSelector = selectorOf(hook, "namespaceSelector")
	r.objectSelector = selectorOf(hook, "objectSelector")
	return r
}

// selectorOf parses a webhook's label selector field; nil selects everything.
func selectorOf(hook map[string]any, field string) labels.Selector {
	m, found, _ := unstructured.NestedMap(hook, field)
	if !found {
		return nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return nil
	}
	return selector
}

// Refuses says whether the refusal matches operation (UPDATE, DELETE) of the object ref, whose
// labels and namespace's labels view holds. matchConditions are not evaluated: a webhook that
// has them counts as matching, and so does a version its rules do not list (matchPolicy
// Equivalent, the default, converts the request to it).
func (r Refusal) Refuses(view *View, operation string, ref ObjectRef) bool {
	gr := ref.Resource.GroupResource()
	if gr.Group == "admissionregistration.k8s.io" {
		return false // webhook configurations and admission policies are never sent to webhooks
	}
	namespaced := ref.Namespace != ""
	if !slices.ContainsFunc(r.rules, func(rule admissionRule) bool { return rule.matches(operation, gr, namespaced) }) {
		return false
	}
	if obj, ok := view.Get(gr, ref.Namespace, ref.Name); ok && r.objectSelector != nil && !r.objectSelector.Matches(labels.Set(obj.Labels)) {
		return false
	}
	if r.namespaceSelector == nil {
		return true
	}
	// The namespace selector is on the object's namespace, or on a Namespace itself; a
	// cluster-scoped object of another kind is always matched.
	namespace := ref.Namespace
	if gr == Namespaces.GroupResource() {
		namespace = ref.Name
	}
	if namespace == "" {
		return true
	}
	ns, ok := view.Get(Namespaces.GroupResource(), "", namespace)
	return !ok || r.namespaceSelector.Matches(labels.Set(ns.Labels))
}

// String names the refusal for a human: "webhook x.example.com (its Service … is gone)".
func (r Refusal) String() string {
	return fmt.Sprintf("webhook %s (%s)", r.Webhook, r.Why)
}

func (rule admissionRule) matches(operation string, gr schema.GroupResource, namespaced bool) bool {
	has := func(list []string, value string) bool {
		return slices.Contains(list, "*") || slices.Contains(list, value)
	}
	if !has(rule.operations, operation) || !has(rule.groups, gr.Group) {
		return false
	}
	switch rule.scope {
	case "Cluster":
		if namespaced {
			return false
		}
	case "Namespaced":
		if !namespaced {
			return false
		}
	}
	// The write is on the resource itself, not a subresource: "*", "*/*" and its name match it.
	return slices.ContainsFunc(rule.resources, func(r string) bool { return r == "*" || r == "*/*" || r == gr.Resource })
}
