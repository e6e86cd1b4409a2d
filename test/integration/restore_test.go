package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/restore"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// undoConfig opts in to every delete the undo tests need undone: OLM's RBAC and webhook
// configuration (F1), and a deleted Subscription's CSV, ClusterRole and CRD (F2).
const undoConfig = `
rules:
  olm-rbac: {delete: true}
  operator-leftovers:
    delete: [ClusterServiceVersion.operators.coreos.com, ClusterRole.rbac.authorization.k8s.io, CustomResourceDefinition.apiextensions.k8s.io]
`

// etcdClusters are custom resources of F2's CRD, which go with it.
const etcdClusters = `
apiVersion: NAMESPACE.test.operator-sweeper.io/v1
kind: EtcdCluster
metadata: {name: data-a, namespace: NAMESPACE, labels: {tier: gold}, annotations: {note: keep me}}
spec: {size: 3, version: 3.5.0}
---
apiVersion: NAMESPACE.test.operator-sweeper.io/v1
kind: EtcdCluster
metadata: {name: data-b, namespace: NAMESPACE}
spec: {size: 1, storage: {class: fast, size: 10Gi}}
`

// undoCase is what the undo tests sweep: each action type the sweeper takes, on objects of the
// field cases.
type undoCase struct {
	// objects are every object the sweep acts on, as they were before it.
	objects []*unstructured.Unstructured
	// instances are the custom resources of F2's CRD.
	instances []*unstructured.Unstructured
	crd       *unstructured.Unstructured
	actions   map[string]int // by rule/type of action
}

// seedUndoCase seeds F1 (RBAC and a webhook configuration deleted, a finalizer released), F3 (an
// InstallPlan's ownerReferences set) and F2 with custom resources of its CRD (CSV, ClusterRole and
// CRD deleted), each in a namespace of its own.
func seedUndoCase(t *testing.T) undoCase {
	t.Helper()
	ctx := context.Background()
	f1 := seeded(t)(testCluster.SeedF1(ctx, testCluster.NewNamespace(t, "f1")))
	f3 := seeded(t)(testCluster.SeedF3(ctx, testCluster.NewNamespace(t, "f3"), false))
	nsF2 := testCluster.NewNamespace(t, "f2")
	f2 := seeded(t)(testCluster.SeedF2(ctx, nsF2))
	var c undoCase
	c.crd = f2.Get("CustomResourceDefinition", "etcdclusters."+nsF2+".test.operator-sweeper.io")
	require.Eventually(t, func() bool {
		_, err := testCluster.Create(ctx, fill(etcdClusters, nsF2, ""))
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the CRD is served")
	gvr := schema.GroupVersionResource{Group: nsF2 + ".test.operator-sweeper.io", Version: "v1", Resource: "etcdclusters"}
	list, err := testCluster.Dynamic.Resource(gvr).Namespace(nsF2).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 2)
	for i := range list.Items {
		c.instances = append(c.instances, &list.Items[i])
	}
	for _, obj := range append(slices.Clone(f1.Objects), f3.Get("InstallPlan", "install-abcde"),
		f2.Get("ClusterServiceVersion", "etcdoperator.v0.9.4"), f2.Get("ClusterRole", nsF2+"-etcd"), c.crd) {
		c.objects = append(c.objects, testCluster.Current(t, obj))
	}
	c.actions = map[string]int{
		"olm-rbac/Delete":                       3, // F1's ClusterRoleBinding, ClusterRole, ValidatingWebhookConfiguration
		"orphaned-finalizers/RemoveFinalizers":  1, // F1's CSV
		"installplan-owners/SetOwnerReferences": 1,
		"operator-leftovers/Delete":             3, // F2's CSV, ClusterRole, CRD
	}
	time.Sleep(2 * time.Second) // nothing created in the second a sweep begins, or the one before, is acted on
	return c
}

// sweepToUndo sweeps with --dry-run=none and a backup directory; it returns the report and the
// file it was written to.
func sweepToUndo(t *testing.T, backupDir string) (*report.Report, string) {
	t.Helper()
	dir := t.TempDir()
	config, reportFile := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(config, []byte(undoConfig), 0o600))
	rep, stderr, code := runReport(t, "--config", config, "--dry-run=none", "--max-actions=0", "--min-age=0s", "--min-terminating-age=0s",
		"--rules=olm-rbac,orphaned-finalizers,installplan-owners,operator-leftovers", "--backup-dir", backupDir, "--report-file", reportFile)
	require.Equal(t, 0, code, stderr)
	return rep, reportFile
}

