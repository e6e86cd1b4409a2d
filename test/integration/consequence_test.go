package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// What a finalizer stands for decides, not only who is gone. The debris here is shaped after
// users' reports: Karpenter uninstalled with `helm uninstall` before its NodeClaims were gone (the
// catalog: an EC2 instance each; every test cluster serves NodeClaims), and a gadget operator whose Helm release is uninstalled, its
// Gadgets stuck on three finalizers in the CRD's API domain: one the config file says guards
// backups, one it says cleans a cache in the cluster, one nobody classified.
const (
	nodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: NAME, finalizers: [karpenter.sh/termination]}
status: {providerID: "aws:///eu-west-1a/i-0123456789abcdef0"}
`
	gadgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.consequence-test.io
  labels: {app.kubernetes.io/managed-by: Helm}
  annotations: {meta.helm.sh/release-name: gadget-operator, meta.helm.sh/release-namespace: NAMESPACE}
spec:
  group: consequence-test.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	gadget = `
apiVersion: consequence-test.io/v1
kind: Gadget
metadata: {name: NAME, namespace: NAMESPACE, finalizers: [FINALIZER]}
`
	gadgetUnknown = "gadgets.consequence-test.io/finalizer"
	gadgetBackup  = "backup.consequence-test.io/protect"
	gadgetCache   = "cache.consequence-test.io/finalizer"
	// consequenceConfig classifies two of the gadget's finalizers, and tries to classify
	// Karpenter's as local: what the catalog says guards stays guarded.
	consequenceConfig = `
finalizers:
- pattern: backup.consequence-test.io/protect
  resources: [gadgets.consequence-test.io]
  consequence: guards
  stands-for: the gadget's backups in object storage
  remedy: delete the gadget's backups from the bucket, then remove the finalizer
- pattern: cache.consequence-test.io/finalizer
  resources: [gadgets.consequence-test.io]
  consequence: local
- pattern: karpenter.sh/termination
  resources: [nodeclaims.karpenter.sh]
  consequence: local
