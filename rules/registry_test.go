package rules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

func TestRegistryNamesItsRules(t *testing.T) {
	seen := map[string]bool{}
	for _, reg := range Registry() {
		assert.False(t, seen[reg.Name], "%s registered twice", reg.Name)
		seen[reg.Name] = true
		rule, err := reg.New(nil, Settings{})
		require.NoError(t, err, reg.Name)
		assert.Equal(t, reg.Name, rule.Name(), "the registry and the rule agree on its name")
		assert.True(t, strings.HasSuffix(reg.ArgsType().Name(), "Args"), "%s: %s", reg.Name, reg.ArgsType())
	}
}

// TestOptInsAreOffUntilOptedIn: a rule with an opt-in grants nothing by default, and its
// opt-in's arguments build it, granting something: what its component in the cluster grants.
func TestOptInsAreOffUntilOptedIn(t *testing.T) {
	for _, reg := range Registry() {
		rule, err := reg.New(nil, Settings{})
		require.NoError(t, err, reg.Name)
		optedIn, ok := rule.(OptedIn)
		if !ok {
			continue
		}
		assert.Empty(t, optedIn.PolicyRules(), "%s grants nothing until opted in", reg.Name)
		on, err := reg.New(optedIn.OptInArgs(), Settings{})
		require.NoError(t, err, "%s: its opt-in's arguments", reg.Name)
		assert.NotEmpty(t, on.(Authorized).PolicyRules(), "%s, opted in", reg.Name)
	}
}

func registration(t *testing.T, name string) Registration {
	t.Helper()
	for _, reg := range Registry() {
		if reg.Name == name {
			return reg
		}
	}
	t.Fatalf("no rule %s", name)
	return Registration{}
}

func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name, rule, config string
		want               RuleConfig
		wantErr            string
	}{
		{name: "enabled only", rule: StuckTerminatingName, config: `{"enabled": false}`, want: RuleConfig{Enabled: ptr.To(false)}},
		{name: "arguments", rule: OLMRBACName, config: `{"delete": true}`, want: RuleConfig{Args: &OLMRBACArgs{Delete: true}}},
		{name: "both", rule: CatalogPodsName, config: `{"enabled": true, "selector": "app=x"}`, want: RuleConfig{Enabled: ptr.To(true), Args: &CatalogPodsArgs{Selector: "app=x"}}},
		{name: "empty", rule: InstallPlanOwnersName, config: `{}`},
		{name: "unknown key", rule: StuckTerminatingName, config: `{"enable": true}`, wantErr: `unknown field "rules.stuck-terminating.enable"`},
		{name: "unknown keys", rule: OLMRBACName, config: `{"delete": true, "purge": 1, "x": 2}`, wantErr: "unknown field \"rules.olm-rbac.purge\"\nunknown field \"rules.olm-rbac.x\""},
		{name: "wrong type", rule: OperatorLeftoversName, config: `{"delete": "CSV"}`, wantErr: "rules.operator-leftovers: json: cannot unmarshal string into Go struct field OperatorLeftoversArgs.delete of type []string"},
		{name: "enabled wrong type", rule: OLMRBACName, config: `{"enabled": "yes"}`, wantErr: "rules.olm-rbac.enabled: json: cannot unmarshal string into Go value of type bool"},
		{name: "not an object", rule: OLMRBACName, config: `true`, wantErr: "rules.olm-rbac: json: cannot unmarshal bool into Go value of type map[string]json.RawMessage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := registration(t, tt.rule).DecodeConfig([]byte(tt.config))
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRegistrationNew(t *testing.T) {
	leftovers := registration(t, OperatorLeftoversName)
	want, err := NewOperatorLeftovers(OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}, Settings{})
	require.NoError(t, err)
	rule, err := leftovers.New(OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}, Settings{})
	require.NoError(t, err)
	assert.Equal(t, want, rule)

	rule, err = leftovers.New(&OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}, Settings{})
	require.NoError(t, err, "a pointer, as DecodeConfig returns, works too")
	assert.Equal(t, want, rule)

	_, err = leftovers.New(OLMRBACArgs{}, Settings{})
	require.EqualError(t, err, "rules.operator-leftovers: arguments of type rules.OLMRBACArgs, want rules.OperatorLeftoversArgs")

	_, err = leftovers.New(OperatorLeftoversArgs{Delete: []string{"CSV", "Pod"}}, Settings{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rules.operator-leftovers.delete[0] "CSV" is not a kind OLM lists as a component`)
	assert.Contains(t, err.Error(), `rules.operator-leftovers.delete[1] "Pod" is not a kind OLM lists as a component`)

	_, err = registration(t, CatalogPodsName).New(CatalogPodsArgs{Selector: "a in b"}, Settings{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rules.catalog-pods.selector "a in b": `)
}