// restoreFrom runs restore --dry-run=none from a report or a backup directory.
func restoreFrom(t *testing.T, from string, args ...string) *report.Report {
	t.Helper()
	rep, stderr, code := runReport(t, append([]string{"restore", "--dry-run=none", "--from", from}, args...)...)
	require.Equal(t, 0, code, stderr)
	return rep
}

// comparable is an object as restore promises it back: all but status and what the server sets.
func comparable(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, field := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(out.Object, "metadata", field)
	}
	return out.Object
}

// TestRestoreUndoesEverySweepAction: each action type a sweep takes (RemoveFinalizers,
// SetOwnerReferences, Delete of RBAC, of a webhook configuration, of a CSV, of a CRD with custom
// resources) is undone by restore, from the report and from the backup directory, into an equal
// object; a second restore changes nothing.
func TestRestoreUndoesEverySweepAction(t *testing.T) {
	for _, from := range []string{"report", "backup-dir"} {
		t.Run(from, func(t *testing.T) {
			c := seedUndoCase(t)
			backupDir := t.TempDir()

			swept, reportFile := sweepToUndo(t, backupDir)

			applied := map[string]int{}
			for _, f := range swept.Findings {
				if f.Outcome != report.OutcomeApplied {
					continue
				}
				applied[f.Rule+"/"+f.Action.Type]++
				require.NotNil(t, f.Before, "%s: the pre-image is in the report", f.Object)
				assert.Equal(t, f.Object.Name, f.Before.Object.GetName())
				assert.Empty(t, f.Before.Object.GetUID(), "the pre-image leaves out what the server sets")
				assert.NotContains(t, f.Before.Object.Object, "status")
				if f.Object.Kind == "CustomResourceDefinition" {
					assert.Len(t, f.Before.Instances, 2, "the CRD's custom resources are kept with it")
					assert.Contains(t, f.Evidence, "its 2 custom resources, listed in full right before the delete, are kept in --backup-dir and in before.instances; they are deleted with it")
				}
			}
			assert.Equal(t, c.actions, applied, "every action type was taken")
			runs, err := filepath.Glob(filepath.Join(backupDir, "run-*", "*.json"))
			require.NoError(t, err)
			assert.Len(t, runs, 8, "one file per object written")
			for _, obj := range c.objects {
				switch obj.GetKind() {
				case "InstallPlan":
					assert.NotEqual(t, obj.GetOwnerReferences(), testCluster.Current(t, obj).GetOwnerReferences(), "the InstallPlan's owners are changed")
				case "CustomResourceDefinition":
				default:
					assert.Nil(t, testCluster.Current(t, obj), "%s %s is gone", obj.GetKind(), obj.GetName())
				}
			}
			require.Eventually(t, func() bool { return testCluster.Current(t, c.crd) == nil }, 30*time.Second, 200*time.Millisecond,
				"the CRD's deletion completes once its custom resources are deleted")

			source := map[string]string{"report": reportFile, "backup-dir": backupDir}[from]
			restored := restoreFrom(t, source)

			assert.Equal(t, 8, restored.Summary.Applied, "seven objects re-created, F3's InstallPlan changed back: %v", restored.Findings)
			for _, f := range restored.Findings {
				assert.Equal(t, restore.Rule, f.Rule)
				assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", f.Object, f.Error)
			}
			after := map[string]string{}
			for _, want := range c.objects {
				got := testCluster.Current(t, want)
				require.NotNil(t, got, "%s %s is back", want.GetKind(), want.GetName())
				assert.Equal(t, comparable(want), comparable(got), "%s %s is as it was", want.GetKind(), want.GetName())
				after[string(got.GetUID())] = got.GetResourceVersion()
			}
			for _, want := range c.instances {
				got := testCluster.Current(t, want)
				require.NotNil(t, got, "custom resource %s is back", want.GetName())
				assert.Equal(t, comparable(want), comparable(got))
				after[string(got.GetUID())] = got.GetResourceVersion()
			}

			again := restoreFrom(t, source)
			assert.Zero(t, again.Summary.Applied+again.Summary.Failed+again.Summary.Planned, "a second restore changes nothing")
			for _, f := range again.Findings {
				assert.Equal(t, report.ReasonResolved, f.SkipReason, "%s: %s", f.Object, f.Error)
			}
			for _, obj := range append(slices.Clone(c.objects), c.instances...) {
				got := testCluster.Current(t, obj)
				assert.Equal(t, after[string(got.GetUID())], got.GetResourceVersion(), "%s %s untouched", obj.GetKind(), obj.GetName())
			}
		})
	}
}

