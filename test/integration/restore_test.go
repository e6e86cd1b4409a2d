package integration

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/restore"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	clocktesting "k8s.io/utils/clock/testing"
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

// sweepToUndo sweeps with --dry-run=none, keeping the pre-images in Secrets of the sweeper's
// namespace or, if backupDir is set, in files there; it returns the report and the file it was
// written to.
func sweepToUndo(t *testing.T, backupDir string) (*report.Report, string) {
	t.Helper()
	dir := t.TempDir()
	config, reportFile := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(config, []byte(undoConfig), 0o600))
	args := []string{"--config", config, "--dry-run=none", "--max-actions=0", "--min-age=0s", "--min-terminating-age=0s",
		"--rules=olm-rbac,orphaned-finalizers,installplan-owners,operator-leftovers", "--report-file", reportFile}
	if backupDir != "" {
		args = append(args, "--backup-dir", backupDir)
	}
	rep, stderr, code := runReport(t, args...)
	require.Equal(t, 0, code, "%s%s", stderr, failures(rep))
	return rep, reportFile
}

// failures are the failed findings of a report, for a test's message.
func failures(rep *report.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		if f.Outcome == report.OutcomeFailed {
			fmt.Fprintf(&b, "%s %s: %s\n", f.Rule, f.Object, f.Error)
		}
	}
	return b.String()
}

// restoreFrom runs restore --dry-run=none with the arguments that say what to restore.
func restoreFrom(t *testing.T, args ...string) *report.Report {
	t.Helper()
	rep, stderr, code := runReport(t, append([]string{"restore", "--dry-run=none"}, args...)...)
	require.Equal(t, 0, code, "%s%s", stderr, failures(rep))
	return rep
}

// comparable is an object as restore promises it back: all but status and what the server sets.
func comparable(obj *unstructured.Unstructured) map[string]any {
	return report.Image(obj).Object
}

// kubeSystemUID is the test cluster's identity, as the sweeper reads it.
func kubeSystemUID(t *testing.T) string {
	t.Helper()
	ns, err := testCluster.Kube.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	require.NoError(t, err)
	return string(ns.UID)
}

