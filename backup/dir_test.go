package backup

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
)

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

func TestDirKeepsBodyAndRecord(t *testing.T) {
	// A start time outside UTC: the directory is named by its UTC time all the same.
	start := time.Date(2026, 11, 23, 13, 4, 5, 0, time.FixedZone("CET", 3600))
	root := t.TempDir()
	d := &Dir{Root: root, StartTime: start}
	ctx := context.Background()

	f := reporttest.ReleaseRecord("system:foo", "")
	require.NoError(t, d.Body(ctx, FileSafe(f.Object), f.Before, func(body *report.BodyWriter) error {
		return body.Write(reporttest.ReleasedRole("system:foo"))
	}))
	runs := dirNames(t, root)
	require.Len(t, runs, 1, "one directory per run")
	assert.Regexp(t, `^run-20261123T120405Z-.+$`, runs[0])
	assert.Equal(t, "file:000001-"+FileSafe(f.Object)+".body.gz", f.Before.Kept)
	assert.Len(t, f.Before.SHA256, 64)
	rec := report.BackupRecord{APIVersion: report.BackupAPIVersion, Kind: report.BackupKind, Cluster: "prod", ClusterUID: "u", RunID: "r", Finding: f}
	require.NoError(t, d.Record(ctx, rec, false))
	dir := filepath.Join(root, runs[0])
	assert.Equal(t, []string{"000001-" + FileSafe(f.Object) + ".body.gz", "000001-" + FileSafe(f.Object) + ".json"}, dirNames(t, dir))
	for _, name := range dirNames(t, dir) {
		info, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s: readable by its owner only", name)
	}

	t.Run("the record again, with its outcome, replaces it", func(t *testing.T) {
		rec.Finding.Outcome = report.OutcomeApplied
		require.NoError(t, d.Record(ctx, rec, true))
		records, from, err := LoadDir(root)
		require.NoError(t, err)
		assert.Equal(t, dir, from)
		require.Len(t, records, 1)
		assert.Equal(t, rec, records[0])
	})

	t.Run("the body reads back, checked", func(t *testing.T) {
		body, err := OpenFile(dir, f.Before)
		require.NoError(t, err)
		defer body.Close()
		obj, err := body.Next()
		require.NoError(t, err)
		assert.Equal(t, report.Image(reporttest.ReleasedRole("system:foo")), obj)
		_, err = body.Next()
		assert.ErrorIs(t, err, io.EOF)
	})

	t.Run("a changed body is refused", func(t *testing.T) {
		changed := *f.Before
		changed.SHA256 = strings.Repeat("0", 64)
		body, err := OpenFile(dir, &changed)
		require.NoError(t, err)
		defer body.Close()
		_, err = body.Next()
		require.NoError(t, err)
		_, err = body.Next()
		require.Error(t, err)
		assert.False(t, errors.Is(err, io.EOF))
		assert.Contains(t, err.Error(), "was changed")
	})

	t.Run("a body named out of the directory is refused", func(t *testing.T) {
		for _, kept := range []string{"file:../../etc/passwd.body.gz", "file:x.json", "secret:ns/name"} {
			_, err := OpenFile(dir, &report.PreImage{Kept: kept})
			assert.Error(t, err, kept)
		}
	})

	t.Run("a root that cannot be written fails", func(t *testing.T) {
		// root ignores file permissions, so the directory would be created after all.
		if os.Geteuid() == 0 {
			t.Skip("running as root, which ignores file permissions")
		}
		readOnly := t.TempDir()
		require.NoError(t, os.Chmod(readOnly, 0o500))
		t.Cleanup(func() { _ = os.Chmod(readOnly, 0o700) }) // so that TempDir can remove it
		err := (&Dir{Root: readOnly, StartTime: start}).Body(ctx, "x", &report.PreImage{}, func(*report.BodyWriter) error { return nil })
		require.Error(t, err)
		assert.Empty(t, dirNames(t, readOnly))
	})
}

func TestSignatures(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	f := reporttest.ReleaseRecord("system:foo", report.OutcomeApplied)
	var err error
	f.Signature, err = Sign(key, f, "cluster-uid", "run-1")
	require.NoError(t, err)
	require.NoError(t, Verify(key, f, "cluster-uid", "run-1"))

	changed := f
	changed.Object.Name = "cluster-admin"
	assert.ErrorContains(t, Verify(key, changed, "cluster-uid", "run-1"), "was changed")
	assert.Error(t, Verify(key, f, "other-cluster", "run-1"), "signed for one cluster, it does not pass in another")
	assert.Error(t, Verify(key, f, "cluster-uid", "run-2"))
	assert.Error(t, Verify([]byte(strings.Repeat("x", 32)), f, "cluster-uid", "run-1"), "another key")
	unsigned := f
	unsigned.Signature = ""
	assert.ErrorContains(t, Verify(key, unsigned, "cluster-uid", "run-1"), "no signature")
	data, err := json.Marshal(f)
	require.NoError(t, err)
	var back report.FindingResult
	require.NoError(t, json.Unmarshal(data, &back))
	require.NoError(t, Verify(key, back, "cluster-uid", "run-1"), "a finding read back from its JSON still verifies")
}

func TestNewRunID(t *testing.T) {
	id := NewRunID(time.Date(2026, 11, 23, 13, 4, 5, 0, time.UTC))
	assert.Regexp(t, `^20261123t130405z-[0-9a-f]{8}$`, id)
	assert.NotEqual(t, id, NewRunID(time.Date(2026, 11, 23, 13, 4, 5, 0, time.UTC)), "two runs of one second differ")
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
			got := FileSafe(tt.obj)
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
	write("run-20261120T000000Z-1/0001-old.body.gz", old)
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

	removed, err := PruneDir(root, cutoff)
	require.NoError(t, err)
	assert.Equal(t, 4, removed)

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
		removed, err := PruneDir(filepath.Join(root, "missing"), cutoff)
		require.Error(t, err)
		assert.Zero(t, removed)
	})
}
