package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// TestByHandWithoutTheSweepersNamespace: --dry-run=none by hand, on a cluster where the sweeper's
// namespace is not there. A user who may not create namespaces (the sweeper's own ServiceAccount,
// here) gets exit 2 and one line that says what to do, before anything is planned: no write sent,
// the Logging still held. An admin's run creates the namespace as the manifests do (restricted Pod
// Security), keeps its pre-images and key there, and releases the Logging, in one run.
func TestByHandWithoutTheSweepersNamespace(t *testing.T) {
	ctx := context.Background()
	ns := "e2e-byhand"
	require.NoError(t, testCluster.CreateNamespace(ctx, ns))
	f4, err := testCluster.SeedF4(ctx, ns)
	require.NoError(t, err)
	logging := f4.Objects[0]
	held := testCluster.Current(t, logging).GetFinalizers()
	require.NotEmpty(t, held)
	args := slices.Concat([]string{"--dry-run=none", "-o", "json"}, young)

	// A user who may not create namespaces.
	deploy.Apply(t, testCluster, deploy.Render(t, "base"), false)
	_, kubeconfig := deploy.ServiceAccountConfig(t, testCluster)
	stdout, stderr, code := sweeperBinary.Run(t, append(slices.Clone(args), "--kubeconfig", kubeconfig, "--sweeper-namespace", "e2e-byhand-nowhere")...)
	require.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Empty(t, stdout, "stopped before anything is planned: no report")
	line := strings.TrimSpace(stderr)
	assert.NotContains(t, line, "\n", "one line")
	for _, says := range []string{"namespace e2e-byhand-nowhere", "does not exist", "kubectl create namespace e2e-byhand-nowhere", "--sweeper-namespace", "--backup-dir"} {
		assert.Contains(t, line, says)
	}
	assert.Equal(t, held, testCluster.Current(t, logging).GetFinalizers(), "no write sent")
	_, err = testCluster.Kube.CoreV1().Namespaces().Get(ctx, "e2e-byhand-nowhere", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "not created: %v", err)

	// An admin.
	const state = "e2e-byhand-state"
	rep, stderr, code := sweeperBinary.RunReport(t, append(slices.Clone(args), "--kubeconfig", testCluster.Kubeconfig, "--sweeper-namespace", state)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "created the sweeper's namespace")
	created, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, state, metav1.GetOptions{})
	require.NoError(t, err, "created")
	assert.Equal(t, "restricted", created.Labels["pod-security.kubernetes.io/enforce"])
	assert.Zero(t, rep.Summary.Failed, "no write failed")
	var released bool
	for _, f := range rep.Findings {
		if f.Object.UID == logging.GetUID() && f.Action != nil {
			released = f.Outcome == report.OutcomeApplied
			if assert.NotNil(t, f.Before, "its pre-image kept") {
				assert.Contains(t, f.Before.Kept, state)
			}
		}
	}
	assert.True(t, released, "the Logging released")
	assert.Nil(t, testCluster.Current(t, logging), "and gone")
	secrets, err := testCluster.Kube.CoreV1().Secrets(state).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(secrets.Items), 2, "the signing key and the pre-images, in the namespace created")
}
