package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// OLM v1's objects, with OLM v1's real CRDs (operator-controller's published module).
const (
	clusterExtension = `
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata: {name: NAME}
spec:
  namespace: NAMESPACE
  serviceAccount: {name: installer}
  source: {sourceType: Catalog, catalog: {packageName: etcd}}
`
	// olmv1Applied is what OLM v1 applies for ClusterExtension NAME: RBAC, a CRD with an instance
	// and one without, a Deployment and its ServiceAccount.
	olmv1Applied = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: NAME-manager, labels: LABELS}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: NAME-manager, labels: LABELS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: NAME-manager}
subjects: [{kind: ServiceAccount, name: NAME-controller, namespace: NAMESPACE}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: NAME-controller, namespace: NAMESPACE, labels: LABELS}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME-controller, namespace: NAMESPACE, labels: LABELS}
spec:
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec: {containers: [{name: manager, image: example.com/NAME:1.0.0}]}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kept.NAME.olmv1-test.io, labels: LABELS}
spec:
  group: NAME.olmv1-test.io
  scope: Namespaced
  names: {plural: kept, singular: kept, kind: Kept, listKind: KeptList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: empties.NAME.olmv1-test.io, labels: LABELS}
spec:
  group: NAME.olmv1-test.io
  scope: Namespaced
  names: {plural: empties, singular: empty, kind: Empty, listKind: EmptyList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	olmv1Labels = `{olm.operatorframework.io/owner-kind: ClusterExtension, olm.operatorframework.io/owner-name: NAME}`
)

// olmv1Fixture applies what OLM v1 applies for ClusterExtension name in namespace ns, and an
// instance of its CRD kept.<name>.olmv1-test.io.
func olmv1Fixture(t *testing.T, ns, name string) []*unstructured.Unstructured {
	t.Helper()
	objs := create(t, ns, fill(strings.ReplaceAll(olmv1Applied, "LABELS", olmv1Labels), ns, name))
	instance := createWhenServed(t, ns, fill(`{apiVersion: NAME.olmv1-test.io/v1, kind: Kept, metadata: {name: data, namespace: NAMESPACE}}`, ns, name))
	return append(objs, instance...)
}

// byName are a report's findings of a rule by "Kind name".
func byName(rep *report.Report, rule string) map[string]report.FindingResult {
	out := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		if f.Rule == rule {
			out[f.Object.Kind+" "+f.Object.Name] = f
		}
	}
	return out
}

