package integration

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// TestEveryCommandInEveryDryRunModeChangesNothing: every command that talks to the cluster, in
// every dry-run mode, on debris each acts on (an uninstalled logging-operator's Loggings for the
// sweep, a Helm release's Gizmos for a drain, an applied run's report for restore), with
// pre-images in --backup-dir older than --backup-retention, sends no write the API server keeps:
// none under --dry-run=client, every one with dryRun=All under --dry-run=server. No Secret, no
// Event, no file (the backup directory, HOME, the working directory) changes.
func TestEveryCommandInEveryDryRunModeChangesNothing(t *testing.T) {
	ctx := context.Background()
	// A run to undo, applied: restore's input.
	f1 := testCluster.NewNamespace(t, "f1")
	seeded(t)(testCluster.SeedF1(ctx, f1))
	time.Sleep(2 * time.Second)
	_, applied := sweepToUndo(t, "")
	// What the other commands act on.
	gizmos := newGizmoFixture(t)
	f4 := seeded(t)(testCluster.SeedF4(ctx, testCluster.NewNamespace(t, "f4")))
	logging := f4.Objects[0]
	cluster.AgeDebris()

	backupDir := t.TempDir()
	old := filepath.Join(backupDir, "20260101T000000Z-old", "record.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(old), 0o700))
	require.NoError(t, os.WriteFile(old, []byte(`{}`), 0o600))
	longAgo := time.Now().Add(-30 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(old, longAgo, longAgo))
	require.NoError(t, os.Chtimes(filepath.Dir(old), longAgo, longAgo))
	home := t.TempDir()
	workDir, err := os.Getwd()
	require.NoError(t, err)

	proxy, err := cluster.NewFaultProxy(testCluster.Config, cluster.Faults{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })

	// merge reads reports of several clusters.
	merged := filepath.Join(t.TempDir(), "other.json")
	data, err := os.ReadFile(applied)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(merged, bytes.ReplaceAll(data, []byte(`"cluster": "envtest"`), []byte(`"cluster": "other"`)), 0o600))

	young := []string{"--min-age=0s", "--min-terminating-age=0s", "--max-actions=0"}
	commands := []struct {
		name string
		args []string
		// modes are the dry-run flags the command is run with: none for a command that has no
		// --dry-run (it never writes).
		modes []string
	}{
		{"sweep", slices.Concat(young, []string{"--backup-dir", backupDir, "--backup-retention=1h"}), []string{"", "--dry-run=client", "--dry-run=server"}},
		{"sweep, pre-images in Secrets", young, []string{"", "--dry-run=client", "--dry-run=server"}},
		{"explain", slices.Concat([]string{"explain", "logging/" + logging.GetName()}, young), []string{""}},
		{"preflight --drain", []string{"preflight", "helm/gizmo", "-n", gizmos.operatorNS, "--config", gizmos.config, "--drain"}, []string{"", "--dry-run=client", "--dry-run=server"}},
		{"restore", []string{"restore", "--from", applied}, []string{"", "--dry-run=client", "--dry-run=server"}},
		{"merge", []string{"merge", applied, merged}, []string{""}},
	}

	before := dryRunState(t, backupDir, home, workDir, filepath.Dir(applied), filepath.Dir(merged))
	for _, c := range commands {
		for _, mode := range c.modes {
			args := slices.Concat(c.args, []string{"-o", "json"})
			if mode != "" {
				args = append(args, mode)
			}
			sent := len(proxy.Requests())
			stdout, stderr, code := runSweeperWith(t, proxy, []string{"HOME=" + home}, args...)
			name := c.name + " " + mode
			require.NotEqual(t, 2, code, "%s: bad input proves nothing: %s", name, stderr)
			require.NotEmpty(t, stdout, "%s: a report", name)
			var writes int
			for _, req := range proxy.Requests()[sent:] {
				if req.Method == http.MethodGet {
					continue
				}
				writes++
				if mode == "--dry-run=server" {
					assert.True(t, req.DryRun, "%s: %s %s is not persisted", name, req.Method, req.Path)
				} else {
					assert.Fail(t, "a write", "%s: %s %s sent", name, req.Method, req.Path)
				}
			}
			if mode == "--dry-run=server" && c.name != "merge" && c.name != "explain" {
				assert.Positive(t, writes, "%s: the writes it would make were rehearsed: the debris is acted on", name)
			}
		}
	}
	assert.Equal(t, before, dryRunState(t, backupDir, home, workDir, filepath.Dir(applied), filepath.Dir(merged)), "nothing changed")
	assert.NotNil(t, testCluster.Current(t, logging), "the Logging is still there")
}

// dryRunState is what a dry run must not change: the Secrets of the sweeper's namespace, every
// Event (by namespace, name and resourceVersion), the namespaces, and the files in dirs (by path,
// size and time).
func dryRunState(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	ctx := context.Background()
	state := map[string]string{}
	secrets, err := testCluster.Kube.CoreV1().Secrets(cluster.SweeperNamespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range secrets.Items {
		state["secret "+s.Name] = s.ResourceVersion
	}
	events, err := testCluster.Kube.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, e := range events.Items {
		state["event "+e.Namespace+"/"+e.Name] = e.ResourceVersion
	}
	namespaces, err := testCluster.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ns := range namespaces.Items {
		state["namespace "+ns.Name] = ns.ResourceVersion
	}
	for _, dir := range dirs {
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			state["file "+path] = fmt.Sprintf("%d %s", info.Size(), info.ModTime().Format(time.RFC3339Nano))
			return nil
		}))
	}
	return state
}
