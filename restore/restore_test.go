package sweeper

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// restoreTestReport is a sweep's report of cluster with one finding per outcome.
func restoreTestReport(cluster string) *Report {
	opts := DefaultOptions()
	opts.Cluster = cluster
	// A zero start time survives a round trip as it is; a real one comes back in time.Local.
	r := newReport(time.Time{}, opts)
	r.Findings = append(r.Findings,
		backupRecordFor("applied-1", OutcomeApplied),
		backupRecordFor("failed", OutcomeFailed),
		backupRecordFor("skipped", OutcomeSkipped),
		backupRecordFor("planned", OutcomePlanned),
		FindingResult{Rule: "stuck-terminating", Severity: rules.SeverityInfo, Reason: "report only", Evidence: []string{},
			Object: ObjectSummary{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "ns"}},
		backupRecordFor("applied-2", OutcomeApplied),
	)
	return r
}

func indentedJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return append(data, '\n')
}

// jobLogs is what `kubectl logs` of a sweep's Job shows: JSON log lines around the report(s).
func jobLogs(t *testing.T, reports ...*Report) []byte {
	t.Helper()
	var b bytes.Buffer
	logLine := func(msg string) {
		fmt.Fprintf(&b, `{"time":"2026-11-23T12:00:00.123Z","level":"INFO","msg":%q,"rule":"orphaned-finalizers"}`+"\n", msg)
	}
	logLine("sweep started")
	for i, r := range reports {
		logLine(fmt.Sprintf("sweep %d done", i))
		b.Write(indentedJSON(t, r))
	}
	logLine("exiting")
	return b.Bytes()
}

func TestFindReport(t *testing.T) {
	want := restoreTestReport("prod")
	asYAML, err := yaml.Marshal(want)
	require.NoError(t, err)
	tests := []struct {
		name        string
		data        []byte
		wantCluster string // "" for no report found
	}{
		{name: "a whole JSON report", data: indentedJSON(t, want), wantCluster: "prod"},
		{name: "a whole YAML report", data: asYAML, wantCluster: "prod"},
		{name: "a Job's logs with one report", data: jobLogs(t, want), wantCluster: "prod"},
		{name: "a Job's logs with two reports: the last wins", data: jobLogs(t, restoreTestReport("first"), restoreTestReport("second")), wantCluster: "second"},
		{name: "a report on one line among log lines", data: append(append(jobLogs(t), mustJSON(t, want)...), '\n'), wantCluster: "prod"},
		{name: "log lines only", data: jobLogs(t)},
		{name: "another kind of object", data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)},
		{name: "plain text", data: []byte("Error from server (NotFound): pods \"sweep-abc\" not found\n")},
		{name: "nothing", data: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := findReport(tt.data)
			if tt.wantCluster == "" {
				assert.False(t, ok)
				assert.Nil(t, got)
				return
			}
			require.True(t, ok)
			want := restoreTestReport(tt.wantCluster)
			assert.Equal(t, want, got)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

func recordNames(records []FindingResult) []string {
	names := []string{}
	for _, rec := range records {
		names = append(names, rec.Object.Name)
	}
	return names
}

func TestLoadRestoreRecords(t *testing.T) {
	// A --backup-dir with two runs, written as the applier writes them, and what else may be
	// found on a volume.
	root := t.TempDir()
	older := &backupDir{root: root, cluster: "prod", startTime: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	newer := &backupDir{root: root, cluster: "prod", startTime: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	// The newer run is written first: the choice is by the name, not by when it was written.
	for _, rec := range []FindingResult{
		backupRecordFor("applied", OutcomeApplied),
		backupRecordFor("failed", OutcomeFailed),
		backupRecordFor("no-outcome", ""),
		backupRecordFor("skipped", OutcomeSkipped),
	} {
		_, err := newer.keep(rec, "")
		require.NoError(t, err)
	}
	olderFile, err := older.keep(backupRecordFor("older", OutcomeApplied), "")
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(root, "lost+found"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("backups of prod\n"), 0o600))

	file := func(name string, data []byte) func(t *testing.T) string {
		return func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(path, data, 0o600))
			return path
		}
	}
	path := func(p string) func(*testing.T) string { return func(*testing.T) string { return p } }
	tests := []struct {
		name      string
		from      func(t *testing.T) string
		wantNames []string
		wantErr   string // a part of the InputError's message; "" for none
	}{
		{name: "a backup dir: its newest run, applied and unknown outcomes only", from: path(root), wantNames: []string{"applied", "no-outcome"}},
		{name: "one run's directory", from: path(filepath.Dir(olderFile)), wantNames: []string{"older"}},
		{name: "an empty directory", from: func(t *testing.T) string { return t.TempDir() }, wantErr: "holds no backup"},
		{name: "a path that does not exist", from: path(filepath.Join(root, "missing")), wantErr: "restore --from"},
		{name: "a run's directory with a file that is not a record", from: func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "run-20261123T120000Z-1")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "0001-x.json"), indentedJSON(t, restoreTestReport("prod")), 0o600))
			return dir
		}, wantErr: "is not a SweepBackup"},
		{name: "a JSON report: applied findings only", from: file("report.json", indentedJSON(t, restoreTestReport("prod"))), wantNames: []string{"applied-1", "applied-2"}},
		{name: "a Job's logs", from: file("sweep.log", jobLogs(t, restoreTestReport("prod"))), wantNames: []string{"applied-1", "applied-2"}},
		{name: "a file that is not a report", from: file("kubeconfig", []byte("apiVersion: v1\nkind: Config\n")), wantErr: "holds no SweepReport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			records, err := loadRestoreRecords(tt.from(t))
			if tt.wantErr != "" {
				var inputErr *InputError
				require.ErrorAs(t, err, &inputErr, "bad --from is the user's to fix")
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantNames, recordNames(records))
			for _, rec := range records {
				assert.Equal(t, backupRecordFor(rec.Object.Name, rec.Outcome), rec, "a record is read back as it was kept")
			}
		})
	}
}