// TestRestoreOnlyAndDryRun: --only limits a restore to the objects it names; the default dry-run
// writes nothing; an --only that names nothing restored is bad input.
func TestRestoreOnlyAndDryRun(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	time.Sleep(2 * time.Second)
	backupDir := t.TempDir()
	_, reportFile := sweepToUndo(t, backupDir)
	role, binding := f1.Get("ClusterRole", ns+"-role"), f1.Get("ClusterRoleBinding", ns+"-binding")
	require.Nil(t, testCluster.Current(t, role))

	planned, stderr, code := runReport(t, "restore", "--from", reportFile, "--only", "clusterrole/"+ns+"-role")
	require.Equal(t, 0, code, stderr)
	require.Len(t, planned.Findings, 1)
	assert.Equal(t, report.OutcomePlanned, planned.Findings[0].Outcome)
	assert.Equal(t, "Create", planned.Findings[0].Action.Type)
	assert.Nil(t, testCluster.Current(t, role), "--dry-run=client, the default, writes nothing")

	restored := restoreFrom(t, reportFile, "--only", "clusterroles.rbac.authorization.k8s.io/"+ns+"-role")
	require.Len(t, restored.Findings, 1)
	assert.NotNil(t, testCluster.Current(t, role))
	assert.Nil(t, testCluster.Current(t, binding), "what --only leaves out stays as the sweep left it")

	_, stderr, code = runBinary(t, "restore", "--from", reportFile, "--only", "clusterrole/nothing-"+ns)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "error: restore --only clusterrole/nothing-"+ns+": no applied action on such an object to undo")
}

// TestRestoreConflict: an object re-created differently after the sweep is left alone.
func TestRestoreConflict(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	time.Sleep(2 * time.Second)
	_, reportFile := sweepToUndo(t, t.TempDir())
	role := f1.Get("ClusterRole", ns+"-role")
	mine := create(t, "", `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: `+ns+`-role}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
`)[0]

	rep, _, code := runReport(t, "restore", "--dry-run=none", "--from", reportFile, "--only", "clusterrole/"+ns+"-role")
	assert.Equal(t, 1, code, "a restore that leaves something undone fails")
	require.Len(t, rep.Findings, 1)
	assert.Equal(t, report.OutcomeFailed, rep.Findings[0].Outcome)
	assert.Equal(t, report.ReasonConflict, rep.Findings[0].FailReason)
	got := testCluster.Current(t, role)
	assert.Equal(t, mine.GetUID(), got.GetUID())
	assert.Equal(t, comparable(mine)["rules"], comparable(got)["rules"], "left alone")
}

