package rules

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DeadWebhooks reports admission webhooks and CRD conversion webhooks whose Service is gone or has
// no ready endpoint. An admission webhook with failurePolicy Fail then refuses every write it
// matches (the finalizer patches that would unstick things among them, the sweeper's own too):
// a warning that says which resources and operations; with Ignore, it only slows writes down.
// A conversion webhook keeps the CRD's objects from being read, and the CRD's deletion hangs on
// customresourcecleanup.apiextensions.k8s.io: reported only, the CRD holds user data. Webhooks
// called by URL are reported as not checked. With rules.dead-webhooks.delete, it deletes a
// webhook configuration all of whose Service-backed webhooks call a Service that is gone, and
// whose registrar is gone (see registrarGone). Configurations OLM labelled are olm-rbac's.
type DeadWebhooks struct {
	delete   bool
	mappings FinalizerMappings
	helmSQL  bool
}

// DeadWebhooksName is the name of rule dead-webhooks.
const DeadWebhooksName = "dead-webhooks"

// DeadWebhooksArgs are the arguments of dead-webhooks: rules.dead-webhooks in the config file.
type DeadWebhooksArgs struct {
	// Delete allows deleting a webhook configuration whose Services and registrar are gone.
	Delete bool `json:"delete,omitempty"`
}

// NewDeadWebhooks builds dead-webhooks.
func NewDeadWebhooks(args DeadWebhooksArgs, settings Settings) (DeadWebhooks, error) {
	return DeadWebhooks{delete: args.Delete, mappings: settings.Finalizers, helmSQL: settings.HelmSQLStorage}, nil
}

var (
	_ ContentReader    = DeadWebhooks{}
	_ WholeReader      = DeadWebhooks{}
	_ AnnotationReader = DeadWebhooks{}
	_ Authorized       = DeadWebhooks{}
	_ OptedIn          = DeadWebhooks{}
)

var webhookConfigurations = []Resource{ValidatingWebhookConfigurations, MutatingWebhookConfigurations}

// Name implements Rule.
func (DeadWebhooks) Name() string { return DeadWebhooksName }

// Writes implements Authorized: it deletes webhook configurations.
func (DeadWebhooks) Writes() []Write { return deletes(webhookConfigurations) }

// MayHaveWritten implements Authorized: a webhook configuration all of whose webhooks call a
// Service.
func (DeadWebhooks) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	if err := kindOf(webhookConfigurations, obj); err != nil {
		return err
	}
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	for _, hook := range hooks {
		if _, ok, _ := unstructured.NestedMap(hook.(map[string]any), "clientConfig", "service"); !ok {
			return fmt.Errorf("%s has a webhook called by URL, which dead-webhooks never deletes", obj.GetName())
		}
	}
	return nil
}

// Admission implements Authorized: a webhook configuration none of whose webhooks is called by URL.
func (DeadWebhooks) Admission() Admission {
	return Admission{Deletes: webhookConfigurations, When: "!has(oldObject.webhooks) || oldObject.webhooks.all(w, has(w.clientConfig.service))"}
}

// OptInArgs implements OptedIn: delete.
func (DeadWebhooks) OptInArgs() any { return DeadWebhooksArgs{Delete: true} }

// PolicyRules implements Authorized: delete, once opted in.
func (r DeadWebhooks) PolicyRules() []rbacv1.PolicyRule {
	if !r.delete {
		return nil
	}
	return deletePolicy(webhookConfigurations)
}

// ReadsContent implements ContentReader: the webhooks, CRDs' conversion, the endpoints of
// Services, and what tells whether OLM runs.
func (DeadWebhooks) ReadsContent() []ContentRequest {
	return append([]ContentRequest{
		{Resource: ValidatingWebhookConfigurations.GroupResource(), Fields: []string{"webhooks"}},
		{Resource: MutatingWebhookConfigurations.GroupResource(), Fields: []string{"webhooks"}},
		{Resource: CustomResourceDefinitions.GroupResource(), Fields: []string{"spec.conversion"}},
		endpointSliceContent,
	}, workloadContent()...)
}

