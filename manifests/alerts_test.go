// Package manifests holds no code: its tests check the shipped manifests.
package manifests

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestPrometheusRuleMatchesTheRulesFile: the PrometheusRule ships exactly the groups that
// promtool tests in the plain rules file.
func TestPrometheusRuleMatchesTheRulesFile(t *testing.T) {
	var rulesFile struct {
		Groups []any `json:"groups"`
	}
	var prometheusRule struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	data, err := os.ReadFile("alerts/operator-sweeper.rules.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &rulesFile))
	data, err = os.ReadFile("alerts/prometheusrule.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &prometheusRule))

	assert.Equal(t, "monitoring.coreos.com/v1", prometheusRule.APIVersion)
	assert.Equal(t, "PrometheusRule", prometheusRule.Kind)
	require.Len(t, rulesFile.Groups, 1)
	assert.Equal(t, rulesFile.Groups, prometheusRule.Spec.Groups)
}
