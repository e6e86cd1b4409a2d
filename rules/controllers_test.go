package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDefaultFinalizerOwners pins the catalog's mappings to the finalizers the upstream sources
// add, on the kinds they add them to.
func TestDefaultFinalizerOwners(t *testing.T) {
	shipped := shippedMappings(t)
	logging := []Controller{{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"}, {Kind: "Deployment", Image: "kube-logging/logging-operator"},
		{Kind: "Deployment", Image: "rancher/mirrored-kube-logging-logging-operator"}}
	olmOperator := []Controller{{Kind: "Deployment", Name: "olm-operator"}}
	catalogd := []Controller{{Kind: "Deployment", Name: "catalogd-controller-manager"}}
	operatorController := []Controller{{Kind: "Deployment", Name: "operator-controller-controller-manager"}}
	loggings := schema.GroupResource{Group: "logging.banzaicloud.io", Resource: "loggings"}
	tests := []struct {
		finalizer string
		on        schema.GroupResource
		want      []Controller
	}{
		// kube-logging/logging-operator, on Logging
		{"syslogngconfig.logging.banzaicloud.io/finalizer", loggings, logging},
		{"fluentdconfig.logging.banzaicloud.io/finalizer", loggings, logging},
		{"telemetrycontroller.logging.banzaicloud.io/finalizer", loggings, logging},
		// operator-lifecycle-manager, on ClusterServiceVersion
		{"operators.coreos.com/csv-cleanup", ClusterServiceVersions.GroupResource(), olmOperator},
		// operator-controller: ClusterCatalog (catalogd, and its name before catalogd v0.21.0),
		// ClusterExtension, ClusterObjectSet
		{"olm.operatorframework.io/delete-server-cache", ClusterCatalogs.GroupResource(), catalogd},
		{"catalogd.operatorframework.io/delete-server-cache", schema.GroupResource{Group: "catalogd.operatorframework.io", Resource: "clustercatalogs"}, catalogd},
		{"olm.operatorframework.io/cleanup-unpack-cache", ClusterExtensions.GroupResource(), operatorController},
		{"olm.operatorframework.io/cleanup-contentmanager-cache", ClusterExtensions.GroupResource(), operatorController},
		{"olm.operatorframework.io/teardown", ClusterObjectSets.GroupResource(), operatorController},
	}
	for _, tt := range tests {
		owner, ok := shipped.ownerOf(tt.finalizer, tt.on)
		if assert.True(t, ok, tt.finalizer) {
			assert.Equal(t, tt.want, owner.Controllers, tt.finalizer)
		}
		_, ok = shipped.ownerOf(tt.finalizer, anyResource)
		assert.False(t, ok, "%s on a kind no catalog entry names", tt.finalizer)
	}
	// The leader-election IDs of the upstream sources; OLM v0 holds none.
	leases := []struct {
		finalizer string
		on        schema.GroupResource
		want      []string
	}{
		{"fluentdconfig.logging.banzaicloud.io/finalizer", loggings, []string{"logging-operator.logging.banzaicloud.io"}},
		{"operators.coreos.com/csv-cleanup", ClusterServiceVersions.GroupResource(), nil},
		{"olm.operatorframework.io/delete-server-cache", ClusterCatalogs.GroupResource(), []string{"catalogd-operator-lock"}},
		{"olm.operatorframework.io/cleanup-unpack-cache", ClusterExtensions.GroupResource(), []string{"9c4404e7.operatorframework.io"}},
	}
	for _, tt := range leases {
		owner, _ := shipped.ownerOf(tt.finalizer, tt.on)
		assert.Equal(t, tt.want, owner.Leases, tt.finalizer)
	}
	_, ok := shipped.ownerOf("example.com/keep", anyResource)
	assert.False(t, ok)
}

func TestFinalizerMappingsMerge(t *testing.T) {
	csvs := []string{"clusterserviceversions.operators.coreos.com"}
	mine := FinalizerOwner{Pattern: "operators.coreos.com/csv-cleanup", Resources: csvs, Controllers: []Controller{{Kind: "Deployment", Name: "my-olm"}}}
	extra := FinalizerOwner{Pattern: "acme.io/*", Controllers: []Controller{{Kind: "StatefulSet", Name: "acme"}}}
	merged := shippedMappings(t, extra, mine)
	owners := merged.Owners()
	assert.Equal(t, []FinalizerOwner{extra}, owners[:1], "configured first, in their order")
	assert.Len(t, owners, len(catalogOwners(t))+1, "the catalog's csv-cleanup is replaced")
	owner, _ := merged.ownerOf("operators.coreos.com/csv-cleanup", ClusterServiceVersions.GroupResource())
	assert.Equal(t, mine.Controllers, owner.Controllers)
	assert.Equal(t, ConsequenceCascades, owner.Consequence, "a configured mapping that names no consequence keeps the catalog's")
	assert.NotNil(t, owner.Source)
}

func TestFinalizerMappingsErrorsNameTheConfigKey(t *testing.T) {
	_, err := NewFinalizerMappings([]FinalizerOwner{
		{Pattern: "[", Controllers: []Controller{{Kind: "Deployment", Name: "x"}}},
		{Pattern: "acme.io/*"},
		{Pattern: "b.io/*", Controllers: []Controller{{Kind: "Pod", Name: "x"}, {Kind: "Deployment", Name: "x", Selector: "a=b"}, {Kind: "DaemonSet", Selector: "a in b"}}},
		{Pattern: "c.io/*", Controllers: []Controller{{Kind: "Deployment", Image: "[x"}}, Leases: []string{"ok", "[y"}},
		{Pattern: "d.io/*", Controllers: []Controller{{Kind: "Deployment", Name: "d"}}, Resources: []string{"[z"}, Guards: "disks"},
		{Pattern: "e.io/*", Consequence: "harmless"},
		{Pattern: "f.io/*", Consequence: ConsequenceLocal, Remedy: "nothing"},
		{Pattern: "g.io/*", Protect: true, Consequence: ConsequenceLocal},
	})
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 12, "every problem, one line each")
	assert.Equal(t, []string{
		`finalizers[0].pattern "[" is not a valid glob`,
		`finalizers[1] (acme.io/*) has neither controllers nor a consequence: name the workloads that remove these finalizers, or what releasing them loses (consequence: local, cascades or guards)`,
		`finalizers[2].controllers[0].kind "Pod" is not Deployment, StatefulSet or DaemonSet`,
		`finalizers[2].controllers[1]: set exactly one of name, selector and image`,
	}, lines[:4])
	assert.True(t, strings.HasPrefix(lines[4], `finalizers[2].controllers[2].selector "a in b": `), lines[4])
	assert.Equal(t, []string{
		`finalizers[3].controllers[0].image "[x" is not a valid glob`, `finalizers[3].leases[1] "[y" is not a valid glob`,
		`finalizers[4] (d.io/*): guards is set without protect: true`, `finalizers[4].resources[0] "[z" is not a valid glob`,
		`finalizers[5].consequence "harmless" is not local, cascades or guards`,
		`finalizers[6] (f.io/*): remedy is for a finalizer whose consequence is guards`,
		`finalizers[7] (g.io/*): protect: true contradicts consequence: local`,
	}, lines[5:])
}

