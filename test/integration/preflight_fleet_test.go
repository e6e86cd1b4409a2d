package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// markRunning says in the status that Deployment namespace/name of c runs (no controller
// runs in this suite).
func markRunning(t *testing.T, c *cluster.Cluster, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	deploy, err := c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	deploy.Status.Replicas, deploy.Status.ReadyReplicas, deploy.Status.AvailableReplicas, deploy.Status.UpdatedReplicas = 1, 1, 1, 1
	_, err = c.Kube.AppsV1().Deployments(namespace).UpdateStatus(ctx, deploy, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// TestPreflightFleet: with two real API servers and a kubeconfig whose third context is
// unreachable, a preflight of --contexts alpha,beta resolves the target in each cluster: where it
// is not installed, nothing to preflight; where it is, its Gizmos under their own cluster. The
// exit code is the worst of the clusters' (3 blocked, 1 unreachable over 3, 0 all clear), a target
// installed nowhere is bad input, and a drain writes only to contexts named.
func TestPreflightFleet(t *testing.T) {
	ctx := context.Background()
	beta, err := cluster.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, beta.Stop()) })
	kubeconfig := fleetKubeconfig(t, testCluster, beta)
	config := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(gizmoMapping), 0o600))

	// alpha: the gizmo operator and two Gizmos holding its finalizer. beta: the namespace only, at
	// first.
	ns := testCluster.NewNamespace(t, "op")
	require.NoError(t, beta.CreateNamespace(ctx, ns))
	createGizmoCRD(t)
	create(t, ns, gizmoOperator)
	markRunning(t, testCluster, ns, "gizmo-operator")
	gizmos := append(createWhenServed(t, ns, fill(gizmo, ns, "g1")), createWhenServed(t, ns, fill(gizmo, ns, "g2"))...)
	// What was created in the second a sweep began, or the one before, is never deleted.
	time.Sleep(2 * time.Second)

	preflight := func(args ...string) (report.Fleet, string, int) {
		t.Helper()
		stdout, stderr, code := raceSweeper.Run(t, append([]string{"preflight", "deployment/gizmo-operator", "-n", ns,
			"--kubeconfig", kubeconfig, "--config", config, "--sweeper-namespace", ns, "--log-level=warn", "-o", "json"}, args...)...)
		var fleet report.Fleet
		if stdout != "" {
			require.NoError(t, json.Unmarshal([]byte(stdout), &fleet), stdout)
		}
		return fleet, stderr, code
	}
	byCluster := func(fleet report.Fleet) map[string]*report.Report {
		out := map[string]*report.Report{}
		for _, r := range fleet.Clusters {
			out[r.Metadata.Cluster] = r
		}
		return out
	}
	gizmosOf := func(r *report.Report) []string {
		var names []string
		for _, f := range r.Findings {
			if f.Object.Kind == "Gizmo" {
				names = append(names, f.Object.Namespace+"/"+f.Object.Name)
			}
		}
		return names
	}
	want := []string{ns + "/g1", ns + "/g2"}

	fleet, stderr, code := preflight("--contexts", "alpha,beta")
	require.Equal(t, 3, code, "alpha's Gizmos would be blocked\n%s", stderr)
	assert.Contains(t, stderr, "alpha")
	clusters := byCluster(fleet)
	require.Len(t, clusters, 2)
	assert.ElementsMatch(t, want, gizmosOf(clusters["alpha"]))
	require.NotEmpty(t, clusters["beta"].Errors)
	assert.Contains(t, clusters["beta"].Errors[0].Message, "nothing to preflight in this cluster")
	assert.False(t, clusters["beta"].Errors[0].Fatal, "not installed there fails nothing")
	assert.Empty(t, clusters["beta"].Findings)

	// beta gets the operator, without Gizmos: clear there, blocked in alpha.
	_, err = beta.Create(ctx, cluster.Fill(gizmoOperator, ns))
	require.NoError(t, err)
	markRunning(t, beta, ns, "gizmo-operator")
	fleet, stderr, code = preflight("--contexts", "alpha,beta")
	require.Equal(t, 3, code, stderr)
	clusters = byCluster(fleet)
	assert.ElementsMatch(t, want, gizmosOf(clusters["alpha"]))
	assert.Empty(t, gizmosOf(clusters["beta"]), "nothing crossed")
	assert.Empty(t, clusters["beta"].Errors)
	_, stderr, code = preflight("--contexts", "b*")
	assert.Equal(t, 0, code, "beta alone is clear: %s", stderr)

	// The unreachable context is worse than findings; it is named, and the others are reported.
	fleet, stderr, code = preflight("--all-contexts")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "gamma")
	assert.Equal(t, []string{"gamma"}, fleet.Summary.FailedRuns)
	assert.ElementsMatch(t, want, gizmosOf(byCluster(fleet)["alpha"]), "alpha is still reported")

	// Bad input: a target installed nowhere, a drain that writes to every context.
	stdout, stderr, code := raceSweeper.Run(t, "preflight", "deployment/nothing", "-n", ns, "--kubeconfig", kubeconfig, "--contexts", "alpha,beta")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %s", stderr)
	assert.Contains(t, stderr, "in no cluster")
	_, stderr, code = preflight("--all-contexts", "--drain", "--dry-run=none")
	assert.Equal(t, 2, code, "a drain needs its contexts named: %s", stderr)

	// A drain of the contexts named: alpha's Gizmos deleted and, finalized by the operator, gone.
	finalizeCtx, stop := context.WithCancel(ctx)
	defer stop()
	go finalizeDeleted(finalizeCtx, gizmoResource(), gizmos)
	fleet, stderr, code = preflight("--contexts", "alpha,beta", "--drain", "--dry-run=none", "--drain-timeout=1m")
	require.Equal(t, 0, code, "drained\n%s", stderr)
	assert.Equal(t, len(gizmos), byCluster(fleet)["alpha"].Summary.Applied)
	assert.Zero(t, byCluster(fleet)["beta"].Summary.Applied)
	for _, g := range gizmos {
		_, err := testCluster.Dynamic.Resource(gizmoResource()).Namespace(ns).Get(ctx, g.GetName(), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s is gone: %v", g.GetName(), err)
	}
}
