package rules

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// freshView is what the engine builds from a fact's reads: only the resources read.
func freshView(resources []Resource, coverage Coverage, objects ...*Object) *View {
	return NewView(testNow, resources, coverage, objects)
}

func TestObjectFacts(t *testing.T) {
	absent := ObjectAbsent{ClusterServiceVersions, "operators", "etcd.v2"}
	assert.Equal(t, []Read{{Resource: ClusterServiceVersions.GroupResource(), Namespace: "operators", Name: "etcd.v2"}}, absent.Reads())
	empty := freshView([]Resource{ClusterServiceVersions}, Coverage{})
	holds, evidence := absent.Holds(empty)
	assert.True(t, holds)
	assert.Equal(t, "re-checked live: ClusterServiceVersion operators/etcd.v2 is still absent", evidence)
	holds, evidence = absent.Holds(freshView([]Resource{ClusterServiceVersions}, Coverage{}, csv("operators", "etcd.v2", nil)))
	assert.False(t, holds)
	assert.Equal(t, "re-checked live: ClusterServiceVersion operators/etcd.v2 exists now", evidence)

	terminating := ObjectTerminating{ClusterServiceVersions, "operators", "etcd.v2", "uid-1"}
	for name, tt := range map[string]struct {
		objects []*Object
		want    bool
	}{
		"still terminating": {[]*Object{csv("operators", "etcd.v2", nil, withUID("uid-1"), terminatingFor(time.Hour, "x"))}, true},
		"gone":              {nil, true},
		"re-created":        {[]*Object{csv("operators", "etcd.v2", nil, withUID("uid-2"))}, false},
		"no longer deleted": {[]*Object{csv("operators", "etcd.v2", nil, withUID("uid-1"))}, false},
	} {
		holds, _ := terminating.Holds(freshView([]Resource{ClusterServiceVersions}, Coverage{}, tt.objects...))
		assert.Equal(t, tt.want, holds, name)
	}
	assert.NotEqual(t, absent.Key(), terminating.Key())
}

func TestControllersGoneIsCheckedAgain(t *testing.T) {
	mapping, _ := shippedMappings(t).ownerOf(syslogFinalizer, schema.GroupResource{Group: "logging.banzaicloud.io", Resource: "loggings"})
	fact := controllersGone(viewWith(Coverage{}), mapping)
	var read []string
	for _, r := range fact.Reads() {
		read = append(read, r.Resource.String())
		assert.Empty(t, r.Namespace, "every namespace: an operator can run in any")
	}
	assert.Equal(t, []string{"deployments.apps", "leases.coordination.k8s.io"}, read, "the mapping's workloads and Leases")

	listed := []Resource{Deployments, Leases}
	holds, evidence := fact.Holds(freshView(listed, Coverage{}))
	assert.True(t, holds, evidence)
	holds, evidence = fact.Holds(freshView(listed, Coverage{}, loggingOperator(1)))
	assert.False(t, holds, "installed meanwhile")
	assert.Contains(t, evidence, "re-checked live: a controller of \"syslogngconfig.logging.banzaicloud.io/finalizer\" is there now: ")
	holds, _ = fact.Holds(freshView(listed, Coverage{}, object(Leases, "x", "logging-operator.logging.banzaicloud.io",
		withContent(map[string]any{"spec": map[string]any{"holderIdentity": "a", "leaseDurationSeconds": int64(15), "renewTime": testNow.Format(time.RFC3339Nano)}}))))
	assert.False(t, holds, "it holds its Lease now")

	// An operator out of the cluster, its clock an hour behind: its Lease looks stale, but it
	// is renewed between the view and the check.
	skewed := func(rv string) *Object {
		return object(Leases, "x", "logging-operator.logging.banzaicloud.io", func(o *Object) { o.ResourceVersion = rv },
			withContent(map[string]any{"spec": map[string]any{"holderIdentity": "laptop", "leaseDurationSeconds": int64(15), "renewTime": testNow.Add(-time.Hour).Format(time.RFC3339Nano)}}))
	}
	fact = controllersGone(viewWith(Coverage{}, skewed("10")), mapping)
	holds, evidence = fact.Holds(freshView(listed, Coverage{}, skewed("10")))
	assert.True(t, holds, "not renewed since: stale: %s", evidence)
	holds, evidence = fact.Holds(freshView(listed, Coverage{}, skewed("11")))
	assert.False(t, holds)
	assert.Equal(t, `re-checked live: Lease x/logging-operator.logging.banzaicloud.io was renewed or taken since the sweep looked: a controller of "syslogngconfig.logging.banzaicloud.io/finalizer" runs`, evidence)
}

