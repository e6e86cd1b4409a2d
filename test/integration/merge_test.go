package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// TestMergeTwoClusters: the reports of two real API servers' sweeps, run apart, merge into one
// JSON and one HTML report holding both, each finding under its cluster and none crossed.
// twoClusters starts a second API server, beta, stopped when the test ends, and leaves a
// ConfigMap stuck Terminating in a namespace of each: alpha-stuck in the test cluster's alphaNS,
// beta-stuck in beta's betaNS.
func twoClusters(t *testing.T, betaNS string) (beta *cluster.Cluster, alphaNS string, alphaObj *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	beta, err := cluster.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, beta.Stop()) })

	const stuck = `{apiVersion: v1, kind: ConfigMap, metadata: {name: NAME, namespace: NAMESPACE, finalizers: [example.com/keep]}}`
	alphaNS = testCluster.NewNamespace(t)
	alphaObj = terminate(t, alphaNS, fill(stuck, alphaNS, "alpha-stuck"))[0]
	require.NoError(t, beta.CreateNamespace(ctx, betaNS))
	betaObjs, err := beta.Create(ctx, fill(stuck, betaNS, "beta-stuck"))
	require.NoError(t, err)
	_, err = beta.Delete(ctx, betaObjs[0])
	require.NoError(t, err)
	return beta, alphaNS, alphaObj
}

func TestMergeTwoClusters(t *testing.T) {
	const betaNS = "merge-beta"
	beta, alphaNS, alphaObj := twoClusters(t, betaNS)

	dir := t.TempDir()
	for _, run := range []struct {
		cluster, kubeconfig, namespace string
	}{{"alpha", testCluster.Kubeconfig, alphaNS}, {"beta", beta.Kubeconfig, betaNS}} {
		_, stderr, code := sweeperBinary.Run(t, "--kubeconfig", run.kubeconfig, "--cluster", run.cluster, "--include-namespaces", run.namespace,
			"--rules=stuck-terminating", "--min-terminating-age=0s", "--log-level=warn", "--report-file", filepath.Join(dir, run.cluster+".json"))
		require.Equal(t, 0, code, stderr)
	}

	stdout, stderr, code := sweeperBinary.Run(t, "merge", filepath.Join(dir, "alpha.json"), filepath.Join(dir, "beta.json"), "-o", "json")
	require.Equal(t, 0, code, stderr)
	var fleet report.Fleet
	require.NoError(t, json.Unmarshal([]byte(stdout), &fleet))
	assert.Equal(t, report.FleetKind, fleet.Kind)
	require.Len(t, fleet.Clusters, 2)
	want := map[string]string{"alpha": alphaObj.GetName(), "beta": "beta-stuck"}
	for _, r := range fleet.Clusters {
		require.Len(t, r.Findings, 1, r.Metadata.Cluster)
		assert.Equal(t, want[r.Metadata.Cluster], r.Findings[0].Object.Name, "%s's finding is its own", r.Metadata.Cluster)
		assert.NotEmpty(t, r.Metadata.ClusterUID)
	}
	assert.NotEqual(t, fleet.Clusters[0].Metadata.ClusterUID, fleet.Clusters[1].Metadata.ClusterUID, "two clusters")
	assert.Equal(t, 2, fleet.Summary.Findings)

	page, stderr, code := sweeperBinary.Run(t, "merge", filepath.Join(dir, "alpha.json"), filepath.Join(dir, "beta.json"), "-o", "html")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, page, `data-cluster="alpha"`)
	assert.Contains(t, page, `data-cluster="beta"`)
	assert.Contains(t, page, `id="filter-cluster"`)

	notReport := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notReport, []byte("no report here\n"), 0o600))
	_, stderr, code = sweeperBinary.Run(t, "merge", filepath.Join(dir, "alpha.json"), notReport)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "notes.txt holds no SweepReport or FleetReport")
	_, stderr, code = sweeperBinary.Run(t, "merge", filepath.Join(dir, "alpha.json"), filepath.Join(dir, "alpha.json"))
	assert.Equal(t, 2, code, "the same cluster twice: %s", stderr)
}
