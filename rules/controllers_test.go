package rules

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultFinalizerOwners pins the shipped mappings to the finalizers the upstream sources add.
func TestDefaultFinalizerOwners(t *testing.T) {
	shipped := shippedMappings(t)
	logging := []Controller{{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"}}
	olmOperator := []Controller{{Kind: "Deployment", Name: "olm-operator"}}
	catalogd := []Controller{{Kind: "Deployment", Name: "catalogd-controller-manager"}}
	operatorController := []Controller{{Kind: "Deployment", Name: "operator-controller-controller-manager"}}
	tests := map[string][]Controller{
		// kube-logging/logging-operator, on Logging
		"syslogngconfig.logging.banzaicloud.io/finalizer":      logging,
		"fluentdconfig.logging.banzaicloud.io/finalizer":       logging,
		"telemetrycontroller.logging.banzaicloud.io/finalizer": logging,
		// operator-lifecycle-manager, on ClusterServiceVersion
		"operators.coreos.com/csv-cleanup": olmOperator,
		// operator-controller: ClusterCatalog (catalogd, and its name before catalogd v0.21.0),
		// ClusterExtension, ClusterObjectSet
		"olm.operatorframework.io/delete-server-cache":          catalogd,
		"catalogd.operatorframework.io/delete-server-cache":     catalogd,
		"olm.operatorframework.io/cleanup-unpack-cache":         operatorController,
		"olm.operatorframework.io/cleanup-contentmanager-cache": operatorController,
		"olm.operatorframework.io/teardown":                     operatorController,
	}
	for finalizer, want := range tests {
		owner, ok := shipped.ownerOf(finalizer)
		require.True(t, ok, finalizer)
		assert.Equal(t, want, owner.Controllers, finalizer)
	}
	_, ok := shipped.ownerOf("example.com/keep")
	assert.False(t, ok)
}

func TestFinalizerMappingsMerge(t *testing.T) {
	mine := FinalizerOwner{Pattern: "operators.coreos.com/csv-cleanup", Controllers: []Controller{{Kind: "Deployment", Name: "my-olm"}}}
	extra := FinalizerOwner{Pattern: "acme.io/*", Controllers: []Controller{{Kind: "StatefulSet", Name: "acme"}}}
	merged := shippedMappings(t, extra, mine)
	assert.Equal(t, []FinalizerOwner{extra, mine}, merged.Owners()[:2], "configured first, in their order")
	assert.Len(t, merged.Owners(), len(DefaultFinalizerOwners())+1, "the default for csv-cleanup is replaced")
	owner, _ := merged.ownerOf("operators.coreos.com/csv-cleanup")
	assert.Equal(t, mine, owner.FinalizerOwner)
}

func TestFinalizerMappingsErrorsNameTheConfigKey(t *testing.T) {
	_, err := NewFinalizerMappings([]FinalizerOwner{
		{Pattern: "[", Controllers: []Controller{{Kind: "Deployment", Name: "x"}}},
		{Pattern: "acme.io/*"},
		{Pattern: "b.io/*", Controllers: []Controller{{Kind: "Pod", Name: "x"}, {Kind: "Deployment", Name: "x", Selector: "a=b"}, {Kind: "DaemonSet", Selector: "a in b"}}},
	})
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 5, "every problem, one line each")
	assert.Equal(t, []string{
		`finalizers[0].pattern "[" is not a valid glob`,
		`finalizers[1] (acme.io/*) has no controllers: name at least one workload that removes these finalizers`,
		`finalizers[2].controllers[0].kind "Pod" is not Deployment, StatefulSet or DaemonSet`,
		`finalizers[2].controllers[1]: set exactly one of name and selector`,
	}, lines[:4])
	assert.True(t, strings.HasPrefix(lines[4], `finalizers[2].controllers[2].selector "a in b": `), lines[4])
}
