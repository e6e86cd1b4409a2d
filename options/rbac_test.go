package options

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestPolicyRules(t *testing.T) {
	opts := Default()
	policy, err := opts.PolicyRules()
	require.NoError(t, err)
	assert.Empty(t, policy, "--dry-run=client writes nothing")

	opts.DryRun = report.DryRunNone
	policy, err = opts.PolicyRules()
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"logging.banzaicloud.io"}, Resources: []string{"loggings", "syslogngconfigs", "fluentdconfigs"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"clusterserviceversions"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"olm.operatorframework.io"}, Resources: []string{"clusterextensions", "clustercatalogs", "clusterobjectsets"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"catalogd.operatorframework.io"}, Resources: []string{"clustercatalogs"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"acme.cert-manager.io"}, Resources: []string{"challenges"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications", "appprojects", "applicationsets"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"operator.victoriametrics.com"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"operator.tigera.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"opensearch.org"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"opensearch.opster.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"kafka.strimzi.io"}, Resources: []string{"kafkatopics", "kafkarebalances"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"prometheuses"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"helm.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"notification.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"image.toolkit.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"source.extensions.fluxcd.io"}, Resources: []string{"*"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"installplans"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}, policy, "no opt-in: olm-rbac and operator-leftovers delete nothing")

	opts.RuleConfigs = map[string]rules.RuleConfig{
		"olm-rbac":           {Args: rules.OLMRBACArgs{Delete: true}},
		"operator-leftovers": {Args: rules.OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}},
	}
	opts.Rules = []string{"olm-rbac", "operator-leftovers"}
	opts.DryRun = report.DryRunServer
	policy, err = opts.PolicyRules()
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"installplans"}, Verbs: []string{"get", "delete"}},
	}, policy, "opted in; a server-side dry run records no Events")
}
