package options

import (
	"strings"
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
	grants := grantsOf(policy)
	// What orphaned-finalizers may release, it may patch: every resource of every catalog entry
	// whose consequence lets it go.
	operators, err := rules.Catalog()
	require.NoError(t, err)
	releasable := map[string]bool{}
	for _, op := range operators {
		for _, owner := range op.Finalizers {
			if !owner.Consequence.Releasable() {
				continue
			}
			for _, glob := range owner.Resources {
				resource, group, _ := strings.Cut(glob, ".")
				releasable[group+"/"+resource] = true
				assert.True(t, grants["patch "+group+"/"+resource] || grants["patch "+group+"/*"], "%s (%s, %s) may be released: patch is granted", glob, op.Name, owner.Pattern)
				assert.True(t, grants["get "+group+"/"+resource] || grants["get "+group+"/*"], "%s: get, to re-read after a lost race", glob)
			}
		}
	}
	for grant := range grants {
		verb, resource, _ := strings.Cut(grant, " ")
		switch verb {
		case "patch":
			assert.True(t, releasable[resource] || resource == "operators.coreos.com/installplans",
				"%s: patch only where a finalizer may be released, or an InstallPlan re-owned", grant)
		case "get":
		default:
			assert.Contains(t, []string{"delete /pods", "create events.k8s.io/events"}, grant, "no opt-in: nothing is deleted but catalog pods")
		}
	}

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

// grantsOf flattens policy rules into a set of "verb group/resource".
func grantsOf(policy []rbacv1.PolicyRule) map[string]bool {
	grants := map[string]bool{}
	for _, r := range policy {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, verb := range r.Verbs {
					grants[verb+" "+group+"/"+resource] = true
				}
			}
		}
	}
	return grants
}
