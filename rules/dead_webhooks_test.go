package rules

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// webhook is an entry of a webhook configuration's webhooks, calling Service namespace/service
// (a URL if service is empty), refusing CREATE and UPDATE of pods and deployments.apps.
func webhook(name, failurePolicy, namespace, service string) map[string]any {
	clientConfig := map[string]any{"url": "https://hooks.example.com/" + name}
	if service != "" {
		clientConfig = map[string]any{"service": map[string]any{"namespace": namespace, "name": service, "path": "/validate"}}
	}
	hook := map[string]any{"name": name, "clientConfig": clientConfig, "rules": []any{
		map[string]any{"operations": []any{"CREATE", "UPDATE"}, "apiGroups": []any{"", "apps"}, "resources": []any{"pods", "deployments"}},
	}}
	if failurePolicy != "" {
		hook["failurePolicy"] = failurePolicy
	}
	return hook
}

func webhookConfig(r Resource, name string, hooks ...map[string]any) *Object {
	var list []any
	for _, h := range hooks {
		list = append(list, h)
	}
	return object(r, "", name, withContent(map[string]any{"webhooks": list}))
}

func TestDeadWebhooks(t *testing.T) {
	acmeGone := webhook("validate.acme.io", "", "acme", "acme-webhook")
	tests := []struct {
		name       string
		args       DeadWebhooksArgs
		objects    []*Object
		wantReason string // "" for no finding
		severity   Severity
		wantAction bool
		wantOptIn  string
		evidence   []string
	}{
		{
			name: "a webhook whose Service has a ready endpoint: nothing",
			objects: []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone),
				object(Namespaces, "", "acme"), object(Services, "acme", "acme-webhook"), endpointSlice("acme", "acme-webhook", true)},
		},
		{
			name:       "failurePolicy Fail (the default), Service and namespace gone: deleted once opted in",
			args:       DeadWebhooksArgs{Delete: true},
			objects:    []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone)},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused; its Services and whoever registered it are gone",
			severity:   SeverityWarning,
			wantAction: true,
			evidence: []string{
				"webhook validate.acme.io (failurePolicy Fail): Service acme/acme-webhook: no such Service",
				"webhook validate.acme.io refuses CREATE, UPDATE of pods, pods.apps, deployments, deployments.apps",
				"namespace acme no longer exists: what was installed there is gone",
			},
		},
		{
			name:       "without the opt-in: skipped, opt-in",
			objects:    []*Object{webhookConfig(MutatingWebhookConfigurations, "acme", acmeGone)},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused; its Services and whoever registered it are gone",
			severity:   SeverityWarning,
			wantAction: true,
			wantOptIn:  "rules.dead-webhooks.delete",
		},
		{
			name:       "failurePolicy Ignore, the namespace still there: info, kept",
			args:       DeadWebhooksArgs{Delete: true},
			objects:    []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", webhook("validate.acme.io", "Ignore", "acme", "acme-webhook")), object(Namespaces, "", "acme")},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint",
			severity:   SeverityInfo,
			evidence:   []string{"namespace acme exists: whoever registered it may still be there, and nothing says who"},
		},
		{
			name: "the Service exists without endpoints: reported, kept",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone),
				object(Services, "acme", "acme-webhook"), endpointSlice("acme", "acme-webhook", false)},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused",
			severity:   SeverityWarning,
		},
		{
			name: "one webhook of two is alive: kept",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone, webhook("other.acme.io", "", "other", "svc")),
				object(Namespaces, "", "other"), object(Services, "other", "svc"), endpointSlice("other", "svc", true)},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused",
			severity:   SeverityWarning,
		},
		{
			name:       "a webhook called by URL: not checked",
			args:       DeadWebhooksArgs{Delete: true},
			objects:    []*Object{webhookConfig(ValidatingWebhookConfigurations, "hosted", webhook("hosted.example.com", "", "", ""))},
			wantReason: "webhooks hosted.example.com are called by URL: not checked",
			severity:   SeverityInfo,
			evidence:   []string{"webhook hosted.example.com calls https://hooks.example.com/hosted.example.com: URLs are not checked"},
		},
		{
			name: "labelled by OLM: olm-rbac's",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{func() *Object {
				o := webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone)
				withLabels("olm.owner", "acme.v1", "olm.owner.namespace", "acme", "olm.owner.kind", "ClusterServiceVersion")(o)
				return o
			}()},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused",
			severity:   SeverityWarning,
			evidence:   []string{"labelled by OLM (olm.owner): olm-rbac deletes it once its ClusterServiceVersion and OLM are gone"},
		},
		{
			name: "registered by a Helm release that is uninstalled, its namespace still there: deleted",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{helmOwned(webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone), "acme", "acme-operator"),
				object(Namespaces, "", "acme")},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused; its Services and whoever registered it are gone",
			severity:   SeverityWarning,
			wantAction: true,
			evidence: []string{"registered by Helm release acme/acme-operator (meta.helm.sh annotations): Helm release acme/acme-operator is uninstalled: " +
				"no Secret or ConfigMap labelled owner=helm, name=acme-operator in acme"},
		},
		{
			name: "registered by a Helm release that is installed: kept, though its namespace is gone",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{helmOwned(webhookConfig(ValidatingWebhookConfigurations, "acme", acmeGone), "acme", "acme-operator"),
				object(Secrets, "acme", "sh.helm.release.v1.acme-operator.v1", withLabels("owner", "helm", "name", "acme-operator", "status", "deployed", "version", "1"))},
			wantReason: "webhooks validate.acme.io call a Service that is gone or has no ready endpoint; with failurePolicy Fail, the writes they match are refused",
			severity:   SeverityWarning,
			evidence:   []string{"registered by Helm release acme/acme-operator (meta.helm.sh annotations): Helm release acme/acme-operator is installed: Secret sh.helm.release.v1.acme-operator.v1 has status deployed"},
		},
		{
			name: "a CRD's conversion webhook: reported only",
			args: DeadWebhooksArgs{Delete: true},
			objects: []*Object{object(CustomResourceDefinitions, "", "widgets.acme.io", withContent(map[string]any{"spec": map[string]any{"conversion": map[string]any{
				"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{"service": map[string]any{"namespace": "acme", "name": "acme-webhook"}}},
			}}}))},
			wantReason: "its conversion webhook calls Service acme/acme-webhook, which is gone or has no ready endpoint",
			severity:   SeverityWarning,
			evidence:   []string{"reported only: the CRD holds its objects' data"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := NewDeadWebhooks(tt.args, Settings{Finalizers: shippedMappings(t)})
			require.NoError(t, err)
			findings := rule.Plan(context.Background(), viewWith(Coverage{}, tt.objects...))
			if tt.wantReason == "" {
				assert.Empty(t, findings)
				return
			}
			require.Len(t, findings, 1)
			f := findings[0]
			assert.Equal(t, tt.wantReason, f.Reason)
			assert.Equal(t, tt.severity, f.Severity)
			assert.Equal(t, tt.wantAction, f.Action != nil, "action")
			assert.Equal(t, tt.wantOptIn, f.OptIn)
			for _, e := range tt.evidence {
				assert.Contains(t, f.Evidence, e)
			}
		})
	}
}

