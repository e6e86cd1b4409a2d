package options

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
)

// TestPolicyRules: a sweep needs what its enabled rules declare, rule by rule in their order (each
// rule's tests say what it declares; no list here repeats them), in every mode but a client dry
// run; applying, it records Events too.
func TestPolicyRules(t *testing.T) {
	optedIn := Default()
	optedIn.RuleConfigs = map[string]rules.RuleConfig{
		"olm-rbac":           {Args: rules.OLMRBACArgs{Delete: true}},
		"operator-leftovers": {Args: rules.OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}},
	}
	optedIn.Rules = []string{"olm-rbac", "operator-leftovers"}
	tests := []struct {
		name   string
		opts   Options
		mode   report.DryRunMode
		events bool
	}{
		{name: "client dry run: writes nothing", opts: Default(), mode: report.DryRunClient},
		{name: "applying: the rules' grants and the Events", opts: Default(), mode: report.DryRunNone, events: true},
		{name: "opted in, server dry run: no Events", opts: optedIn, mode: report.DryRunServer},
		{name: "opted in, applying", opts: optedIn, mode: report.DryRunNone, events: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.DryRun = tt.mode
			policy, err := tt.opts.PolicyRules()
			require.NoError(t, err)
			if tt.mode == report.DryRunClient {
				assert.Empty(t, policy)
				return
			}
			ruleSet, err := tt.opts.RuleSet()
			require.NoError(t, err)
			var want []rbacv1.PolicyRule
			for _, rule := range ruleSet {
				if authorized, ok := rule.(rules.Authorized); ok {
					want = append(want, authorized.PolicyRules()...)
				}
			}
			require.NotEmpty(t, want, "the rules enabled act")
			if tt.events {
				want = append(want, sweeper.EventsPolicyRule())
			}
			assert.Equal(t, want, policy)
		})
	}
}