// TestRestoreUndoesEverySweepAction: each action type a sweep takes (RemoveFinalizers,
// SetOwnerReferences, Delete of RBAC, of a webhook configuration, of a CSV, of a CRD with custom
// resources) is undone by restore into an equal object, from the report or the run's ID (the
// pre-images in Secrets of the sweeper's namespace, the default) and from --backup-dir; the
// report names each pre-image, signed, and holds none of its body; a second restore changes
// nothing. An ownerReference whose owner is gone is not put back.
func TestRestoreUndoesEverySweepAction(t *testing.T) {
	for _, from := range []string{"report", "run", "backup-dir"} {
		t.Run(from, func(t *testing.T) {
			c := seedUndoCase(t)
			backupDir := ""
			if from == "backup-dir" {
				backupDir = t.TempDir()
			}

			swept, reportFile := sweepToUndo(t, backupDir)

			require.NotEmpty(t, swept.Metadata.RunID)
			assert.Equal(t, kubeSystemUID(t), swept.Metadata.ClusterUID, "the report names its cluster")
			kept := "secret:" + cluster.SweeperNamespace + "/" + backup.SecretPrefix + swept.Metadata.RunID + "-"
			if backupDir != "" {
				kept = "file:"
			}
			applied := map[string]int{}
			for _, f := range swept.Findings {
				if f.Outcome != report.OutcomeApplied {
					continue
				}
				applied[f.Rule+"/"+f.Action.Type]++
				require.NotNil(t, f.Before, "%s: the report says where its pre-image is", f.Object)
				assert.True(t, strings.HasPrefix(f.Before.Kept, kept), "%s: kept in %s", f.Object, f.Before.Kept)
				assert.Len(t, f.Before.SHA256, 64)
				assert.NotEmpty(t, f.Signature, "%s: signed", f.Object)
				if f.Object.Kind == "CustomResourceDefinition" {
					assert.Equal(t, 2, f.Before.CustomResources, "the CRD's custom resources are kept with it")
					assert.Contains(t, f.Evidence, "its 2 custom resources, kept with its pre-image and counted again right before the delete, are deleted with it")
				}
			}
			assert.Equal(t, c.actions, applied, "every action type was taken")
			data, err := os.ReadFile(reportFile)
			require.NoError(t, err)
			for _, body := range []string{"keep me", "fast", "openAPIV3Schema"} {
				assert.NotContains(t, string(data), body, "no body is in the report")
			}
			if backupDir != "" {
				records, err := filepath.Glob(filepath.Join(backupDir, backup.RunDirPrefix+"*", "*.json"))
				require.NoError(t, err)
				assert.Len(t, records, 8, "one record per object written")
			} else {
				records, err := backup.LoadRun(context.Background(), backupClient(t), cluster.SweeperNamespace, swept.Metadata.RunID)
				require.NoError(t, err)
				assert.Len(t, records, 8, "one record per object written, in Secrets labelled with the run")
			}
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

			source := map[string][]string{"report": {"--from", reportFile}, "run": {"--run", swept.Metadata.RunID},
				"backup-dir": {"--from", backupDir}}[from]
			restored := restoreFrom(t, source...)

			assert.Equal(t, 8, restored.Summary.Applied, "seven objects re-created, F3's InstallPlan changed back: %v", restored.Findings)
			for _, f := range restored.Findings {
				assert.Equal(t, restore.Rule, f.Rule)
				assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", f.Object, f.Error)
			}
			after := map[string]string{}
			for _, want := range c.objects {
				got := testCluster.Current(t, want)
				require.NotNil(t, got, "%s %s is back", want.GetKind(), want.GetName())
				if want.GetKind() == "InstallPlan" {
					// Its first owner, the Subscription deleted and re-created, is gone: a reference
					// to it would have the garbage collector delete the plan.
					want = want.DeepCopy()
					want.SetOwnerReferences(want.GetOwnerReferences()[1:])
				}
				assert.Equal(t, comparable(want), comparable(got), "%s %s is as it was", want.GetKind(), want.GetName())
				after[string(got.GetUID())] = got.GetResourceVersion()
			}
			for _, want := range c.instances {
				got := testCluster.Current(t, want)
				require.NotNil(t, got, "custom resource %s is back", want.GetName())
				assert.Equal(t, comparable(want), comparable(got))
				after[string(got.GetUID())] = got.GetResourceVersion()
			}

			again := restoreFrom(t, source...)
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
// writes nothing, and says what each object it would create grants; an --only that names nothing
// restored is bad input.
func TestRestoreOnlyAndDryRun(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	time.Sleep(2 * time.Second)
	_, reportFile := sweepToUndo(t, "")
	role, binding := f1.Get("ClusterRole", ns+"-role"), f1.Get("ClusterRoleBinding", ns+"-binding")
	require.Nil(t, testCluster.Current(t, role))

	planned, stderr, code := runReport(t, "restore", "--from", reportFile, "--only", "clusterrole/"+ns+"-role", "--only", "clusterrolebinding/"+ns+"-binding")
	require.Equal(t, 0, code, stderr)
	require.Len(t, planned.Findings, 2)
	grants := map[string][]string{}
	for _, f := range planned.Findings {
		assert.Equal(t, report.OutcomePlanned, f.Outcome)
		assert.Equal(t, "Create", f.Action.Type)
		grants[f.Object.Kind] = f.Evidence
	}
	assert.Contains(t, grants["ClusterRole"], "it grants: [get list watch] on [etcdclusters] of API groups [etcd.database.coreos.com]")
	assert.Contains(t, grants["ClusterRoleBinding"], "it binds ClusterRole "+ns+"-role to ServiceAccount "+ns+"/etcd-operator")
	assert.Nil(t, testCluster.Current(t, role), "--dry-run=client, the default, writes nothing")

	restored := restoreFrom(t, "--from", reportFile, "--only", "clusterroles.rbac.authorization.k8s.io/"+ns+"-role")
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
	_, reportFile := sweepToUndo(t, "")
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

// recordFile finds the record of obj in a run's backup directory.
func recordFile(t *testing.T, dir string, obj *unstructured.Unstructured) (string, report.BackupRecord) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var rec report.BackupRecord
		require.NoError(t, json.Unmarshal(data, &rec))
		if o := rec.Finding.Object; o.Kind == obj.GetKind() && o.Namespace == obj.GetNamespace() && o.Name == obj.GetName() {
			return file, rec
		}
	}
	t.Fatalf("no record of %s %s in %s", obj.GetKind(), obj.GetName(), dir)
	return "", report.BackupRecord{}
}

// editRecord edits the record of obj in a run's backup directory, as someone with access to the
// files might.
func editRecord(t *testing.T, dir string, obj *unstructured.Unstructured, edit func(rec *report.BackupRecord)) {
	t.Helper()
	file, rec := recordFile(t, dir, obj)
	edit(&rec)
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o600))
}

// editBody replaces the body of obj's pre-image in a run's backup directory with body, and
// returns its SHA-256.
func editBody(t *testing.T, dir string, obj, body *unstructured.Unstructured) string {
	t.Helper()
	_, rec := recordFile(t, dir, obj)
	f, err := os.Create(filepath.Join(dir, strings.TrimPrefix(rec.Finding.Before.Kept, "file:")))
	require.NoError(t, err)
	w := report.NewBodyWriter(f)
	require.NoError(t, w.Write(body))
	require.NoError(t, errors.Join(w.Close(), f.Close()))
	return w.Sum()
}

// TestRestoreRefusesWhatItCannotTrust: restore runs with an admin's credentials, so a record it
// cannot trust is refused, with its reason, and the others (another F1's) are restored: a binding whose body was
// edited to bind cluster-admin (its digest updated too), a record renamed to another object, one
// whose signature was removed, a body changed behind its digest, an ownerReference added to the
// record of an InstallPlan.
func TestRestoreRefusesWhatItCannotTrust(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t, "f1")
	f1 := seeded(t)(testCluster.SeedF1(ctx, ns))
	f3 := seeded(t)(testCluster.SeedF3(ctx, testCluster.NewNamespace(t, "f3"), false))
	clean := testCluster.NewNamespace(t, "clean")
	untouched := seeded(t)(testCluster.SeedF1(ctx, clean))
	time.Sleep(2 * time.Second)
	backupDir := t.TempDir()
	sweepToUndo(t, backupDir)
	runs, err := filepath.Glob(filepath.Join(backupDir, backup.RunDirPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	run := runs[0]

	binding := f1.Get("ClusterRoleBinding", ns+"-binding")
	toAdmin := report.Image(binding)
	require.NoError(t, unstructured.SetNestedField(toAdmin.Object, "cluster-admin", "roleRef", "name"))
	sum := editBody(t, run, binding, toAdmin)
	editRecord(t, run, binding, func(rec *report.BackupRecord) { rec.Finding.Before.SHA256 = sum })
	role := f1.Get("ClusterRole", ns+"-role")
	editRecord(t, run, role, func(rec *report.BackupRecord) { rec.Finding.Object.Name = "system:aggregate-to-admin" })
	webhook := f1.Get("ValidatingWebhookConfiguration", ns+"-webhook")
	editRecord(t, run, webhook, func(rec *report.BackupRecord) { rec.Finding.Signature = "" })
	csv := f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")
	changed := report.Image(csv)
	changed.SetAnnotations(map[string]string{"changed": "yes"})
	editBody(t, run, csv, changed)
	plan := f3.Get("InstallPlan", "install-abcde")
	editRecord(t, run, plan, func(rec *report.BackupRecord) {
		rec.Finding.Before.OwnerReferences = append(rec.Finding.Before.OwnerReferences,
			metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: binding.GetUID()})
	})

	rep, _, code := runReport(t, "restore", "--dry-run=none", "--from", run)

	assert.Equal(t, 0, code, "refusals are findings, skipped, not failures")
	refused := map[string]string{}
	for _, f := range rep.Findings {
		if f.SkipReason == report.ReasonRefused {
			refused[f.Object.Kind] = f.Error
		}
	}
	assert.Len(t, refused, 5, "%v", refused)
	assert.Contains(t, refused["ClusterRoleBinding"], "signature", "the digest is signed")
	assert.Contains(t, refused["ClusterRole"], "signature")
	assert.Contains(t, refused["ValidatingWebhookConfiguration"], "no signature")
	assert.Contains(t, refused["InstallPlan"], "signature")
	assert.Contains(t, refused["ClusterServiceVersion"], "the pre-image's body was changed")
	assert.Nil(t, testCluster.Current(t, binding), "no binding to cluster-admin")
	assert.Nil(t, testCluster.Current(t, role))
	assert.Nil(t, testCluster.Current(t, webhook))
	assert.Nil(t, testCluster.Current(t, csv))
	assert.Len(t, testCluster.Current(t, plan).GetOwnerReferences(), 2, "as the sweep left it: the new Subscription and the ConfigMap")
	for _, obj := range untouched.Objects {
		assert.NotNil(t, testCluster.Current(t, obj), "a record refused stops no other: %s %s is restored", obj.GetKind(), obj.GetName())
	}
}

// TestRestoreRefusesAnotherClustersReport: a report restored with another cluster's context is
// refused, naming both clusters, and creates nothing there.
func TestRestoreRefusesAnotherClustersReport(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	f1 := seeded(t)(testCluster.SeedF1(context.Background(), ns))
	time.Sleep(2 * time.Second)
	swept, reportFile := sweepToUndo(t, "")
	other, err := cluster.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Stop() })
	otherUID, err := other.Kube.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{})
	require.NoError(t, err)

	rep, stderr, code := sweeperBinary.RunReport(t, "restore", "--dry-run=none", "--from", reportFile, "--kubeconfig", other.Kubeconfig, "-o", "json", "--log-level=warn")

	require.Equal(t, 0, code, stderr)
	require.NotEmpty(t, rep.Findings)
	for _, f := range rep.Findings {
		assert.Equal(t, report.ReasonRefused, f.SkipReason, "%s", f.Object)
		assert.Contains(t, f.Error, swept.Metadata.ClusterUID)
		assert.Contains(t, f.Error, string(otherUID.UID))
	}
	role := f1.Get("ClusterRole", ns+"-role")
	got, err := other.Dynamic.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).
		Get(context.Background(), role.GetName(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing created in the other cluster: %v", got)
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

// TestCRDCustomResourcesAreKeptInParts: without --backup-dir, a CRD's custom resources are
// streamed into Secrets of the sweeper's namespace, as many as the 1 MiB limit of a Secret makes
// it take, before the CRD is deleted with them; restore brings them all back.
func TestCRDCustomResourcesAreKeptInParts(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	f2 := seeded(t)(testCluster.SeedF2(ctx, ns))
	crd := f2.Get("CustomResourceDefinition", "etcdclusters."+ns+".test.operator-sweeper.io")
	gvr := schema.GroupVersionResource{Group: ns + ".test.operator-sweeper.io", Version: "v1", Resource: "etcdclusters"}
	var instances []*unstructured.Unstructured
	for i := range 4 {
		// Random data does not compress: four of them take more than a Secret holds.
		blob := make([]byte, 300<<10)
		_, _ = rand.Read(blob)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "EtcdCluster",
			"metadata": map[string]any{"name": fmt.Sprintf("data-%d", i), "namespace": ns},
			"spec":     map[string]any{"blob": base64.StdEncoding.EncodeToString(blob)},
		}}
		require.Eventually(t, func() bool {
			created, err := testCluster.Dynamic.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
			if err == nil {
				instances = append(instances, created)
			}
			return err == nil
		}, 30*time.Second, 200*time.Millisecond, "the CRD is served")
	}
	time.Sleep(2 * time.Second)
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(undoConfig), 0o600))

	rep, stderr, code := runReport(t, "--config", config, "--dry-run=none", "--max-actions=0", "--min-age=0s", "--rules=operator-leftovers")

	require.Equal(t, 0, code, stderr)
	var deleted *report.FindingResult
	for i, f := range rep.Findings {
		if f.Object.Kind == "CustomResourceDefinition" && f.Object.Name == crd.GetName() {
			deleted = &rep.Findings[i]
		}
	}
	require.NotNil(t, deleted)
	require.Equal(t, report.OutcomeApplied, deleted.Outcome, deleted.Error)
	assert.Equal(t, 4, deleted.Before.CustomResources)
	assert.Greater(t, deleted.Before.Parts, 1, "the body is split under the Secrets' size limit")
	require.Eventually(t, func() bool { return testCluster.Current(t, crd) == nil }, 30*time.Second, 200*time.Millisecond,
		"the CRD's deletion completes once its custom resources are deleted")

	restored := restoreFrom(t, "--run", rep.Metadata.RunID, "--only", "crd/"+crd.GetName())

	require.Len(t, restored.Findings, 1)
	assert.Equal(t, report.OutcomeApplied, restored.Findings[0].Outcome, restored.Findings[0].Error)
	for _, want := range instances {
		got := testCluster.Current(t, want)
		require.NotNil(t, got, "custom resource %s is back", want.GetName())
		assert.Equal(t, comparable(want), comparable(got))
	}
}

