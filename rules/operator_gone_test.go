package rules

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOperatorGone: a finding that blames an operator uninstalled says so as data, naming the
// operator as its evidence first does (the report's preflight hint reads it, never the prose); a
// finding that blames none (a live controller, one scaled to 0, a registrar that may be there)
// has none.
func TestOperatorGone(t *testing.T) {
	orphanedFinalizers := func(configured ...FinalizerOwner) func(t *testing.T) Rule {
		return func(t *testing.T) Rule {
			return OrphanedFinalizers{minAge: 15 * time.Minute, mappings: shippedMappings(t, configured...)}
		}
	}
	deadAPIServices := func(t *testing.T) Rule {
		rule, err := NewDeadAPIServices(DeadAPIServicesArgs{Delete: true}, Settings{MinAge: 10 * time.Minute, Finalizers: shippedMappings(t)})
		require.NoError(t, err)
		return rule
	}
	deadWebhooks := func(t *testing.T) Rule {
		rule, err := NewDeadWebhooks(DeadWebhooksArgs{Delete: true}, Settings{Finalizers: shippedMappings(t)})
		require.NoError(t, err)
		return rule
	}

	helmCRD := object(CustomResourceDefinitions, "", "widgets.acme.io", withLabels("app.kubernetes.io/managed-by", "Helm"),
		withAnnotations("meta.helm.sh/release-name", "acme", "meta.helm.sh/release-namespace", "acme-system"))
	deployed := object(Secrets, "acme-system", "sh.helm.release.v1.acme.v1", withLabels("owner", "helm", "name", "acme", "status", "deployed", "version", "1"))
	stuckWidget := object(widgets, "shop", "w", terminatingFor(time.Hour, "cleanup.acme.io/finalizer"))
	local := FinalizerOwner{Pattern: "cleanup.acme.io/finalizer", Consequence: ConsequenceLocal}
	guards := FinalizerOwner{Pattern: "cleanup.acme.io/finalizer", Consequence: ConsequenceGuards, StandsFor: "a bucket", Remedy: "empty it"}
	agents := FinalizerOwner{Pattern: "agent.acme.io/*", Controllers: []Controller{{Kind: "DaemonSet", Namespace: "agents", Image: "*/agent"}}, Consequence: ConsequenceLocal}
	statefulSet := FinalizerOwner{Pattern: "sts.acme.io/*", Controllers: []Controller{{Kind: "StatefulSet", Namespace: "acme", Name: "acme"}}, Consequence: ConsequenceLocal}
	olmLabels := withLabels("olm.owner", "packageserver", "olm.owner.namespace", "olm", "olm.owner.kind", "ClusterServiceVersion")
	acmeHook := webhook("validate.acme.io", "", "acme", "acme-webhook")
	loggingOperatorInstaller := &Installer{Kind: "Deployment", Selector: loggingOperatorSel}
	helmInstaller := &Installer{Kind: HelmReleaseKind, Namespace: "acme-system", Name: "acme"}

	tests := []struct {
		name     string
		rule     func(t *testing.T) Rule
		coverage Coverage
		objects  []*Object
		want     *OperatorGone // nil: the finding blames no operator gone
	}{
		{
			name:    "a controller mapping by label selector, no controller anywhere: the selector",
			rule:    orphanedFinalizers(),
			objects: []*Object{stuckSyslog(syslogFinalizer)},
			want:    &OperatorGone{Installer: loggingOperatorInstaller, Drain: true},
		},
		{
			name:    "a controller mapping by name in a namespace: the workload",
			rule:    orphanedFinalizers(statefulSet),
			objects: []*Object{object(ConfigMaps, "acme", "c", terminatingFor(time.Hour, "sts.acme.io/x"))},
			want:    &OperatorGone{Installer: &Installer{Kind: "StatefulSet", Namespace: "acme", Name: "acme"}, Drain: true},
		},
		{
			name:    "a controller mapping by image in a namespace: the image",
			rule:    orphanedFinalizers(agents),
			objects: []*Object{object(ConfigMaps, "acme", "c", terminatingFor(time.Hour, "agent.acme.io/x"))},
			want:    &OperatorGone{Installer: &Installer{Kind: "DaemonSet", Namespace: "agents", Image: "*/agent"}, Drain: true},
		},
		{
			name:    "the controller runs: none",
			rule:    orphanedFinalizers(),
			objects: []*Object{stuckSyslog(syslogFinalizer), loggingOperator(1)},
		},
		{
			name:    "the controller is scaled to 0: none",
			rule:    orphanedFinalizers(),
			objects: []*Object{stuckSyslog(syslogFinalizer), loggingOperator(0)},
		},
		{
			name:     "the controllers were not all listed: none",
			rule:     orphanedFinalizers(),
			coverage: Coverage{Namespaces: []string{"logging"}},
			objects:  []*Object{stuckSyslog(syslogFinalizer)},
		},
		{
			name:    "the Helm release of the CRD, uninstalled: the release",
			rule:    orphanedFinalizers(local),
			objects: []*Object{stuckWidget, helmCRD},
			want:    &OperatorGone{Installer: helmInstaller, Drain: true},
		},
		{
			name:    "the same, guarding: blamed all the same",
			rule:    orphanedFinalizers(guards),
			objects: []*Object{stuckWidget, helmCRD},
			want:    &OperatorGone{Installer: helmInstaller, Drain: true},
		},
		{
			name:    "the same, unclassified: blamed all the same",
			rule:    orphanedFinalizers(),
			objects: []*Object{stuckWidget, helmCRD},
			want:    &OperatorGone{Installer: helmInstaller, Drain: true},
		},
		{
			name:    "two operators gone: the one the evidence names first, by the order of the finalizers",
			rule:    orphanedFinalizers(local, statefulSet),
			objects: []*Object{object(widgets, "shop", "w", terminatingFor(time.Hour, "sts.acme.io/x", "cleanup.acme.io/finalizer")), helmCRD},
			want:    &OperatorGone{Installer: &Installer{Kind: "StatefulSet", Namespace: "acme", Name: "acme"}, Drain: true},
		},
		{
			name:    "the Helm release of the CRD, installed: none",
			rule:    orphanedFinalizers(local),
			objects: []*Object{stuckWidget, helmCRD, deployed},
		},
		{
			name:    "a CRD only OLM labelled: blamed, nobody named",
			rule:    orphanedFinalizers(local),
			objects: []*Object{stuckWidget, object(CustomResourceDefinitions, "", "widgets.acme.io", withLabels("operators.coreos.com/acme.operators", ""))},
			want:    &OperatorGone{Drain: true},
		},
		{
			name:    "an APIService OLM registered, its CSV and OLM gone: the CSV",
			rule:    deadAPIServices,
			objects: []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), object(Namespaces, "", "olm")},
			want:    &OperatorGone{Installer: &Installer{Kind: "ClusterServiceVersion", Namespace: "olm", Name: "packageserver"}},
		},
		{
			name:    "an APIService whose Service's namespace is gone: blamed, nobody named",
			rule:    deadAPIServices,
			objects: []*Object{apiService("False", "ServiceNotFound", time.Hour)},
			want:    &OperatorGone{},
		},
		{
			name:    "an APIService whose registrar runs: none",
			rule:    deadAPIServices,
			objects: []*Object{apiService("False", "ServiceNotFound", time.Hour, olmLabels), object(Namespaces, "", "olm"), workload(Deployments, "olm", "olm-operator", 1)},
		},
		{
			name:    "a webhook configuration whose Services and namespace are gone: blamed, nobody named",
			rule:    deadWebhooks,
			objects: []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeHook)},
			want:    &OperatorGone{},
		},
		{
			name:    "a webhook configuration whose namespace is there: none",
			rule:    deadWebhooks,
			objects: []*Object{webhookConfig(ValidatingWebhookConfigurations, "acme", acmeHook), object(Namespaces, "", "acme")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			findings := tt.rule(t).Plan(context.Background(), viewWith(tt.coverage, tt.objects...))
			require.Len(t, findings, 1)
			assert.Equal(t, tt.want, findings[0].OperatorGone, findings[0].Reason)
		})
	}
}