// TestOLMv1Leftovers: what OLM v1 applied for a ClusterExtension that no longer exists is found;
// its RBAC is deleted once opted in, its CRD with an instance never, the empty one is; what a live
// ClusterExtension's labels name is not touched nor reported.
func TestOLMv1Leftovers(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testCluster.InstallOLMv1CRDs(ctx))
	ns := testCluster.NewNamespace(t)
	live, gone := ns+"-live", ns+"-gone"
	create(t, ns, fill(clusterExtension, ns, live))
	liveObjs := olmv1Fixture(t, ns, live)
	goneObjs := olmv1Fixture(t, ns, gone)
	time.Sleep(2 * time.Second) // nothing created in the second a sweep begins, or the one before, is deleted

	// The whole cluster: whether a CRD has custom resources is known only from every namespace.
	args := []string{"--min-age=0s", "--sweeper-namespace", ns}
	rep, stderr, code := runReport(t, args...)
	require.Equal(t, 0, code, stderr)
	found := byName(rep, rules.OLMv1LeftoversName)
	for _, obj := range liveObjs {
		assert.NotContains(t, found, obj.GetKind()+" "+obj.GetName(), "its ClusterExtension exists")
	}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		f := found[kind+" "+gone+"-manager"]
		assert.Nil(t, f.Action, "%s: kept while the extension's Deployment is there, which may run with it", kind)
		assert.Contains(t, f.Evidence, "ClusterExtension "+gone+" no longer exists")
		assert.Contains(t, strings.Join(f.Evidence, "\n"), "kept while Deployment "+ns+"/"+gone+"-controller")
	}
	empty := found["CustomResourceDefinition empties."+gone+".olmv1-test.io"]
	if assert.NotNil(t, empty.Action, "the empty CRD: a delete, opted in") {
		assert.Equal(t, report.ReasonOptIn, empty.SkipReason)
	}
	kept := found["CustomResourceDefinition kept."+gone+".olmv1-test.io"]
	assert.Nil(t, kept.Action, "a CRD with an instance is never deleted")
	assert.Contains(t, kept.Reason, "kept: it has 1 custom resources")
	assert.Len(t, kept.BlockedBy, 1, "its instance")
	assert.NotNil(t, found["CustomResourceDefinition empties."+gone+".olmv1-test.io"].Action, "the empty CRD is deleted, opted in")
	for _, name := range []string{"Deployment " + gone + "-controller", "ServiceAccount " + gone + "-controller", "Namespace " + ns} {
		f, ok := found[name]
		if assert.True(t, ok, "%s is reported", name) {
			assert.Nil(t, f.Action, "%s is reported only", name)
		}
	}

	// The extension's Deployment deleted by hand, its RBAC can go.
	for _, obj := range goneObjs {
		if obj.GetKind() == "Deployment" {
			remove(t, []*unstructured.Unstructured{obj})
		}
	}
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("rules:\n  olmv1-leftovers:\n    delete: true\n"), 0o600))
	rep, stderr, code = runReport(t, append(args, "--config", config, "--dry-run=none")...)
	require.Equal(t, 0, code, stderr)
	found = byName(rep, rules.OLMv1LeftoversName)
	for _, name := range []string{"ClusterRole " + gone + "-manager", "ClusterRoleBinding " + gone + "-manager", "CustomResourceDefinition empties." + gone + ".olmv1-test.io"} {
		assert.Equal(t, report.OutcomeApplied, found[name].Outcome, "%s: %s", name, found[name].Error)
	}
	for _, obj := range goneObjs {
		now := testCluster.Current(t, obj)
		switch name := obj.GetKind() + " " + obj.GetName(); name {
		case "ClusterRole " + gone + "-manager", "ClusterRoleBinding " + gone + "-manager", "CustomResourceDefinition empties." + gone + ".olmv1-test.io",
			"Deployment " + gone + "-controller":
			assert.True(t, now == nil || now.GetDeletionTimestamp() != nil, "%s deleted", name)
		default:
			assert.NotNil(t, now, "%s kept", name)
		}
	}
	for _, obj := range liveObjs {
		assert.NotNil(t, testCluster.Current(t, obj), "%s of the live ClusterExtension kept", obj.GetName())
	}
}

