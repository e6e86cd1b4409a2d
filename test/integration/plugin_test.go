package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubectlPlugin: with kubectl-sweeper on the PATH, a real kubectl runs `kubectl sweeper` and
// `kubectl sweeper explain`, with kubectl's --kubeconfig and --context passed on to it.
func TestKubectlPlugin(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	require.FileExists(t, kubectl, "hack/testbin.sh all builds kubectl")
	plugins := t.TempDir()
	data, err := os.ReadFile(string(sweeperBinary))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(plugins, "kubectl-sweeper"), data, 0o755))
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, `
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: NAMESPACE, finalizers: [example.com/hold]}
`)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return cluster.Binary(kubectl).RunIn(t, []string{"PATH=" + plugins, "HOME=" + t.TempDir()}, nil, args...)
	}

	stdout, stderr, code := run("plugin", "list")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, filepath.Join(plugins, "kubectl-sweeper"))

	stdout, stderr, code = run("sweeper", "--kubeconfig", testCluster.Kubeconfig, "--context", currentContext(t), "--include-namespaces", ns,
		"--rules=stuck-terminating", "--min-terminating-age=0s", "-o", "json", "--log-level=warn")
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.Len(t, findingsIn(&rep, ns), 1)
	assert.Equal(t, "held", findingsIn(&rep, ns)[0].Object.Name)

	stdout, stderr, code = run("sweeper", "explain", "configmap/held", "-n", ns, "--kubeconfig", testCluster.Kubeconfig, "--min-terminating-age=0s")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "ConfigMap "+ns+"/held")
	assert.Contains(t, stdout, "stuck-terminating")

	stdout, _, code = run("sweeper", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Usage: kubectl sweeper [flags]")

	_, stderr, code = run("sweeper", "--kubeconfig", testCluster.Kubeconfig, "--context", "nowhere")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `context "nowhere" does not exist`)
}

// currentContext is the current context of the test cluster's kubeconfig.
func currentContext(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "config", "current-context", "--kubeconfig", testCluster.Kubeconfig).Output()
	require.NoError(t, err)
	return string(bytes.TrimSpace(out))
}
