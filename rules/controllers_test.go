package rules

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultFinalizerOwners pins the shipped mappings to the finalizers the upstream sources add.
func TestDefaultFinalizerOwners(t *testing.T) {
	require.NoError(t, ValidateFinalizerOwners(DefaultFinalizerOwners()))
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
		owner, ok := ownerOf(DefaultFinalizerOwners(), finalizer)
		require.True(t, ok, finalizer)
		assert.Equal(t, want, owner.Controllers, finalizer)
	}
	_, ok := ownerOf(DefaultFinalizerOwners(), "example.com/keep")
	assert.False(t, ok)
}

func TestMergeFinalizerOwners(t *testing.T) {
	mine := FinalizerOwner{Pattern: "operators.coreos.com/csv-cleanup", Controllers: []Controller{{Kind: "Deployment", Name: "my-olm"}}}
	extra := FinalizerOwner{Pattern: "acme.io/*", Controllers: []Controller{{Kind: "StatefulSet", Name: "acme"}}}
	merged := MergeFinalizerOwners([]FinalizerOwner{extra, mine}, DefaultFinalizerOwners())
	assert.Equal(t, []FinalizerOwner{extra, mine}, merged[:2], "configured first, in their order")
	assert.Len(t, merged, len(DefaultFinalizerOwners())+1, "the default for csv-cleanup is replaced")
	owner, _ := ownerOf(merged, "operators.coreos.com/csv-cleanup")
	assert.Equal(t, mine, owner)
}