func TestLoadBackupRecordsNewestRun(t *testing.T) {
	// Two runs in the same second differ by their random suffix only; any one will do, but one
	// run, not a mix.
	root := t.TempDir()
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"a", "b"} {
		_, err := (&backupDir{root: root, startTime: start}).keep(backupRecordFor(name, OutcomeApplied), "")
		require.NoError(t, err)
	}
	records, err := loadBackupRecords(root)
	require.NoError(t, err)
	assert.Len(t, records, 1)
}

func TestParseOnly(t *testing.T) {
	tests := []struct {
		arg     string
		want    onlyType
		wantErr bool
	}{
		{arg: "clusterrole/x", want: onlyType{typ: "clusterrole", name: "x"}},
		{arg: "ClusterRole/Mixed", want: onlyType{typ: "clusterrole", name: "Mixed"}},
		{arg: "crd/etcdclusters.etcd.database.coreos.com", want: onlyType{typ: "crd", name: "etcdclusters.etcd.database.coreos.com"}},
		{arg: "clusterroles.rbac.authorization.k8s.io/system:foo", want: onlyType{typ: "clusterroles.rbac.authorization.k8s.io", name: "system:foo"}},
		{arg: "x", wantErr: true},
		{arg: "/x", wantErr: true},
		{arg: "a/", wantErr: true},
		{arg: "a/b/c", wantErr: true},
		{arg: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			got, err := parseOnly(tt.arg)
			if tt.wantErr {
				var inputErr *InputError
				require.ErrorAs(t, err, &inputErr)
				assert.ErrorContains(t, err, "TYPE/NAME")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// restoreObject is an object as read from the API server: with what the server sets, and the
// changes of mutate.
func restoreObject(apiVersion, kind, namespace, name string, uid types.UID, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata": map[string]any{
			"name":              name,
			"uid":               string(uid),
			"resourceVersion":   "100",
			"creationTimestamp": "2026-11-01T00:00:00Z",
			"managedFields":     []any{map[string]any{"manager": "operator", "operation": "Update"}},
			"labels":            map[string]any{"app": "etcd"},
		},
		"data":   map[string]any{"k": "v"},
		"status": map[string]any{"phase": "Active"},
	}}
	if namespace != "" {
		u.SetNamespace(namespace)
	}
	for _, m := range mutate {
		m(u)
	}
	return u
}

func withFinalizers(finalizers ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetFinalizers(finalizers) }
}

func withOwners(refs ...metav1.OwnerReference) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetOwnerReferences(refs) }
}

func withUID(uid types.UID) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { u.SetUID(uid) }
}

func beingDeleted(u *unstructured.Unstructured) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	u.SetDeletionTimestamp(&now)
}

// written is what a later write leaves: a new resourceVersion, which the comparison ignores.
func written(u *unstructured.Unstructured) { u.SetResourceVersion("200") }

func relabeled(u *unstructured.Unstructured) {
	u.SetLabels(map[string]string{"app": "etcd", "changed": "by someone"})
}

// restoreRecord is the record of action taken on obj, with obj's pre-image.
func restoreRecord(resource string, obj *unstructured.Unstructured, action ActionSummary) FindingResult {
	return FindingResult{
		Rule:     "orphaned-finalizers",
		Severity: rules.SeverityWarning,
		Object: ObjectSummary{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(),
			Name: obj.GetName(), UID: obj.GetUID()},
		Evidence: []string{},
		Action:   &action,
		Outcome:  OutcomeApplied,
		Before:   &PreImage{Resource: resource, Object: preImage(obj)},
	}
}

