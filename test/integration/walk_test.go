package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

const walkSeed = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NAMESPACE}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: NAMESPACE}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: NAMESPACE}
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: syslog-ng, namespace: NAMESPACE}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {name: etcd, namespace: NAMESPACE}
spec: {name: etcd, source: operatorhubio-catalog, sourceNamespace: olm, channel: singlenamespace-alpha}
`

// serverInventory is what the server holds, computed independently of the engine: every
// listable resource of discovery, listed unpaged through the dynamic client, namespaced ones in
// one namespace only; of the Namespace objects, only that namespace counts.
type serverInventory struct {
	resources []schema.GroupVersionResource
	objects   int
}

func inventoryOf(t *testing.T, namespace string) serverInventory {
	t.Helper()
	lists, err := discovery.ServerPreferredResources(testCluster.Kube.Discovery())
	require.NoError(t, err)
	var inv serverInventory
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		require.NoError(t, err)
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			inv.resources = append(inv.resources, gvr)
			var items *unstructured.UnstructuredList
			if r.Namespaced {
				items, err = testCluster.Dynamic.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
			} else {
				items, err = testCluster.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			}
			require.NoError(t, err, gvr.String())
			for _, item := range items.Items {
				if gvr.Resource != "namespaces" || item.GetName() == namespace {
					inv.objects++
				}
			}
		}
	}
	return inv
}

func listPath(gvr schema.GroupVersionResource, namespace string) string {
	prefix := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		prefix = "/api/" + gvr.Version
	}
	if namespace != "" {
		return prefix + "/namespaces/" + namespace + "/" + gvr.Resource
	}
	return prefix + "/" + gvr.Resource
}

func TestEveryListableResourceIsWalked(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, walkSeed)
	before := inventoryOf(t, ns)
	require.Greater(t, len(before.resources), 50, "discovery should list the built-in resources and the CRDs")

	rec := &recorder{}
	rep := newEngine(t, testOptions(ns), rec, nil).Run(context.Background())

	require.Empty(t, rep.Errors)
	after := inventoryOf(t, ns)
	require.Equal(t, before.objects, after.objects, "the cluster changed during the test")
	assert.Equal(t, len(before.resources), rep.Summary.Resources)
	assert.Equal(t, before.objects, rep.Summary.Scanned)

	namespaced, err := testCluster.Kube.Discovery().ServerPreferredNamespacedResources()
	require.NoError(t, err)
	isNamespaced := map[schema.GroupVersionResource]bool{}
	for _, list := range namespaced {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			isNamespaced[gv.WithResource(r.Name)] = true
		}
	}
	for _, gvr := range before.resources {
		namespace := ""
		if isNamespaced[gvr] {
			namespace = ns
		}
		assert.NotEmpty(t, rec.matching("GET", "^"+listPath(gvr, namespace)+"$"), "%s was not listed", gvr)
	}
}

func TestListsArePaged(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	for i := range 7 {
		create(t, ns, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: NAMESPACE}\n", i))
	}
	opts := testOptions(ns)
	opts.PageSize = 2
	opts.IncludeResources = []string{"configmaps"}
	rec := &recorder{}
	rep := newEngine(t, opts, rec, nil).Run(context.Background())

	require.Empty(t, rep.Errors)
	assert.Equal(t, 1, rep.Summary.Resources)
	assert.Equal(t, 7, rep.Summary.Scanned)
	lists := rec.matching("GET", "^/api/v1/namespaces/"+ns+"/configmaps$")
	require.Len(t, lists, 4, "7 objects in pages of 2")
	for i, req := range lists {
		assert.Equal(t, "2", req.Query.Get("limit"))
		assert.Equal(t, i > 0, req.Query.Get("continue") != "", "page %d continue token", i)
	}
}

const stuckPair = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata:
  name: stuck
  namespace: NAMESPACE
  finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: stuck
  namespace: NAMESPACE
  finalizers: [example.com/keep]
`

func TestExcludedNamespacesAreNotListed(t *testing.T) {
	kept, excluded := testCluster.NewNamespace(t, "kept"), testCluster.NewNamespace(t, "excluded")
	terminate(t, kept, stuckPair)
	terminate(t, excluded, stuckPair)

	opts := testOptions("")
	opts.ExcludeNamespaces = []string{excluded}
	rec := &recorder{}
	rep := newEngine(t, opts, rec, nil, stuckTerminating(t, 0)).Run(context.Background())

	require.Empty(t, rep.Errors)
	assert.Len(t, findingsIn(rep, kept), 2)
	assert.Empty(t, findingsIn(rep, excluded))
	assert.Empty(t, rec.matching("GET", "/namespaces/"+excluded+"/"), "nothing in the excluded namespace is listed")
	configMapLists := rec.matching("GET", "^/api/v1/configmaps$")
	require.NotEmpty(t, configMapLists)
	for _, req := range configMapLists {
		assert.Contains(t, req.Query.Get("fieldSelector"), "metadata.namespace!="+excluded)
	}
}