// TestBackupDirReadOnly: when the pre-images cannot be kept, no write is sent. The sweeper runs as
// in its CronJob, as a user other than root, which a read-only directory stops.
func TestBackupDirReadOnly(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	before := map[string]string{}
	for _, obj := range f1.Objects {
		before[obj.GetKind()] = testCluster.Current(t, obj).GetResourceVersion()
	}
	time.Sleep(2 * time.Second)
	// Not t.TempDir(): its parent is for root only.
	dir, err := os.MkdirTemp("", "operator-sweeper-readonly-*")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	backupDir := filepath.Join(dir, "backup")
	require.NoError(t, os.Mkdir(backupDir, 0o555))
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(undoConfig), 0o644))

	stdout, stderr, code := runUnprivileged(t, dir, "--config", config, "--dry-run=none", "--max-actions=0", "--min-age=0s", "--min-terminating-age=0s",
		"--rules=olm-rbac,orphaned-finalizers", "--backup-dir", backupDir, "-o", "json", "--log-level=warn")
	assert.Equal(t, 1, code, "failed writes fail the run: %s", stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stderr)
	var outcomes []string
	for _, f := range rep.Findings {
		if f.Object.Name == ns+"-role" || f.Object.Name == ns+"-binding" || f.Object.Name == ns+"-webhook" {
			outcomes = append(outcomes, string(f.Outcome)+"/"+string(f.FailReason))
			assert.Contains(t, f.Error, "the write was not sent")
		}
	}
	assert.Equal(t, []string{"failed/backup", "failed/backup", "failed/backup"}, outcomes)
	csv := ruleFindings(&rep, "orphaned-finalizers", ns)
	require.Len(t, csv, 1)
	assert.Equal(t, report.ReasonDependency, csv[0].SkipReason, "the finalizer stays: the RBAC it stands for was not deleted")
	for _, obj := range f1.Objects {
		got := testCluster.Current(t, obj)
		require.NotNil(t, got, "%s is still there", obj.GetKind())
		assert.Equal(t, before[obj.GetKind()], got.GetResourceVersion(), "%s unchanged", obj.GetKind())
	}
	assert.Equal(t, []string{csvCleanup}, testCluster.Current(t, f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")).GetFinalizers())
}

// runUnprivileged runs the binary as the CronJob does, as user 65532, if the test runs as root
// (a read-only directory stops root from nothing); dir receives a copy of the binary and the
// kubeconfig that user can read, and must be open to it.
func runUnprivileged(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return runBinary(t, args...)
	}
	binary, kubeconfig := filepath.Join(dir, "operator-sweeper"), filepath.Join(dir, "kubeconfig")
	for src, dst := range map[string]string{string(sweeperBinary): binary, testCluster.Kubeconfig: kubeconfig} {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, data, 0o755))
	}
	return cluster.Binary(binary).RunIn(t, []string{"HOME=" + dir}, &syscall.Credential{Uid: 65532, Gid: 65532},
		append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// TestCRDWithCustomResourcesNeedsABackup: without --backup-dir, a CRD that has custom resources is
// not deleted (they would go with it, kept nowhere); one without any is.
func TestCRDWithCustomResourcesNeedsABackup(t *testing.T) {
	ctx := context.Background()
	withData, empty := testCluster.NewNamespace(t, "data"), testCluster.NewNamespace(t, "empty")
	seeded(t)(testCluster.SeedF2(ctx, withData))
	seeded(t)(testCluster.SeedF2(ctx, empty))
	require.Eventually(t, func() bool {
		_, err := testCluster.Create(ctx, fill(etcdClusters, withData, ""))
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the CRD is served")
	time.Sleep(2 * time.Second)
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(undoConfig), 0o600))

	rep, stderr, code := runReport(t, "--config", config, "--dry-run=none", "--max-actions=0", "--min-age=0s", "--rules=operator-leftovers")
	require.Equal(t, 0, code, stderr)

	crds := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		if f.Object.Kind == "CustomResourceDefinition" {
			crds[f.Object.Name] = f
		}
	}
	kept := crds["etcdclusters."+withData+".test.operator-sweeper.io"]
	assert.Equal(t, report.OutcomeSkipped, kept.Outcome)
	assert.Equal(t, report.ReasonBackup, kept.SkipReason)
	assert.Equal(t, "CustomResourceDefinition etcdclusters."+withData+".test.operator-sweeper.io has 2 custom resources, which are deleted with it; run with --backup-dir to keep them first", kept.Error)
	_, err := testCluster.Kube.Discovery().ServerResourcesForGroupVersion(withData + ".test.operator-sweeper.io/v1")
	assert.NoError(t, err, "the CRD is still served")

	gone := crds["etcdclusters."+empty+".test.operator-sweeper.io"]
	assert.Equal(t, report.OutcomeApplied, gone.Outcome, gone.Error)
	assert.Contains(t, gone.Evidence, "it has no custom resources (listed right before the delete)")
}

// TestRestoreReaddsAFinalizer: a finalizer removed from an object that is not being deleted is
// put back by server-side apply, under the field manager operator-sweeper-restore, leaving the
// other finalizers alone. (A sweep releases finalizers of Terminating objects, which the API
// server lets no one add finalizers to: this record is written by hand.)
func TestRestoreReaddsAFinalizer(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	cm := create(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: NAMESPACE, finalizers: [example.com/other], labels: {app: x}}
data: {k: v}
`)[0]
	before := cm.DeepCopy()
	before.SetFinalizers([]string{"example.com/other", "example.com/hold"})
	rep := report.Report{APIVersion: report.APIVersion, Kind: report.Kind, Findings: []report.FindingResult{{
		Rule:    "orphaned-finalizers",
		Object:  report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "held", UID: cm.GetUID()},
		Action:  &report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"example.com/hold"}},
		Outcome: report.OutcomeApplied,
		Before:  &report.PreImage{Resource: "configmaps", Object: before},
	}}}
	data, err := json.Marshal(rep)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))

	restored := restoreFrom(t, file)

	require.Len(t, restored.Findings, 1)
	f := restored.Findings[0]
	assert.Equal(t, report.OutcomeApplied, f.Outcome, f.Error)
	assert.Equal(t, &report.ActionSummary{Type: "AddFinalizers", Finalizers: []string{"example.com/hold"}}, f.Action)
	got := testCluster.Current(t, cm)
	assert.Equal(t, cm.GetUID(), got.GetUID(), "the same object")
	assert.ElementsMatch(t, []string{"example.com/other", "example.com/hold"}, got.GetFinalizers())
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, m := range got.GetManagedFields() {
		managers[m.Manager] = m.Operation
	}
	assert.Equal(t, metav1.ManagedFieldsOperationApply, managers[restore.FieldManager])

	again := restoreFrom(t, file)
	assert.Equal(t, report.ReasonResolved, again.Findings[0].SkipReason)
	assert.Equal(t, got.GetResourceVersion(), testCluster.Current(t, cm).GetResourceVersion(), "a second restore changes nothing")
}