// TestOLMv1StuckObjects: a ClusterExtension and a ClusterCatalog stuck on OLM v1's finalizers are
// kept while operator-controller and catalogd run, in OpenShift's namespaces and in upstream's, the
// ClusterExtension's finding naming the known cause; released once they are gone.
func TestOLMv1StuckObjects(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testCluster.InstallOLMv1CRDs(ctx))
	for _, where := range []struct{ operatorController, catalogd string }{
		{"openshift-operator-controller", "openshift-catalogd"},
		{"olmv1-system", "olmv1-system"},
	} {
		t.Run(where.operatorController, func(t *testing.T) {
			ns := testCluster.NewNamespace(t)
			for _, n := range []string{where.operatorController, where.catalogd} {
				require.NoError(t, testCluster.EnsureNamespace(ctx, n))
			}
			controllers := create(t, "", fill(runningDeployment("operator-controller-controller-manager", where.operatorController)+"---"+
				runningDeployment("catalogd-controller-manager", where.catalogd), "", ""))
			ce := terminate(t, ns, fill(strings.Replace(clusterExtension, "metadata: {name: NAME}",
				"metadata: {name: NAME, finalizers: [olm.operatorframework.io/cleanup-contentmanager-cache]}", 1), ns, ns+"-stuck"))[0]
			catalog := terminate(t, ns, fill(`
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata: {name: NAME, finalizers: [olm.operatorframework.io/delete-server-cache]}
spec: {source: {type: Image, image: {ref: "quay.io/operator-sweeper/catalog:latest"}}}
`, ns, ns+"-stuck"))[0]
			args := []string{"--min-terminating-age=0s", "--dry-run=none", "--sweeper-namespace", ns, "--rules=orphaned-finalizers"}

			rep, stderr, code := runReport(t, args...)
			require.Equal(t, 0, code, stderr)
			f := findingAbout(t, rep, rules.OrphanedFinalizersName, ce)
			assert.Nil(t, f.Action, "operator-controller runs")
			assert.Contains(t, f.Reason, "Deployment "+where.operatorController+"/operator-controller-controller-manager")
			assert.Equal(t, rules.SeverityWarning, f.Severity, "a known cause")
			assert.Contains(t, strings.Join(f.Evidence, "\n"), "operator-controller#2304")
			f = findingAbout(t, rep, rules.OrphanedFinalizersName, catalog)
			assert.Nil(t, f.Action, "catalogd runs")
			assert.Contains(t, f.Reason, "Deployment "+where.catalogd+"/catalogd-controller-manager")

			remove(t, controllers)
			rep, stderr, code = runReport(t, args...)
			require.Equal(t, 0, code, stderr)
			for _, obj := range []*unstructured.Unstructured{ce, catalog} {
				f := findingAbout(t, rep, rules.OrphanedFinalizersName, obj)
				assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s released: %s %s", obj.GetKind(), f.Reason, f.Error)
				assert.Nil(t, testCluster.Current(t, obj), "%s gone", obj.GetKind())
			}
		})
	}
}

// runningDeployment is a Deployment name in namespace whose status says it runs.
func runningDeployment(name, namespace string) string {
	return strings.NewReplacer("DNAME", name, "DNS", namespace).Replace(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: DNAME, namespace: DNS}
spec:
  replicas: 1
  selector: {matchLabels: {app: DNAME}}
  template:
    metadata: {labels: {app: DNAME}}
    spec: {containers: [{name: manager, image: example.com/DNAME:1.0.0}]}
status: {replicas: 1, readyReplicas: 1, availableReplicas: 1, updatedReplicas: 1}
`)
}

// TestOLMv1MigrationBlocker: a ClusterExtension whose install fails on the single-owner rule is
// linked to the CRD an OLM v0 operator left in its way, with what to do; preflight
// clusterextension/NAME lists what deleting it would leave stuck.
func TestOLMv1MigrationBlocker(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testCluster.InstallOLMv1CRDs(ctx))
	ns := testCluster.NewNamespace(t)
	crd := create(t, ns, fill(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: etcdclusters.NAMESPACE.olmv1-test.io, labels: {operators.coreos.com/etcd.NAMESPACE: ""}}
spec:
  group: NAMESPACE.olmv1-test.io
  scope: Namespaced
  names: {plural: etcdclusters, singular: etcdcluster, kind: EtcdCluster, listKind: EtcdClusterList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`, ns, ""))[0]
	blocked := create(t, ns, fill(clusterExtension+`status:
  conditions:
  - type: Progressing
    status: "True"
    reason: Retrying
    lastTransitionTime: "2026-11-26T10:00:00Z"
    message: "CustomResourceDefinition 'etcdclusters.NAMESPACE.olmv1-test.io' already exists in namespace '' and cannot be managed by operator-controller"
`, ns, ns+"-etcd"))[0]

	// The whole cluster: that no CSV owns the CRD is known only from every namespace.
	rep, stderr, code := runReport(t)
	require.Equal(t, 0, code, stderr)
	f := findingAbout(t, rep, rules.OLMv1LeftoversName, blocked)
	assert.Contains(t, f.Reason, "single-owner rule")
	assert.Contains(t, uids(f.BlockedBy), crd.GetUID(), "linked to the CRD in its way")
	evidence := strings.Join(f.Evidence, "\n")
	assert.Contains(t, evidence, "installed by OLM v0 (label operators.coreos.com/etcd."+ns+")")
	assert.Contains(t, evidence, "no ClusterServiceVersion owns it any more")
	assert.Contains(t, evidence, "OLM v1 installs only what it applies itself")
}