// ReadsWhole implements WholeReader: every webhook configuration and the CRDs whose conversion
// calls a webhook, and what says whether a Service and its registrar are gone; the namespaces too,
// which a webhook's namespaceSelector matches by their labels (Refusal).
func (r DeadWebhooks) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), registrarReads())
}

// ReadsAnnotations implements AnnotationReader: the Helm release that registered a webhook
// configuration.
func (DeadWebhooks) ReadsAnnotations() []string { return []string{helmAnnotations} }

// Plan implements Rule.
func (r DeadWebhooks) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	for _, res := range webhookConfigurations {
		for _, config := range view.List(res.GroupResource()) {
			if config.DeletionTimestamp != nil {
				continue
			}
			if f, ok := r.admission(view, config); ok {
				findings = append(findings, f)
			}
		}
	}
	for _, crd := range view.List(CustomResourceDefinitions.GroupResource()) {
		if f, ok := conversion(view, crd); ok {
			findings = append(findings, f)
		}
	}
	return findings
}

// webhookCall is where a webhook sends its requests, as judged.
type webhookCall struct {
	name, failurePolicy string
	namespace, service  string // empty for a URL
	state               serviceState
	evidence            string
	// why says, in a few words, why a dead webhook is dead.
	why string
}

func (r DeadWebhooks) admission(view *View, config *Object) (Finding, bool) {
	hooks, _, _ := unstructured.NestedSlice(config.Content, "webhooks")
	var calls []webhookCall
	var dead, blocking, byURL []string
	var refusals []Refusal
	for _, h := range hooks {
		hook, _ := h.(map[string]any)
		call := judgeWebhook(view, hook)
		calls = append(calls, call)
		switch {
		case call.service == "":
			byURL = append(byURL, call.name)
		case call.state == serviceGone || call.state == serviceNoEndpoints:
			dead = append(dead, call.name)
			if call.failurePolicy == "Fail" {
				blocking = append(blocking, fmt.Sprintf("webhook %s refuses %s", call.name, matchedRequests(hook)))
				refusals = append(refusals, refusalOf(hook, call.why))
			}
		}
	}
	if len(dead) == 0 && len(byURL) == 0 {
		return Finding{}, false
	}
	f := Finding{Severity: SeverityInfo, Object: config.Ref(), Refuses: refusals}
	for _, call := range calls {
		f.Evidence = append(f.Evidence, call.evidence)
	}
	f.Evidence = append(f.Evidence, blocking...)
	if len(dead) == 0 {
		f.Reason = fmt.Sprintf("webhooks %s are called by URL: not checked", strings.Join(byURL, ", "))
		return f, true
	}
	f.Reason = fmt.Sprintf("webhooks %s call a Service that is gone or has no ready endpoint", strings.Join(dead, ", "))
	if len(blocking) > 0 {
		f.Severity = SeverityWarning
		f.Reason += "; with failurePolicy Fail, the writes they match are refused"
	}
	if _, _, olm := csvOwner(config); olm {
		f.Evidence = append(f.Evidence, "labelled by OLM (olm.owner): olm-rbac deletes it once its ClusterServiceVersion and OLM are gone")
		return f, true
	}
	r.deleteIfGone(view, config, calls, &f)
	return f, true
}

// deleteIfGone makes f delete the configuration if every Service it calls is gone, and so is
// whoever registered it.
func (r DeadWebhooks) deleteIfGone(view *View, config *Object, calls []webhookCall, f *Finding) {
	var facts []Fact
	var installer *Installer // the first the evidence names
	namespaces := map[string]bool{}
	for _, call := range calls {
		switch {
		case call.service == "":
			return // a URL: nothing says it is dead
		case call.state != serviceGone:
			return
		}
		facts = append(facts, ObjectAbsent{Services, call.namespace, call.service})
		if namespaces[call.namespace] {
			continue
		}
		namespaces[call.namespace] = true
		gone, evidence, registrar, registeredFor := registrarGone(view, r.mappings, r.helmSQL, config, call.namespace)
		f.Evidence = append(f.Evidence, evidence...)
		if !gone {
			return
		}
		facts, installer = append(facts, registrar...), cmp.Or(installer, registeredFor)
	}
	f.Reason += "; its Services and whoever registered it are gone"
	f.Action, f.Facts = Delete{}, facts
	f.OperatorGone = &OperatorGone{Installer: installer}
	if !r.delete {
		f.OptIn = "rules.dead-webhooks.delete"
	}
}