`
)

// consequenceDebris seeds the debris and returns the objects by name: the NodeClaim, the Gadgets
// "unknown", "backup" and "cache", and the F4 Logging (the catalog's local logging-operator).
func consequenceDebris(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	create(t, ns, gadgetCRD)
	objs := map[string]*unstructured.Unstructured{}
	objs["nodeclaim"] = createWhenServed(t, "", fill(nodeClaim, "", "consequence-"+ns))[0]
	for name, finalizer := range map[string]string{"unknown": gadgetUnknown, "backup": gadgetBackup, "cache": gadgetCache} {
		objs[name] = createWhenServed(t, ns, strings.ReplaceAll(fill(gadget, ns, name), "FINALIZER", finalizer))[0]
	}
	f4 := seeded(t)(testCluster.SeedF4(ctx, testCluster.NewNamespace(t, "f4")))
	objs["logging"] = f4.Get("Logging", f4.Objects[0].GetName())
	for name, obj := range objs {
		if name == "logging" {
			continue
		}
		_, err := testCluster.Delete(ctx, obj)
		require.NoError(t, err)
	}
	time.Sleep(2 * time.Second) // nothing created in the second a sweep begins is acted on
	return objs
}

// TestConsequencesDecideAsClusterAdmin: run by hand as cluster-admin with --dry-run=none, the
// sweeper proves each owner gone — Karpenter by its catalog entry (no workload, no Lease), the
// gadget operator by its CRD's uninstalled Helm release — and releases only what is known to clean
// up inside the cluster: what guards is never released, whichever path proved its owner gone and
// whatever the config file says; an unclassified finalizer is reported with the config entry that
// would classify it.
func TestConsequencesDecideAsClusterAdmin(t *testing.T) {
	objs := consequenceDebris(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(consequenceConfig), 0o600))

	rep, stderr, code := runReport(t, "--config", config, "--dry-run=none", "--min-terminating-age=0s", "--min-age=0s", "--max-actions=0",
		"--rules=orphaned-finalizers")
	require.Equal(t, 0, code, "%s%s", stderr, failures(rep))
	found := byObject(rep)
	of := func(name string) report.FindingResult {
		obj := objs[name]
		return found[obj.GetKind()+" "+strings.TrimPrefix(obj.GetNamespace()+"/"+obj.GetName(), "/")]
	}

	karpenter := of("nodeclaim")
	assert.Nil(t, karpenter.Action, "guards: never released")
	assert.Equal(t, "warning", string(karpenter.Severity))
	assert.Contains(t, karpenter.Reason, "operator gone, but not released: karpenter.sh/termination guards")
	assert.Contains(t, karpenter.Reason, "status.providerID", "it says what to do first")
	assert.True(t, slices.ContainsFunc(karpenter.Evidence, func(e string) bool {
		return strings.HasPrefix(e, "karpenter.sh/termination guards") && strings.Contains(e, "(catalog, checked against github.com/kubernetes-sigs/karpenter")
	}), "the catalog's entry, and its source: %v", karpenter.Evidence)

	backup := of("backup")
	assert.Nil(t, backup.Action, "guards, classified by the config file: never released")
	assert.Equal(t, "operator gone, but not released: "+gadgetBackup+" guards the gadget's backups in object storage: delete the gadget's backups from the bucket, then remove the finalizer", backup.Reason)
	assert.Contains(t, backup.Evidence, "CRD gadgets.consequence-test.io belongs to Helm release "+objs["backup"].GetNamespace()+"/gadget-operator (meta.helm.sh annotations)",
		"its owner was proven gone by the CRD")

	unknown := of("unknown")
	assert.Nil(t, unknown.Action, "unknown consequence: never released on the CRD's word alone")
	assert.Equal(t, "warning", string(unknown.Severity))
	assert.Equal(t, "operator gone, but what "+gadgetUnknown+" stands for is unknown: not released; if it cleans up only inside the cluster, say so in the config file: "+
		`finalizers: [{pattern: "`+gadgetUnknown+`", resources: ["gadgets.consequence-test.io"], consequence: local}]`, unknown.Reason)

	for _, name := range []string{"cache", "logging"} {
		f := of(name)
		if assert.NotNil(t, f.Action, name) {
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", name, why(f))
		}
	}

	for name, want := range map[string][]string{"nodeclaim": {"karpenter.sh/termination"}, "backup": {gadgetBackup}, "unknown": {gadgetUnknown}} {
		now := testCluster.Current(t, objs[name])
		if assert.NotNil(t, now, "%s stays", name) {
			assert.Equal(t, want, now.GetFinalizers(), name)
		}
	}
	assert.Nil(t, testCluster.Current(t, objs["cache"]), "released, and gone")

	// The entry the finding gave, added to the config file: released on the next run.
	line := `{pattern: "` + gadgetUnknown + `", resources: ["gadgets.consequence-test.io"], consequence: local}`
	require.NoError(t, os.WriteFile(config, []byte(consequenceConfig+"- "+line+"\n"), 0o600))
	rep, stderr, code = runReport(t, "--config", config, "--dry-run=none", "--min-terminating-age=0s", "--min-age=0s", "--rules=orphaned-finalizers")
	require.Equal(t, 0, code, "%s%s", stderr, failures(rep))
	assert.Nil(t, testCluster.Current(t, objs["unknown"]), "classified local: released")
	assert.NotNil(t, testCluster.Current(t, objs["nodeclaim"]), "still guarded")
}

// TestNamespaceStuckOnItsOwnFinalizer: a Namespace held by a finalizer in its own
// metadata.finalizers (external-secrets' ClusterExternalSecret leaves one per namespace it
// targets) is judged like any object: its reason names the finalizer, the finalizer's owner is
// judged by the catalog, and the namespace's root cause is that finding, not "unexplained".
func TestNamespaceStuckOnItsOwnFinalizer(t *testing.T) {
	ctx := context.Background()
	name := "ces-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	name = name[:min(len(name), 50)]
	finalizer := "externalsecrets.external-secrets.io/ces-team-secrets"
	created := create(t, "", `{apiVersion: v1, kind: Namespace, metadata: {name: `+name+`, finalizers: [`+finalizer+`]}}`)
	require.NoError(t, testCluster.Kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}))
	time.Sleep(2 * time.Second)

	rep := sweep(t, sweepOptions(), nil)
	var mine []report.FindingResult
	for _, f := range rep.Findings {
		if f.Object.Kind == "Namespace" && f.Object.Name == name {
			mine = append(mine, f)
		}
	}
	byRule := map[string]report.FindingResult{}
	for _, f := range mine {
		byRule[f.Rule] = f
	}
	stuck := byRule["stuck-terminating"]
	assert.Contains(t, stuck.Reason, "waiting on "+finalizer+" of its own", "its reason names the finalizer")
	assert.True(t, stuck.Symptom)
	released := byRule["orphaned-finalizers"]
	if assert.NotNil(t, released.Action, "external-secrets is in the catalog, and gone: %s", released.Reason) {
		assert.Equal(t, []string{finalizer}, released.Action.Finalizers)
		assert.Equal(t, report.OutcomeApplied, released.Outcome, why(released))
	}
	alone := &report.Report{Findings: mine}
	alone.CountStuckNamespaces(report.EveryNamespace)
	assert.Equal(t, map[string]int{"orphaned-finalizers": 1}, alone.Summary.StuckNamespaces, "its root cause is its own finalizer's finding")
	now := testCluster.Current(t, created[0])
	if now != nil {
		assert.NotContains(t, now.GetFinalizers(), finalizer)
	}
}