// TestPreflightClusterExtension: preflight clusterextension/NAME lists the custom resources its
// operator finalizes and the CRD deleting it takes with them, exit 3.
func TestPreflightClusterExtension(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testCluster.InstallOLMv1CRDs(ctx))
	ns := testCluster.NewNamespace(t)
	name := ns + "-pf"
	create(t, ns, fill(clusterExtension, ns, name))
	objs := olmv1Fixture(t, ns, name)
	instance := objs[len(objs)-1]
	client, _, err := testCluster.Resource(instance)
	require.NoError(t, err)
	_, err = client.Patch(ctx, instance.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":["kept.`+name+`.olmv1-test.io/finalizer"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	rep, stderr, code := runReport(t, "preflight", "clusterextension/"+name)
	require.Equal(t, 3, code, stderr)
	found := byName(rep, rules.PreflightName)
	assert.Contains(t, found, "Kept data", "the custom resource its operator finalizes")
	assert.Contains(t, found["CustomResourceDefinition kept."+name+".olmv1-test.io"].Reason, "deletes it, and its 1 custom resources with it")
	_, _, code = runBinary(t, "preflight", "clusterextension/nothing-"+ns)
	assert.Equal(t, 2, code, "an unknown ClusterExtension")
}

// TestOLMv1UnusedInstaller: an OLM v1 that applies through ClusterObjectSets ignores a
// ClusterExtension's spec.serviceAccount (operator-controller#2770): the installer account's
// bindings, made per the old docs, are reported; an OLM v1 that still uses it reports nothing.
func TestOLMv1UnusedInstaller(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, testCluster.InstallOLMv1CRDs(ctx))
	ns := testCluster.NewNamespace(t)
	ce := create(t, ns, fill(clusterExtension, ns, ns+"-etcd"))[0]
	create(t, ns, fill(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: NAMESPACE-installer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: installer, namespace: NAMESPACE}]
`, ns, ""))
	rep, stderr, code := runReport(t, "--include-namespaces", ns)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, byName(rep, rules.OLMv1LeftoversName), "ClusterExtension "+ce.GetName(), "this OLM v1 still installs as spec.serviceAccount says")

	// A newer OLM v1: its CRDs include ClusterObjectSet (v1.2.0's module has none: a minimal one).
	createWhenServed(t, "", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterobjectsets.olm.operatorframework.io}
spec:
  group: olm.operatorframework.io
  scope: Cluster
  names: {plural: clusterobjectsets, singular: clusterobjectset, kind: ClusterObjectSet, listKind: ClusterObjectSetList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`)
	require.Eventually(t, func() bool {
		rep, _, code = runReport(t, "--include-namespaces", ns)
		_, found := byName(rep, rules.OLMv1LeftoversName)["ClusterExtension "+ce.GetName()]
		return code == 0 && found
	}, 30*time.Second, time.Second, "discovery serves ClusterObjectSets")
	f := byName(rep, rules.OLMv1LeftoversName)["ClusterExtension "+ce.GetName()]
	assert.Contains(t, f.Reason, "installer ServiceAccount "+ns+"/installer is no longer used")
	assert.Contains(t, f.Evidence, "ClusterRoleBinding "+ns+"-installer grants ClusterRole cluster-admin")
	assert.Nil(t, f.Action, "reported only")
}