// TestRestoreReaddsAFinalizer: a finalizer removed from an object that is not being deleted is
// put back by server-side apply, under the field manager operator-sweeper-restore, leaving the
// other finalizers alone. (A sweep releases finalizers of Terminating objects, which the API
// server lets no one add finalizers to: this record is kept and signed here as a sweep would.)
func TestRestoreReaddsAFinalizer(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	cm := create(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: NAMESPACE, finalizers: [example.com/other], labels: {app: x}}
data: {k: v}
`)[0]
	before := cm.DeepCopy()
	before.SetFinalizers([]string{"example.com/other", "example.com/hold"})
	start := time.Now()
	run := report.Metadata{ClusterUID: kubeSystemUID(t), RunID: backup.NewRunID(start)}
	f := report.FindingResult{
		Rule:    "orphaned-finalizers",
		Object:  report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "held", UID: cm.GetUID()},
		Action:  &report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"example.com/hold"}},
		Outcome: report.OutcomeApplied,
		Before:  &report.PreImage{Resource: "configmaps", Finalizers: before.GetFinalizers()},
	}
	dir := t.TempDir()
	store := &backup.Dir{Root: dir, StartTime: start}
	require.NoError(t, store.Body(ctx, "configmap-held", f.Before, func(w *report.BodyWriter) error { return w.Write(before) }))
	key, err := backup.Key(ctx, testCluster.Dynamic, cluster.SweeperNamespace, true)
	require.NoError(t, err)
	f.Signature, err = backup.Sign(key, f, run.ClusterUID, run.RunID)
	require.NoError(t, err)
	require.NoError(t, store.Record(ctx, report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind,
		ClusterUID: run.ClusterUID, RunID: run.RunID, Finding: f}, true))

	restored := restoreFrom(t, "--from", dir)

	require.Len(t, restored.Findings, 1)
	got := restored.Findings[0]
	assert.Equal(t, report.OutcomeApplied, got.Outcome, got.Error)
	assert.Equal(t, &report.ActionSummary{Type: "AddFinalizers", Finalizers: []string{"example.com/hold"}}, got.Action)
	now := testCluster.Current(t, cm)
	assert.Equal(t, cm.GetUID(), now.GetUID(), "the same object")
	assert.ElementsMatch(t, []string{"example.com/other", "example.com/hold"}, now.GetFinalizers())
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, m := range now.GetManagedFields() {
		managers[m.Manager] = m.Operation
	}
	assert.Equal(t, metav1.ManagedFieldsOperationApply, managers[restore.FieldManager])

	again := restoreFrom(t, "--from", dir)
	assert.Equal(t, report.ReasonResolved, again.Findings[0].SkipReason)
	assert.Equal(t, now.GetResourceVersion(), testCluster.Current(t, cm).GetResourceVersion(), "a second restore changes nothing")
}

// TestCRDDeleteStopsWhenItsCustomResourcesChange: a CRD's delete takes its custom resources with
// it, kept with its pre-image first. One of them deleted and another created, or one updated,
// between the keeping and the delete — the count is the same — and the delete is not sent: what
// would go with the CRD is not what was kept (stale).
func TestCRDDeleteStopsWhenItsCustomResourcesChange(t *testing.T) {
	for _, change := range []string{"swapped", "updated"} {
		t.Run(change, func(t *testing.T) {
			ctx := context.Background()
			ns := testCluster.NewNamespace(t)
			f2 := seeded(t)(testCluster.SeedF2(ctx, ns))
			crd := f2.Get("CustomResourceDefinition", "etcdclusters."+ns+".test.operator-sweeper.io")
			require.NotNil(t, crd)
			require.Eventually(t, func() bool {
				_, err := testCluster.Create(ctx, fill(etcdClusters, ns, ""))
				return err == nil
			}, 30*time.Second, 200*time.Millisecond, "the CRD is served")
			gvr := schema.GroupVersionResource{Group: ns + ".test.operator-sweeper.io", Version: "v1", Resource: "etcdclusters"}
			client := testCluster.Dynamic.Resource(gvr).Namespace(ns)
			cluster.AgeDebris()

			opts := sweepOptions()
			opts.Rules = []string{rules.OperatorLeftoversName}
			opts.MinAge = metav1.Duration{}
			opts.RuleConfigs = map[string]rules.RuleConfig{rules.OperatorLeftoversName: {
				Args: rules.OperatorLeftoversArgs{Delete: []string{"ClusterServiceVersion.operators.coreos.com", "CustomResourceDefinition.apiextensions.k8s.io"}}}}
			rec := &recorder{}
			// The custom resources are listed by the walk, then as they are kept with the CRD's
			// pre-image, then right before its delete: the change comes before that last list.
			list := "/apis/" + gvr.Group + "/v1/etcdclusters$"
			rec.raceBefore("GET", list, func() {})
			rec.raceBefore("GET", list, func() {})
			rec.raceBefore("GET", list, func() {
				switch change {
				case "swapped":
					require.NoError(t, client.Delete(ctx, "data-b", metav1.DeleteOptions{}))
					_, err := testCluster.Create(ctx, fill(`{apiVersion: NAMESPACE.test.operator-sweeper.io/v1, kind: EtcdCluster, metadata: {name: data-c, namespace: NAMESPACE}}`, ns, ""))
					require.NoError(t, err)
				case "updated":
					_, err := client.Patch(ctx, "data-a", types.MergePatchType, []byte(`{"spec":{"size":5}}`), metav1.PatchOptions{})
					require.NoError(t, err)
				}
			})
			ruleSet, err := opts.RuleSet()
			require.NoError(t, err)
			rep := newEngine(t, opts, rec, clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour)), ruleSet...).Run(context.Background())

			f := findingAbout(t, rep, rules.OperatorLeftoversName, crd)
			assert.Equal(t, report.OutcomeSkipped, f.Outcome, "%s: %s", change, why(f))
			assert.Equal(t, report.ReasonStale, f.SkipReason, change)
			assert.Contains(t, f.Error, "its custom resources changed while they were kept (2, one replaced or updated since")
			assert.Empty(t, rec.matching("DELETE", "/customresourcedefinitions/"), "the delete was not sent")
			assert.NotNil(t, testCluster.Current(t, crd), "the CRD stays")
		})
	}
}

// backupClient reads the sweeper's pre-image Secrets on the test cluster, as the sweeper does.
func backupClient(t *testing.T) backup.Client {
	t.Helper()
	meta, err := metadata.NewForConfig(testCluster.Config)
	require.NoError(t, err)
	return backup.Client{Dynamic: testCluster.Dynamic, Metadata: meta}
}