// judgeWebhook judges where a webhook (an entry of webhooks[], or a CRD's conversion webhook)
// sends its requests.
func judgeWebhook(view *View, hook map[string]any) webhookCall {
	call := webhookCall{failurePolicy: "Fail"} // the v1 default
	call.name, _ = hook["name"].(string)
	if policy, _ := hook["failurePolicy"].(string); policy != "" {
		call.failurePolicy = policy
	}
	call.namespace, _, _ = unstructured.NestedString(hook, "clientConfig", "service", "namespace")
	call.service, _, _ = unstructured.NestedString(hook, "clientConfig", "service", "name")
	if call.service == "" {
		url, _, _ := unstructured.NestedString(hook, "clientConfig", "url")
		call.evidence = fmt.Sprintf("webhook %s calls %s: URLs are not checked", call.name, url)
		return call
	}
	var evidence string
	call.state, evidence = judgeService(view, call.namespace, call.service)
	call.evidence = fmt.Sprintf("webhook %s (failurePolicy %s): %s", call.name, call.failurePolicy, evidence)
	call.why = fmt.Sprintf("Service %s/%s has no ready endpoint", call.namespace, call.service)
	if call.state == serviceGone {
		call.why = fmt.Sprintf("Service %s/%s is gone", call.namespace, call.service)
	}
	return call
}

// matchedRequests says which requests a webhook's rules match: "CREATE, UPDATE of pods,
// deployments.apps".
func matchedRequests(hook map[string]any) string {
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	var parts []string
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		operations, _, _ := unstructured.NestedStringSlice(rule, "operations")
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		var names []string
		for _, resource := range resources {
			for _, group := range groups {
				name := resource
				if group != "" {
					name += "." + group
				}
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		parts = append(parts, strings.Join(operations, ", ")+" of "+strings.Join(names, ", "))
	}
	if len(parts) == 0 {
		return "nothing (no rules)"
	}
	return strings.Join(parts, "; ")
}

// conversion reports a CRD whose conversion webhook calls a Service that is gone or has no ready
// endpoint: report only.
func conversion(view *View, crd *Object) (Finding, bool) {
	if nestedString(crd, "spec", "conversion", "strategy") != "Webhook" {
		return Finding{}, false
	}
	webhook, found, _ := unstructured.NestedMap(crd.Content, "spec", "conversion", "webhook")
	if !found {
		return Finding{}, false
	}
	webhook["name"] = "conversion"
	call := judgeWebhook(view, webhook)
	if call.service == "" || (call.state != serviceGone && call.state != serviceNoEndpoints) {
		return Finding{}, false
	}
	return Finding{
		Severity: SeverityWarning,
		Object:   crd.Ref(),
		Reason:   fmt.Sprintf("its conversion webhook calls Service %s/%s, which is gone or has no ready endpoint", call.namespace, call.service),
		Evidence: []string{
			call.evidence,
			"its objects cannot be read or written in another version than the stored one, and its deletion hangs on customresourcecleanup.apiextensions.k8s.io",
			"reported only: the CRD holds its objects' data",
		},
	}, true
}

// WebhookConfigurations returns the Validating and MutatingWebhookConfigurations in view that
// have a webhook of that name, if the view holds their webhooks (dead-webhooks reads them). Names
// are unique within a configuration only: there may be several.
func WebhookConfigurations(view *View, webhookName string) []*Object {
	var out []*Object
	for _, res := range webhookConfigurations {
		for _, config := range view.List(res.GroupResource()) {
			hooks, _, _ := unstructured.NestedSlice(config.Content, "webhooks")
			if slices.ContainsFunc(hooks, func(h any) bool { hook, _ := h.(map[string]any); return hook["name"] == webhookName }) {
				out = append(out, config)
			}
		}
	}
	return out
}