// helmOwned marks obj as an object of Helm release namespace/release.
func helmOwned(obj *Object, namespace, release string) *Object {
	withLabels("app.kubernetes.io/managed-by", "Helm")(obj)
	withAnnotations("meta.helm.sh/release-name", release, "meta.helm.sh/release-namespace", namespace)(obj)
	return obj
}

// TestDeadWebhooksRefuse: a dead webhook with failurePolicy Fail says which writes it refuses:
// those its rules and selectors match; Ignore refuses nothing, and neither does a live one.
func TestDeadWebhooksRefuse(t *testing.T) {
	hook := webhook("validate.acme.io", "", "acme", "acme-webhook")
	hook["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{"team": "a"}}
	hook["objectSelector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "skip", "operator": "DoesNotExist"}}}
	config := webhookConfig(ValidatingWebhookConfigurations, "acme", hook, webhook("lenient.acme.io", "Ignore", "acme", "acme-webhook"))
	teamA, teamB := object(Namespaces, "", "a", withLabels("team", "a")), object(Namespaces, "", "b", withLabels("team", "b"))
	podA, podB := object(Pods, "a", "p"), object(Pods, "b", "p")
	skipped := object(Pods, "a", "skipped", withLabels("skip", "yes"))
	deployment := object(Deployments, "a", "d")
	view := viewWith(Coverage{}, config, teamA, teamB, podA, podB, skipped, deployment)
	rule, err := NewDeadWebhooks(DeadWebhooksArgs{}, Settings{Finalizers: shippedMappings(t)})
	require.NoError(t, err)
	findings := rule.Plan(context.Background(), view)
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Refuses, 1, "the Fail webhook only")
	refusal := findings[0].Refuses[0]
	assert.Equal(t, "webhook validate.acme.io (Service acme/acme-webhook is gone)", refusal.String())
	for _, tt := range []struct {
		what      string
		operation string
		obj       *Object
		want      bool
	}{
		{"an update of a pod in a namespace it selects", "UPDATE", podA, true},
		{"an update of a deployment.apps there", "UPDATE", deployment, true},
		{"a delete: not in its operations", "DELETE", podA, false},
		{"in a namespace it does not select", "UPDATE", podB, false},
		{"an object its objectSelector leaves out", "UPDATE", skipped, false},
		{"a kind it does not name", "UPDATE", teamA, false},
		{"its own configuration: webhooks never see those", "UPDATE", config, false},
	} {
		assert.Equal(t, tt.want, refusal.Refuses(view, tt.operation, tt.obj.Ref()), tt.what)
	}

	alive := viewWith(Coverage{}, config, object(Namespaces, "", "acme"), object(Services, "acme", "acme-webhook"), endpointSlice("acme", "acme-webhook", true))
	assert.Empty(t, rule.Plan(context.Background(), alive), "a webhook that answers refuses nothing of the sweeper's")
}

// TestDeadWebhooksPolicyRules: get and delete on webhook configurations, once opted in; nothing
// before.
func TestDeadWebhooksPolicyRules(t *testing.T) {
	tests := []struct {
		name string
		args DeadWebhooksArgs
		want []rbacv1.PolicyRule
	}{
		{name: "reporting only"},
		{name: "opted in", args: DeadWebhooksArgs{Delete: true}, want: []rbacv1.PolicyRule{
			{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "delete"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policyRulesOf(t, DeadWebhooksName, tt.args, Settings{}))
		})
	}
	assert.Equal(t, DeadWebhooksArgs{Delete: true}, DeadWebhooks{}.OptInArgs(), "its opt-in in the cluster: delete")
}