func TestOrphanedFinalizersRestOnFacts(t *testing.T) {
	// Classified by the config file, owned by no mapping: the CRD says whose it is.
	local := FinalizerOwner{Pattern: "acme.io/cleanup", Consequence: ConsequenceLocal}
	rule := OrphanedFinalizers{minAge: 15 * time.Minute, mappings: shippedMappings(t, local)}
	crd := object(CustomResourceDefinitions, "", "widgets.acme.io", withLabels("app.kubernetes.io/managed-by", "Helm"),
		withAnnotations("meta.helm.sh/release-name", "acme", "meta.helm.sh/release-namespace", "acme-system"))
	widget := object(widgets, "shop", "w", terminatingFor(time.Hour, "acme.io/cleanup"))

	findings := rule.Plan(context.Background(), viewWith(Coverage{}, crd, widget))
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Facts, 1)
	fact := findings[0].Facts[0]
	assert.Equal(t, []Read{
		{Resource: CustomResourceDefinitions.GroupResource(), Name: "widgets.acme.io"},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: []string{"spec.customresourcedefinitions"}},
		{Resource: Secrets.GroupResource(), Namespace: "acme-system", Selector: "owner=helm,name=acme"},
		{Resource: ConfigMaps.GroupResource(), Namespace: "acme-system", Selector: "owner=helm,name=acme"},
	}, fact.Reads())

	read := []Resource{CustomResourceDefinitions, ClusterServiceVersions, Secrets, ConfigMaps}
	readIn := Coverage{Partial: []schema.GroupResource{CustomResourceDefinitions.GroupResource()}, ListedIn: map[schema.GroupResource][]string{
		Secrets.GroupResource(): {"acme-system"}, ConfigMaps.GroupResource(): {"acme-system"}}}
	holds, evidence := fact.Holds(freshView(read, readIn, crd))
	assert.True(t, holds, evidence)
	assert.Equal(t, "re-checked live: Helm release acme-system/acme is uninstalled: no Secret or ConfigMap labelled owner=helm, name=acme in acme-system", evidence)

	reinstalled := object(ConfigMaps, "acme-system", "sh.helm.release.v1.acme.v1", withLabels("owner", "helm", "name", "acme", "status", "deployed", "version", "1"))
	holds, _ = fact.Holds(freshView(read, readIn, crd, reinstalled))
	assert.False(t, holds, "re-installed meanwhile")

	moved := object(CustomResourceDefinitions, "", "widgets.acme.io", withLabels("app.kubernetes.io/managed-by", "Helm"),
		withAnnotations("meta.helm.sh/release-name", "acme", "meta.helm.sh/release-namespace", "elsewhere"))
	holds, evidence = fact.Holds(freshView(read, readIn, moved))
	assert.False(t, holds, "a release in a namespace that was not read is not known to be gone: %s", evidence)
	renamed := object(CustomResourceDefinitions, "", "widgets.acme.io", withLabels("app.kubernetes.io/managed-by", "Helm"),
		withAnnotations("meta.helm.sh/release-name", "acme-2", "meta.helm.sh/release-namespace", "acme-system"))
	holds, evidence = fact.Holds(freshView(read, readIn, renamed))
	assert.False(t, holds, "the records read were of another release")
	assert.Equal(t, "re-checked live: CRD widgets.acme.io changed its Helm ownership metadata", evidence)
}

func TestCatalogPodsRestOnTheNode(t *testing.T) {
	rule, err := NewCatalogPods(CatalogPodsArgs{}, Settings{NodeNotReadyFor: 5 * time.Minute, UnhealthyZoneThreshold: 0.55})
	require.NoError(t, err)
	fact := rule.nodeLost("worker-1")
	assert.Equal(t, []Read{
		{Resource: Nodes.GroupResource(), Fields: []string{"status.conditions", "spec.taints"}},
		{Resource: Leases.GroupResource(), Namespace: "kube-node-lease", Fields: []string{"spec.holderIdentity", "spec.leaseDurationSeconds", "spec.renewTime", "spec.acquireTime"}},
	}, fact.Reads())
	healthy := []*Object{node("h-1", "True", time.Hour), node("h-2", "True", time.Hour), node("h-3", "True", time.Hour)}
	for name, tt := range map[string]struct {
		node *Object
		want bool
	}{
		"still lost":    {node("worker-1", "Unknown", 10*time.Minute), true},
		"gone":          {nil, true},
		"back":          {node("worker-1", "True", time.Second), false},
		"reporting now": {node("worker-1", "False", time.Hour), false},
	} {
		objects := healthy
		if tt.node != nil {
			objects = append(slices.Clone(healthy), tt.node)
		}
		holds, evidence := fact.Holds(freshView([]Resource{Nodes}, Coverage{}, objects...))
		assert.Equal(t, tt.want, holds, "%s: %s", name, evidence)
	}
	holds, evidence := fact.Holds(freshView([]Resource{Nodes}, Coverage{}, node("worker-1", "Unknown", 10*time.Minute)))
	assert.False(t, holds, "its zone went down meanwhile")
	assert.Equal(t, "re-checked live: zone (nodes without a zone label): no Ready node of 1: a zone-wide outage; nothing is force-deleted there", evidence)
}