func TestImageMatches(t *testing.T) {
	for _, tt := range []struct {
		glob, image string
		want        bool
	}{
		{"*/logging-operator", "ghcr.io/kube-logging/logging-operator:5.0.0", true},
		{"*/logging-operator", "kube-logging/logging-operator", true},
		{"logging-operator", "ghcr.io/kube-logging/logging-operator@sha256:abc", true},
		{"*logging-operator", "rancher/mirrored-kube-logging-logging-operator:4.10.0", true},
		{"*logging-operator", "registry.local:5000/logging-operator", true},
		{"*/logging-operator", "ghcr.io/kube-logging/logging-operator-extras:1", false},
		{"logging-operator", "registry.local:5000/other", false},
		{"kube-logging/*", "ghcr.io/kube-logging/fluentd:1", true},
	} {
		assert.Equal(t, tt.want, imageMatches(tt.glob, tt.image), "%s ~ %s", tt.glob, tt.image)
	}
}

func TestLeasesProveAControllerAlive(t *testing.T) {
	owners := []FinalizerOwner{{Pattern: "acme.io/*", Controllers: []Controller{{Kind: "Deployment", Name: "acme"}}, Leases: []string{"acme-leader.*"}}}
	mapping, _ := shippedMappings(t, owners...).ownerOf("acme.io/x", anyResource)
	lease := func(name string, renewedAgo time.Duration, durationSeconds int64, opts ...func(*Object)) *Object {
		return object(Leases, "acme-system", name, append([]func(*Object){withContent(map[string]any{"spec": map[string]any{
			"holderIdentity": "acme-7d9f_1", "leaseDurationSeconds": durationSeconds, "renewTime": testNow.Add(-renewedAgo).Format(time.RFC3339Nano)}})}, opts...)...)
	}
	tests := []struct {
		name     string
		coverage Coverage
		objects  []*Object
		want     liveness
		evidence string
	}{
		{"renewed 10s ago", Coverage{}, []*Object{lease("acme-leader.io", 10*time.Second, 15)}, running,
			`Lease acme-system/acme-leader.io is held by "acme-7d9f_1", renewed 10s ago (within 2m0s): the controller runs`},
		{"renewed within 3 durations", Coverage{}, []*Object{lease("acme-leader.io", 4*time.Minute, 90)}, running, ""},
		{"renewed long ago", Coverage{}, []*Object{lease("acme-leader.io", time.Hour, 15)}, gone,
			`Lease acme-system/acme-leader.io was last renewed 60m ago by "acme-7d9f_1" (more than 2m0s): not held`},
		{"another Lease", Coverage{}, []*Object{lease("other", time.Second, 15)}, gone, "no Lease is named acme-leader.*"},
		{"released", Coverage{}, []*Object{lease("acme-leader.io", time.Second, 15, func(o *Object) {
			o.Content["spec"].(map[string]any)["holderIdentity"] = ""
		})}, gone, "Lease acme-system/acme-leader.io is released: no holder"},
		{"a Lease wins over a workload scaled to 0", Coverage{}, []*Object{lease("acme-leader.io", time.Second, 15), workload(Deployments, "acme-system", "acme", 0)}, running, ""},
		{"Leases not listed: unknown", Coverage{Unlisted: []schema.GroupResource{Leases.GroupResource()}}, nil, unknown,
			"Leases were not all listed (filters or errors): cannot tell whether acme-leader.* is held"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := controllersOf(viewWith(tt.coverage, tt.objects...), mapping)
			assert.Equal(t, tt.want, status.liveness, status.evidence)
			if tt.evidence != "" {
				assert.Contains(t, status.evidence, tt.evidence)
			}
		})
	}
}

// anyResource is a resource no shipped mapping is restricted to.
var anyResource = schema.GroupResource{Group: "example.com", Resource: "things"}
