package sweeper

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
)

func TestPreImage(t *testing.T) {
	// What the API server sets on every object: preImage must drop all of it, and only it.
	serverSet := func() map[string]any {
		return map[string]any{
			"uid":                        "6f1c0b9e-0000-4000-8000-000000000001",
			"resourceVersion":            "4242",
			"generation":                 int64(3),
			"creationTimestamp":          "2026-11-23T12:00:00Z",
			"deletionTimestamp":          "2026-11-23T13:00:00Z",
			"deletionGracePeriodSeconds": int64(0),
			"selfLink":                   "/apis/x",
			"managedFields":              []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		}
	}
	with := func(fields map[string]any, more map[string]any) map[string]any {
		for k, v := range more {
			fields[k] = v
		}
		return fields
	}
	kept := func() map[string]any {
		return map[string]any{
			"name":            "system:foo",
			"labels":          map[string]any{"app": "foo"},
			"annotations":     map[string]any{"example.com/note": "kept"},
			"finalizers":      []any{"example.com/cleanup"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "o1"}},
		}
	}
	rbacRules := func() []any {
		return []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get", "list"}}}
	}
	tests := []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{
			name: "a ClusterRole keeps its rules and metadata but for what the server sets",
			in: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata":        with(kept(), serverSet()),
				"rules":           rbacRules(),
				"aggregationRule": map[string]any{"clusterRoleSelectors": []any{}},
			},
			want: map[string]any{
				"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata":        kept(),
				"rules":           rbacRules(),
				"aggregationRule": map[string]any{"clusterRoleSelectors": []any{}},
			},
		},
		{
			name: "a namespaced object loses its status and keeps its spec",
			in: map[string]any{
				"apiVersion": "acme.io/v1", "kind": "Widget",
				"metadata": with(map[string]any{"name": "w", "namespace": "shop"}, serverSet()),
				"spec":     map[string]any{"replicas": int64(2)},
				"status":   map[string]any{"phase": "Ready"},
			},
			want: map[string]any{
				"apiVersion": "acme.io/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w", "namespace": "shop"},
				"spec":     map[string]any{"replicas": int64(2)},
			},
		},
		{
			name: "an object with nothing to strip is unchanged",
			in: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "shop"},
				"data":     map[string]any{"k": "v"},
			},
			want: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "c", "namespace": "shop"},
				"data":     map[string]any{"k": "v"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &unstructured.Unstructured{Object: tt.in}
			original := in.DeepCopy()
			got := report.Image(in)
			assert.Equal(t, tt.want, got.Object)
			assert.Equal(t, original, in, "the object read must not be modified: the caller still uses it")
		})
	}
}

func readBackupRecord(t *testing.T, file string) report.BackupRecord {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var rec report.BackupRecord
	require.NoError(t, json.Unmarshal(data, &rec))
	return rec
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestBackupDirKeep(t *testing.T) {
	// A start time outside UTC: the directory is named by its UTC time all the same.
	start := time.Date(2026, 11, 23, 13, 4, 5, 0, time.FixedZone("CET", 3600))
	root := t.TempDir()
	b := &BackupDir{Root: root, Cluster: "prod", StartTime: start}

	first := reporttest.ReleaseRecord("system:foo", "")
	file, err := b.Keep(first, "")
	require.NoError(t, err)

	runs := dirNames(t, root)
	require.Len(t, runs, 1, "one directory per run")
	assert.Regexp(t, `^run-20261123T120405Z-.+$`, runs[0])
	assert.Equal(t, filepath.Join(root, runs[0], "000001-"+fileSafe(first.Object)+".json"), file)

	rec := readBackupRecord(t, file)
	assert.Equal(t, report.BackupAPIVersion, rec.APIVersion)
	assert.Equal(t, report.BackupKind, rec.Kind)
	assert.Equal(t, "prod", rec.Cluster)
	assert.True(t, rec.StartTime.Time.Equal(start), "startTime %s, want %s", rec.StartTime, start)
	assert.Equal(t, first, rec.Finding)

	t.Run("the same file again replaces it", func(t *testing.T) {
		second := reporttest.ReleaseRecord("system:foo", report.OutcomeApplied)
		again, err := b.Keep(second, file)
		require.NoError(t, err)
		assert.Equal(t, file, again)
		assert.Equal(t, []string{filepath.Base(file)}, dirNames(t, filepath.Dir(file)), "one file, and no temporary file left")
		assert.Equal(t, second, readBackupRecord(t, file).Finding)
	})

	t.Run("a new record gets the next number", func(t *testing.T) {
		third := reporttest.ReleaseRecord("other", report.OutcomeApplied)
		next, err := b.Keep(third, "")
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(filepath.Dir(file), "000002-"+fileSafe(third.Object)+".json"), next)
		assert.Len(t, dirNames(t, root), 1, "the run keeps its one directory")
		assert.Len(t, dirNames(t, filepath.Dir(file)), 2)
		assert.Equal(t, third, readBackupRecord(t, next).Finding)
	})

	t.Run("a root that cannot be written fails", func(t *testing.T) {
		// root ignores file permissions, so the directory would be created after all.
		if os.Geteuid() == 0 {
			t.Skip("running as root, which ignores file permissions")
		}
		readOnly := t.TempDir()
		require.NoError(t, os.Chmod(readOnly, 0o500))
		t.Cleanup(func() { _ = os.Chmod(readOnly, 0o700) }) // so that TempDir can remove it
		_, err := (&BackupDir{Root: readOnly, StartTime: start}).Keep(reporttest.ReleaseRecord("x", ""), "")
		require.Error(t, err)
		assert.Empty(t, dirNames(t, readOnly))
	})
}