func TestRestoreOrder(t *testing.T) {
	owner := restoreObject("etcd.database.coreos.com/v1beta2", "EtcdCluster", "db", "main", "owner-uid", withFinalizers("etcd"))
	owned := restoreObject("v1", "ConfigMap", "db", "main-config", "owned-uid",
		withOwners(metav1.OwnerReference{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: "main", UID: "owner-uid"}))
	crd := restoreObject("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "etcdclusters.etcd.database.coreos.com", "crd-uid")
	plain1 := restoreObject("rbac.authorization.k8s.io/v1", "ClusterRole", "", "plain-1", "p1")
	plain2 := restoreObject("rbac.authorization.k8s.io/v1", "ClusterRole", "", "plain-2", "p2")
	remove := ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"etcd"}}
	del := ActionSummary{Type: "Delete"}
	noPreImage := FindingResult{Rule: "old", Object: ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: "db", Name: "no-pre-image"},
		Action: &del, Outcome: OutcomeApplied}

	records := []FindingResult{
		restoreRecord("clusterroles", plain1, del),
		restoreRecord("etcdclusters", owner, remove),
		restoreRecord("configmaps", owned, del),
		noPreImage,
		restoreRecord("customresourcedefinitions", crd, del),
		restoreRecord("clusterroles", plain2, del),
	}
	given := recordNames(records)
	got := restoreOrder(records)
	assert.Equal(t, []string{
		// A CRD first: its custom resources need it.
		"etcdclusters.etcd.database.coreos.com",
		// Then an owner of another record's object.
		"main",
		// Then the rest, the last action first.
		"plain-2", "no-pre-image", "main-config", "plain-1",
	}, recordNames(got))
	assert.Equal(t, given, recordNames(records), "the records given are left in their order")

	t.Run("a pre-image without its object", func(t *testing.T) {
		broken := FindingResult{Object: ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}, Action: &del, Outcome: OutcomeApplied,
			Before: &PreImage{Resource: "configmaps"}}
		assert.NotPanics(t, func() { restoreOrder([]FindingResult{broken}) })
	})
}