// TestManyExcludedNamespacesFilterClientSide: a field selector naming each of 120 excluded
// namespaces would make an URL of some 10 KiB, which proxies on the way refuse (414). Past a
// length, the lists carry no field selector and the namespaces are filtered on the sweeper's side.
func TestManyExcludedNamespacesFilterClientSide(t *testing.T) {
	kept := testCluster.NewNamespace(t, "kept")
	terminate(t, kept, stuckPair)
	var excluded []string
	for i := range 120 {
		ns := testCluster.NewNamespace(t, fmt.Sprintf("excluded-with-a-long-name-%03d", i))
		excluded = append(excluded, ns)
	}
	terminate(t, excluded[0], stuckPair)

	opts := testOptions("")
	opts.ExcludeNamespaces = excluded
	rec := &recorder{}
	rep := newEngine(t, opts, rec, nil, stuckTerminating(t, 0)).Run(context.Background())

	require.Empty(t, rep.Errors)
	assert.Len(t, findingsIn(rep, kept), 2)
	assert.Empty(t, findingsIn(rep, excluded[0]), "filtered on the sweeper's side")
	configMapLists := rec.matching("GET", "^/api/v1/configmaps$")
	require.NotEmpty(t, configMapLists)
	for _, req := range configMapLists {
		assert.Empty(t, req.Query.Get("fieldSelector"))
	}
}

func TestIncludedNamespacesAreListedOneByOne(t *testing.T) {
	kept, other := testCluster.NewNamespace(t, "kept"), testCluster.NewNamespace(t, "other")
	terminate(t, kept, stuckPair)
	terminate(t, other, stuckPair)

	rec := &recorder{}
	rep := newEngine(t, testOptions(kept), rec, nil, stuckTerminating(t, 0)).Run(context.Background())

	require.Empty(t, rep.Errors)
	assert.Len(t, findingsIn(rep, kept), 2)
	assert.Empty(t, findingsIn(rep, other))
	assert.Empty(t, rec.matching("GET", "/namespaces/"+other+"/"))
	assert.Empty(t, rec.matching("GET", "^/api/v1/configmaps$"), "no list across namespaces")
	assert.NotEmpty(t, rec.matching("GET", "^/api/v1/namespaces/"+kept+"/configmaps$"))
}

func TestExcludedResourcesAreNotListed(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)

	opts := testOptions(ns)
	opts.ExcludeResources = []string{"*.logging.banzaicloud.io", "secrets"}
	rec := &recorder{}
	rep := newEngine(t, opts, rec, nil, stuckTerminating(t, 0)).Run(context.Background())

	require.Empty(t, rep.Errors)
	findings := findingsIn(rep, ns)
	require.Len(t, findings, 1)
	assert.Equal(t, "ConfigMap", findings[0].Object.Kind)
	assert.Empty(t, rec.matching("GET", "/syslogngconfigs$"))
	assert.Empty(t, rec.matching("GET", "/loggings$"))
	assert.Empty(t, rec.matching("GET", "/secrets$"))
	assert.NotEmpty(t, rec.matching("GET", "/configmaps$"))
}

// TestFailingAPIGroupIsReported registers an aggregated API whose backend does not exist, as
// when a metrics-server is down: its group is reported and everything else is still walked.
func TestFailingAPIGroupIsReported(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, stuckPair)
	create(t, "", `
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.broken.operator-sweeper.io}
spec:
  group: broken.operator-sweeper.io
  version: v1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {namespace: default, name: nowhere, port: 443}
`)

	engine := newEngine(t, testOptions(ns), nil, nil, stuckTerminating(t, 0))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rep := engine.Run(context.Background())
		require.Len(c, rep.Errors, 1)
		assert.Equal(c, "inventory", rep.Errors[0].Stage)
		assert.Equal(c, "broken.operator-sweeper.io/v1", rep.Errors[0].Resource)
		assert.False(c, rep.Failed(), "one failing group does not fail the run")
		assert.Greater(c, rep.Summary.Resources, 50)
		assert.Len(c, findingsIn(rep, ns), 2, "the rest is still walked")
	}, 30*time.Second, 500*time.Millisecond)
}

// viewProbe is a rule that keeps the view it is given.
type viewProbe struct{ view *rules.View }

func (*viewProbe) Name() string { return "view-probe" }

func (p *viewProbe) Plan(_ context.Context, view *rules.View) []rules.Finding {
	p.view = view
	return nil
}

// TestViewCoverage: a rule must not conclude that something is absent from a namespace that was
// not walked, or from a resource that was not listed.
func TestViewCoverage(t *testing.T) {
	ns, other := testCluster.NewNamespace(t), testCluster.NewNamespace(t, "other")
	deployments := rules.Deployments.GroupResource()
	clusterRoles := rules.ClusterRoles.GroupResource()
	secrets := rules.Secrets.GroupResource()
	notServed := schema.GroupResource{Group: "nothing.example.com", Resource: "widgets"}

	probe := &viewProbe{}
	newEngine(t, testOptions(""), nil, nil, probe).Run(context.Background())
	require.NotNil(t, probe.view)
	assert.True(t, probe.view.Observed(deployments, ""), "walked everywhere")
	assert.True(t, probe.view.Observed(deployments, ns))
	assert.True(t, probe.view.Observed(clusterRoles, ""))
	assert.True(t, probe.view.Observed(notServed, ""), "a resource the server does not serve has no objects")

	probe = &viewProbe{}
	opts := testOptions(ns)
	opts.ExcludeResources = []string{"secrets"}
	newEngine(t, opts, nil, nil, probe).Run(context.Background())
	require.NotNil(t, probe.view)
	assert.False(t, probe.view.Observed(deployments, ""), "walked in one namespace only")
	assert.True(t, probe.view.Observed(deployments, ns))
	assert.False(t, probe.view.Observed(deployments, other))
	assert.True(t, probe.view.Observed(clusterRoles, ""), "cluster-scoped resources are walked in full")
	assert.False(t, probe.view.Observed(secrets, ns), "excluded, though served")
}