func TestFileSafe(t *testing.T) {
	long := strings.Repeat("a", 253)
	tests := []struct {
		name string
		obj  report.ObjectSummary
		want string
	}{
		{
			name: "cluster-scoped, with a group and a colon in the name",
			obj:  report.ObjectSummary{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "system:foo"},
			want: "clusterrole.rbac.authorization.k8s.io-system_foo",
		},
		{
			name: "namespaced, core group",
			obj:  report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg.v2"},
			want: "configmap-shop-cfg.v2",
		},
		{
			name: "a run of unsafe characters becomes one underscore",
			obj:  report.ObjectSummary{APIVersion: "acme.io/v1", Kind: "Widget", Namespace: "shop", Name: "a::b @c/../d"},
			want: "widget.acme.io-shop-a_b_c_.._d",
		},
		{
			name: "cut at 200 characters",
			obj:  report.ObjectSummary{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: long},
			want: ("configmap-shop-" + long)[:200],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fileSafe(tt.obj)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), 200)
			assert.Regexp(t, `^[a-zA-Z0-9._-]+$`, got)
		})
	}
}

func TestPruneBackups(t *testing.T) {
	now := time.Now()
	cutoff := now.Add(-24 * time.Hour)
	old, recent := now.Add(-48*time.Hour), now.Add(-time.Hour)

	root := t.TempDir()
	write := func(path string, mtime time.Time) {
		t.Helper()
		full := filepath.Join(root, path)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o700))
		require.NoError(t, os.WriteFile(full, []byte("{}\n"), 0o600))
		require.NoError(t, os.Chtimes(full, mtime, mtime))
	}
	// Nothing outside the run directories, nor anything in them but records, is the sweeper's to
	// remove, however old.
	write("lost+found/0001-x.json", old)
	write("notes.txt", old)
	write("0001-stray.json", old)
	write("run-20261120T000000Z-1/0001-old.json", old)
	write("run-20261120T000000Z-1/0002-new.json", recent)
	write("run-20261120T000000Z-1/README", old)
	write("run-20261121T000000Z-2/0001-old.json", old)
	write("run-20261121T000000Z-2/0002-old.json", old)
	write("run-20261122T000000Z-3/0001-new.json", recent)
	write("run-20261122T000000Z-4/.tmp-123", old)
	// An empty run directory is another run's, just made, unless it has been empty since before
	// the cutoff.
	require.NoError(t, os.Mkdir(filepath.Join(root, "run-20261123T000000Z-6"), 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(root, "run-20261101T000000Z-7"), 0o700))
	require.NoError(t, os.Chtimes(filepath.Join(root, "run-20261101T000000Z-7"), old, old))
	require.NoError(t, os.Mkdir(filepath.Join(root, "run-20261123T000000Z-5"), 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(root, "run-20261123T000000Z-5", "0001-x.json"), 0o700))

	removed, err := pruneBackups(root, cutoff)
	require.NoError(t, err)
	assert.Equal(t, 3, removed)

	var left []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != root {
			rel, _ := filepath.Rel(root, path)
			left = append(left, rel)
		}
		return err
	}))
	slices.Sort(left)
	assert.Equal(t, []string{
		"0001-stray.json",
		"lost+found",
		"lost+found/0001-x.json",
		"notes.txt",
		"run-20261120T000000Z-1",
		"run-20261120T000000Z-1/0002-new.json",
		"run-20261120T000000Z-1/README",
		// run-…-2 had only old records: it is gone.
		"run-20261122T000000Z-3",
		"run-20261122T000000Z-3/0001-new.json",
		"run-20261122T000000Z-4",
		"run-20261122T000000Z-4/.tmp-123",
		"run-20261123T000000Z-5",
		"run-20261123T000000Z-5/0001-x.json",
		"run-20261123T000000Z-6",
	}, left)

	t.Run("a root that does not exist", func(t *testing.T) {
		removed, err := pruneBackups(filepath.Join(root, "missing"), cutoff)
		require.Error(t, err)
		assert.Zero(t, removed)
	})
}