func TestPlanUndo(t *testing.T) {
	const uid = types.UID("original")
	cm := func(mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		return restoreObject("v1", "ConfigMap", "shop", "cfg", uid, mutate...)
	}
	oldOwner := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: "old-owner"}
	newOwner := metav1.OwnerReference{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: "etcd", UID: "new-owner"}

	// Delete: the object as it was before it was deleted.
	deleted := restoreRecord("configmaps", cm(), ActionSummary{Type: "Delete"})
	pod := restoreRecord("pods", restoreObject("v1", "Pod", "olm", "catalog-abc", uid), ActionSummary{Type: "Delete"})
	// RemoveFinalizers: one of two finalizers removed; the other keeps the object alive.
	finalized := restoreRecord("configmaps", cm(withFinalizers("keep.example.com", "gone.example.com")),
		ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"gone.example.com"}})
	allFinalizers := restoreRecord("configmaps", cm(withFinalizers("gone.example.com")),
		ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"gone.example.com"}})
	// SetOwnerReferences: a stale owner replaced by its successor.
	reowned := restoreRecord("configmaps", cm(withOwners(oldOwner)),
		ActionSummary{Type: "SetOwnerReferences", AddOwnerReferences: []metav1.OwnerReference{newOwner}, RemoveOwnerReferences: []types.UID{"old-owner"}})
	disowned := restoreRecord("configmaps", cm(withOwners(oldOwner)),
		ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"old-owner"}})
	// A controller reference (Controller is a *bool) kept, and a stale owner dropped.
	controller := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "etcd-operator", UID: "controller", Controller: new(true)}
	controlled := restoreRecord("configmaps", cm(withOwners(controller, oldOwner)),
		ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"old-owner"}})
	unknown := restoreRecord("configmaps", cm(), ActionSummary{Type: "Frobnicate"})

	tests := []struct {
		name         string
		rec          FindingResult
		current      *unstructured.Unstructured
		wantAction   rules.Action
		wantOutcome  Outcome
		wantReason   Reason
		wantEvidence bool
	}{
		// Delete.
		{name: "delete: gone, re-created", rec: deleted, wantAction: recreate{}},
		{name: "delete: a pod is never re-created", rec: pod, wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
		{name: "delete: a pod is never re-created, even if one of that name exists", rec: pod,
			current: restoreObject("v1", "Pod", "olm", "catalog-abc", "other"), wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
		{name: "delete: still being deleted", rec: deleted, current: cm(withFinalizers("x"), beingDeleted),
			wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
		{name: "delete: the object was not deleted", rec: deleted, current: cm(),
			wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "delete: re-created as it was", rec: deleted, current: cm(withUID("recreated"), written),
			wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "delete: another object of that name", rec: deleted, current: cm(withUID("recreated"), relabeled),
			wantOutcome: OutcomeFailed, wantReason: ReasonConflict},

		// RemoveFinalizers.
		{name: "finalizers: gone once released, re-created", rec: finalized, wantAction: recreate{}, wantEvidence: true},
		{name: "finalizers: back on the object", rec: finalized,
			current: cm(withFinalizers("keep.example.com", "gone.example.com"), written), wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "finalizers: back on the object, though it is being deleted", rec: finalized,
			current: cm(withFinalizers("gone.example.com", "keep.example.com"), beingDeleted), wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "finalizers: being deleted", rec: finalized,
			current: cm(withFinalizers("keep.example.com"), beingDeleted), wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
		{name: "finalizers: as the sweep left it, re-added", rec: finalized,
			current: cm(withFinalizers("keep.example.com"), written), wantAction: addFinalizers{[]string{"gone.example.com"}}},
		{name: "finalizers: all removed, as the sweep left it, re-added", rec: allFinalizers, current: cm(written),
			wantAction: addFinalizers{[]string{"gone.example.com"}}},
		{name: "finalizers: changed otherwise since", rec: finalized,
			current: cm(withFinalizers("keep.example.com"), relabeled), wantOutcome: OutcomeFailed, wantReason: ReasonConflict},
		{name: "finalizers: re-created as it was", rec: finalized,
			current: cm(withUID("recreated"), withFinalizers("keep.example.com", "gone.example.com")), wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "finalizers: another object of that name", rec: finalized,
			current: cm(withUID("recreated"), withFinalizers("keep.example.com")), wantOutcome: OutcomeFailed, wantReason: ReasonConflict},

		// SetOwnerReferences.
		{name: "owners: gone", rec: reowned, wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
		{name: "owners: as the sweep left them, put back", rec: reowned, current: cm(withOwners(newOwner), written),
			wantAction: setOwners{refs: []metav1.OwnerReference{oldOwner},
				change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}, Remove: []types.UID{"new-owner"}}}},
		{name: "owners: all removed, as the sweep left them, put back", rec: disowned, current: cm(written),
			wantAction: setOwners{refs: []metav1.OwnerReference{oldOwner}, change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}}}},
		{name: "owners: an unchanged controller reference is not reported as added", rec: controlled, current: cm(withOwners(controller), written),
			wantAction: setOwners{refs: []metav1.OwnerReference{controller, oldOwner}, change: rules.SetOwnerReferences{Add: []metav1.OwnerReference{oldOwner}}}},
		{name: "owners: as they were before", rec: reowned, current: cm(withOwners(oldOwner), written),
			wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "owners: changed otherwise since", rec: reowned, current: cm(withOwners(newOwner), relabeled),
			wantOutcome: OutcomeFailed, wantReason: ReasonConflict},
		{name: "owners: re-created as it was", rec: reowned, current: cm(withUID("recreated"), withOwners(oldOwner)),
			wantOutcome: OutcomeSkipped, wantReason: ReasonResolved},
		{name: "owners: another object of that name", rec: reowned, current: cm(withUID("recreated"), withOwners(newOwner)),
			wantOutcome: OutcomeFailed, wantReason: ReasonConflict},

		{name: "an action restore does not know", rec: unknown, current: cm(), wantOutcome: OutcomeSkipped, wantReason: ReasonNotRestorable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.rec.Before.Object.DeepCopy()
			got := planUndo(tt.rec, want, tt.current)
			assert.Equal(t, tt.wantAction, got.action)
			assert.Equal(t, tt.wantOutcome, got.result.Outcome)
			assert.Equal(t, tt.wantReason, got.result.Reason)
			if got.action == nil {
				assert.NotEmpty(t, got.result.Detail, "a skip or a failure says why")
			}
			assert.Equal(t, tt.wantEvidence, len(got.evidence) > 0, "evidence: %q", got.evidence)
			assert.Equal(t, tt.rec.Before.Object, want, "the pre-image is not modified")
		})
	}
}

func TestUndoOf(t *testing.T) {
	tests := []struct {
		action ActionSummary
		want   rules.Action
	}{
		{action: ActionSummary{Type: "Delete"}, want: recreate{}},
		{action: ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"a", "b"}}, want: addFinalizers{[]string{"a", "b"}}},
		{action: ActionSummary{Type: "SetOwnerReferences", RemoveOwnerReferences: []types.UID{"x"}}, want: setOwners{}},
	}
	for _, tt := range tests {
		t.Run(tt.action.Type, func(t *testing.T) {
			assert.Equal(t, tt.want, undoOf(FindingResult{Action: &tt.action}))
		})
	}
}