func TestZoneKey(t *testing.T) {
	for name, tt := range map[string]struct {
		labels []string
		want   string
	}{
		"none":                {nil, ""},
		"zone":                {[]string{"topology.kubernetes.io/zone", "a"}, ":\x00:a"},
		"region and zone":     {[]string{"topology.kubernetes.io/region", "eu", "topology.kubernetes.io/zone", "a"}, "eu:\x00:a"},
		"the beta label wins": {[]string{"failure-domain.beta.kubernetes.io/zone", "old", "topology.kubernetes.io/zone", "a"}, ":\x00:old"},
	} {
		assert.Equal(t, tt.want, zoneKey(object(Nodes, "", "n", withLabels(tt.labels...))), name)
	}
}

func TestInstallPlanOwnersRestOnTheSubscriptions(t *testing.T) {
	plan := object(InstallPlans, "operators", "install-abc", withUID("plan-uid"), ownedBy(subRef("etcd", "sub-a")))
	planned := InstallPlanOwners{}.Plan(context.Background(), viewWith(Coverage{}, subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan))
	require.Len(t, planned, 1)
	require.Len(t, planned[0].Facts, 1)
	fact := planned[0].Facts[0]
	read := []Resource{InstallPlans, Subscriptions}
	readIn := Coverage{Partial: []schema.GroupResource{InstallPlans.GroupResource()}, ListedIn: map[schema.GroupResource][]string{Subscriptions.GroupResource(): {"operators"}}}

	holds, evidence := fact.Holds(freshView(read, readIn, subscription("etcd", "sub-b", installPlanRef("install-abc", "plan-uid")), plan))
	assert.True(t, holds, evidence)
	holds, _ = fact.Holds(freshView(read, readIn, subscription("etcd", "sub-c", installPlanRef("install-abc", "plan-uid")), plan))
	assert.False(t, holds, "the Subscription was re-created once more")
}

func TestOLMRBACOwnedByItsCSVIsTheGarbageCollectors(t *testing.T) {
	labelled := withLabels("olm.owner", "etcd.v1", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion")
	owned := func(o *Object) {
		o.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: "etcd.v1", UID: "csv"}}
	}
	role := object(Roles, "operators", "etcd", labelled, owned)
	clusterRole := object(ClusterRoles, "", "etcd", labelled)
	rule := OLMRBAC{args: OLMRBACArgs{Delete: true}, mappings: shippedMappings(t)}

	findings := rule.Plan(context.Background(), viewWith(Coverage{}, role, clusterRole))
	require.Len(t, findings, 2)
	for _, f := range findings {
		switch f.Object.Kind {
		case "Role":
			assert.Nil(t, f.Action, "the garbage collector's")
			assert.Equal(t, "ClusterServiceVersion operators/etcd.v1 no longer exists; the garbage collector deletes its Role", f.Reason)
		case "ClusterRole":
			assert.Equal(t, Delete{}, f.Action)
			assert.Equal(t, []Fact{ObjectAbsent{ClusterServiceVersions, "operators", "etcd.v1"}}, f.Facts)
		}
	}

	var withoutCSVs []Resource
	for _, r := range allTestResources {
		if r != ClusterServiceVersions {
			withoutCSVs = append(withoutCSVs, r)
		}
	}
	findings = rule.Plan(context.Background(), NewView(testNow, withoutCSVs, Coverage{}, []*Object{role}))
	require.Len(t, findings, 1)
	assert.Equal(t, Delete{}, findings[0].Action, "without the CSV CRD, the garbage collector cannot resolve the owner")
}
