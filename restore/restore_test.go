package restore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/input"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// restoreTestReport is a sweep's report of cluster with one finding per outcome.
func restoreTestReport(cluster string) *report.Report {
	// A zero start time survives a round trip as it is; a real one comes back in time.Local.
	r := report.New(time.Time{}, report.Metadata{Mode: report.DryRunClient, Cluster: cluster})
	r.Findings = append(r.Findings,
		reporttest.ReleaseRecord("applied-1", report.OutcomeApplied),
		reporttest.ReleaseRecord("failed", report.OutcomeFailed),
		reporttest.ReleaseRecord("skipped", report.OutcomeSkipped),
		reporttest.ReleaseRecord("planned", report.OutcomePlanned),
		report.FindingResult{Rule: "stuck-terminating", Severity: rules.SeverityInfo, Reason: "report only", Evidence: []string{},
			Object: report.ObjectSummary{APIVersion: "v1", Kind: "Namespace", Name: "shop", UID: "ns"}},
		reporttest.ReleaseRecord("applied-2", report.OutcomeApplied),
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
func jobLogs(t *testing.T, reports ...*report.Report) []byte {
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
			got, ok := report.Find(tt.data)
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

func recordNames(records []Record) []string {
	names := []string{}
	for _, rec := range records {
		names = append(names, rec.Object.Name)
	}
	return names
}

// keep keeps, as the applier does, the record of a RemoveFinalizers on ClusterRole name with
// outcome, and its pre-image, in d; it returns the finding kept.
func keep(t *testing.T, d *backup.Dir, name string, outcome report.Outcome) report.FindingResult {
	t.Helper()
	f := reporttest.ReleaseRecord(name, outcome)
	require.NoError(t, d.Body(context.Background(), name, f.Before, func(body *report.BodyWriter) error {
		return body.Write(reporttest.ReleasedRole(name))
	}))
	require.NoError(t, d.Record(context.Background(), report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind,
		Cluster: "prod", ClusterUID: "uid-prod", RunID: "run-1", Finding: f}, outcome != ""))
	return f
}

func TestLoadRestoreRecords(t *testing.T) {
	// A --backup-dir with two runs, written as the applier writes them, and what else may be
	// found on a volume.
	root := t.TempDir()
	older := &backup.Dir{Root: root, StartTime: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	newer := &backup.Dir{Root: root, StartTime: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	// The newer run is written first: the choice is by the name, not by when it was written.
	kept := map[string]report.FindingResult{}
	for name, outcome := range map[string]report.Outcome{"applied": report.OutcomeApplied, "failed": report.OutcomeFailed, "no-outcome": "", "skipped": report.OutcomeSkipped} {
		kept[name] = keep(t, newer, name, outcome)
	}
	kept["older"] = keep(t, older, "older", report.OutcomeApplied)
	olderDir, err := filepath.Glob(filepath.Join(root, "run-20261122T120000Z-*"))
	require.NoError(t, err)
	require.Len(t, olderDir, 1)
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
		wantErr   string // a part of the input.Error's message; "" for none
	}{
		{name: "a backup dir: its newest run, applied and unknown outcomes only", from: path(root), wantNames: []string{"applied", "no-outcome"}},
		{name: "one run's directory", from: path(olderDir[0]), wantNames: []string{"older"}},
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
			records, err := Load(Source{From: tt.from(t)})
			if tt.wantErr != "" {
				var inputErr *input.Error
				require.ErrorAs(t, err, &inputErr, "bad --from is the user's to fix")
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.ElementsMatch(t, tt.wantNames, recordNames(records))
			for _, rec := range records {
				if want, ok := kept[rec.Object.Name]; ok {
					assert.Equal(t, want, rec.FindingResult, "a record is read back as it was kept")
					assert.Equal(t, "uid-prod", rec.clusterUID)
				}
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
		keep(t, &backup.Dir{Root: root, StartTime: start}, name, report.OutcomeApplied)
	}
	records, err := Load(Source{From: root})
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
				var inputErr *input.Error
				require.ErrorAs(t, err, &inputErr)
				assert.ErrorContains(t, err, "TYPE/NAME")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRestoreOrder(t *testing.T) {
	owner := reporttest.Object("etcd.database.coreos.com/v1beta2", "EtcdCluster", "db", "main", "owner-uid", reporttest.WithFinalizers("etcd"))
	owned := reporttest.Object("v1", "ConfigMap", "db", "main-config", "owned-uid",
		reporttest.WithOwners(metav1.OwnerReference{APIVersion: "etcd.database.coreos.com/v1beta2", Kind: "EtcdCluster", Name: "main", UID: "owner-uid"}))
	crd := reporttest.Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "etcdclusters.etcd.database.coreos.com", "crd-uid")
	plain1 := reporttest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "plain-1", "p1")
	plain2 := reporttest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "plain-2", "p2")
	remove := report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"etcd"}}
	del := report.ActionSummary{Type: "Delete"}
	noPreImage := report.FindingResult{Rule: "old", Object: report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: "db", Name: "no-pre-image"},
		Action: &del, Outcome: report.OutcomeApplied}

	records := []Record{
		{FindingResult: reporttest.Record("clusterroles", plain1, del)},
		{FindingResult: reporttest.Record("etcdclusters", owner, remove)},
		{FindingResult: reporttest.Record("configmaps", owned, del)},
		{FindingResult: noPreImage},
		{FindingResult: reporttest.Record("customresourcedefinitions", crd, del)},
		{FindingResult: reporttest.Record("clusterroles", plain2, del)},
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
		broken := report.FindingResult{Object: report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}, Action: &del, Outcome: report.OutcomeApplied,
			Before: &report.PreImage{Resource: "configmaps"}}
		assert.NotPanics(t, func() { restoreOrder([]Record{{FindingResult: broken}}) })
	})
}
