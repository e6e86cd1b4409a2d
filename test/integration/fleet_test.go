package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// fleetKubeconfig writes a kubeconfig of four contexts: alpha and beta, two real API servers'
// admin contexts, alpha-again, alpha's cluster under another name, and gamma, a server nothing
// listens on.
func fleetKubeconfig(t *testing.T, alpha, beta *cluster.Cluster) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, c := range map[string]*cluster.Cluster{"alpha": alpha, "beta": beta} {
		one, err := clientcmd.LoadFromFile(c.Kubeconfig)
		require.NoError(t, err)
		current := one.Contexts[one.CurrentContext]
		merged.Clusters[name] = one.Clusters[current.Cluster]
		merged.AuthInfos[name] = one.AuthInfos[current.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.Contexts["alpha-again"] = &clientcmdapi.Context{Cluster: "alpha", AuthInfo: "alpha"}
	merged.Clusters["gamma"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	merged.AuthInfos["gamma"] = &clientcmdapi.AuthInfo{Token: "nobody"}
	merged.Contexts["gamma"] = &clientcmdapi.Context{Cluster: "gamma", AuthInfo: "gamma"}
	merged.CurrentContext = "alpha"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*merged, file))
	return file
}

// TestFleetContexts: with two real API servers and a kubeconfig of three contexts, the third
// unreachable, --contexts alpha,beta reports each cluster's stuck objects under its own cluster
// and nothing crossed, exit 0; --all-contexts still reports both, names the unreachable one, and
// exits 1; --all-contexts does not write.
func TestFleetContexts(t *testing.T) {
	const betaNS = "fleet-beta"
	beta, alphaNS, alphaObj := twoClusters(t, betaNS)
	kubeconfig := fleetKubeconfig(t, testCluster, beta)
	args := []string{"--kubeconfig", kubeconfig, "--include-namespaces", alphaNS + "," + betaNS, "--rules=stuck-terminating",
		"--min-terminating-age=0s", "--log-level=warn", "-o", "json"}

	stdout, stderr, code := raceSweeper.Run(t, append(args, "--contexts", "alpha,beta")...)
	require.Equal(t, 0, code, stderr)
	var fleet report.Fleet
	require.NoError(t, json.Unmarshal([]byte(stdout), &fleet))
	require.Len(t, fleet.Clusters, 2)
	want := map[string]string{"alpha": alphaObj.GetName(), "beta": "beta-stuck"}
	for _, r := range fleet.Clusters {
		require.Len(t, r.Findings, 1, "%s: its own stuck object only", r.Metadata.Cluster)
		assert.Equal(t, want[r.Metadata.Cluster], r.Findings[0].Object.Name, r.Metadata.Cluster)
		assert.NotEmpty(t, r.Metadata.ClusterUID, r.Metadata.Cluster)
	}

	stdout, stderr, code = raceSweeper.Run(t, append(args, "--all-contexts")...)
	assert.Equal(t, 1, code, "an unreachable context fails the run\n%s", stderr)
	require.NoError(t, json.Unmarshal([]byte(stdout), &fleet))
	require.Len(t, fleet.Clusters, 4)
	assert.Equal(t, []string{"gamma"}, fleet.Summary.FailedRuns)
	for _, r := range fleet.Clusters {
		switch r.Metadata.Cluster {
		case "gamma":
			require.NotEmpty(t, r.Errors)
			assert.Contains(t, r.Errors[0].Message, "context gamma")
		case "alpha-again":
			assert.Empty(t, r.Findings, "one cluster is swept once")
			require.NotEmpty(t, r.Errors)
			assert.Contains(t, r.Errors[0].Message, "the same cluster as context alpha")
			assert.False(t, r.Errors[0].Fatal)
			assert.Equal(t, r.Metadata.StartTime, r.Metadata.EndTime, "not swept: no time spent, not a zero end")
		default:
			assert.Len(t, r.Findings, 1, "%s is still reported", r.Metadata.Cluster)
		}
	}

	table, _, _ := raceSweeper.Run(t, "--kubeconfig", kubeconfig, "--contexts", "alpha,beta", "--include-namespaces", alphaNS+","+betaNS,
		"--rules=stuck-terminating", "--min-terminating-age=0s", "--log-level=warn")
	assert.Regexp(t, `(?m)^CLUSTER\s+RULE`, table)
	assert.Regexp(t, `(?m)^beta\s+stuck-terminating\s+ConfigMap\s+fleet-beta/beta-stuck`, table)

	_, stderr, code = raceSweeper.Run(t, append(args, "--all-contexts", "--dry-run=none")...)
	assert.Equal(t, 2, code, "writes need the contexts named: %s", stderr)
	_, stderr, code = raceSweeper.Run(t, append(args, "--contexts", "alpha,delta")...)
	assert.Equal(t, 2, code, "no context delta: %s", stderr)
	assert.Contains(t, stderr, `no context "delta"`)
}

// proxiedFleetKubeconfig writes a kubeconfig whose contexts alpha and beta reach the two clusters
// through fault proxies that hold every list of the ConfigMaps of a namespace for stall.
func proxiedFleetKubeconfig(t *testing.T, beta *cluster.Cluster, alphaNS, betaNS string, stall time.Duration) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, at := range map[string]struct {
		c  *cluster.Cluster
		ns string
	}{"alpha": {testCluster, alphaNS}, "beta": {beta, betaNS}} {
		proxy, err := cluster.NewFaultProxy(at.c.Config, cluster.Faults{Stall: "/namespaces/" + at.ns + "/configmaps$", StallFor: stall})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, proxy.Close()) })
		file, err := proxy.Kubeconfig(t.TempDir())
		require.NoError(t, err)
		one, err := clientcmd.LoadFromFile(file)
		require.NoError(t, err)
		current := one.Contexts[one.CurrentContext]
		merged.Clusters[name] = one.Clusters[current.Cluster]
		merged.AuthInfos[name] = one.AuthInfos[current.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.CurrentContext = "alpha"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*merged, file))
	return file
}

// TestFleetEachClusterItsOwnTimeout: two clusters, one sweep at a time (--cluster-concurrency=1),
// each sweep held about 3 s by its cluster's slow list, --timeout 5s: the second cluster waits for
// the first, and still has its whole --timeout, which starts when its sweep does. The fleet is run
// by a binary built with the race detector: the clusters' sweeps share no unguarded state; and
// every log line of the run names its cluster.
func TestFleetEachClusterItsOwnTimeout(t *testing.T) {
	race := raceSweeper
	const betaNS = "fleet-timeout-beta"
	beta, alphaNS, _ := twoClusters(t, betaNS)
	kubeconfig := proxiedFleetKubeconfig(t, beta, alphaNS, betaNS, 3*time.Second)

	start := time.Now()
	stdout, stderr, code := race.Run(t, "--kubeconfig", kubeconfig, "--contexts", "alpha,beta", "--cluster-concurrency=1", "--timeout=5s",
		"--include-namespaces", alphaNS+","+betaNS, "--rules=stuck-terminating", "--min-terminating-age=0s",
		"--log-level=info", "--log-format=json", "-o", "json")
	took := time.Since(start)
	assert.NotContains(t, stderr, "DATA RACE")
	require.Equal(t, 0, code, "each cluster had its own 5s: %s", stderr)
	assert.Greater(t, took, 6*time.Second, "one at a time: the second waited for the first")
	var fleet report.Fleet
	require.NoError(t, json.Unmarshal([]byte(stdout), &fleet))
	require.Len(t, fleet.Clusters, 2)
	for _, r := range fleet.Clusters {
		assert.Empty(t, r.Errors, "%s: not cut short", r.Metadata.Cluster)
		assert.Len(t, r.Findings, 1, r.Metadata.Cluster)
	}

	clusters := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var entry map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "a JSON log line: %s", line)
		name, _ := entry["cluster"].(string)
		assert.Contains(t, []string{"alpha", "beta"}, name, "the line names its cluster: %s", line)
		clusters[name]++
	}
	assert.Positive(t, clusters["alpha"])
	assert.Positive(t, clusters["beta"])

	// Both at once: the two connect, log and sweep concurrently.
	_, stderr, code = race.Run(t, "--kubeconfig", kubeconfig, "--contexts", "alpha,beta", "--cluster-concurrency=2",
		"--include-namespaces", alphaNS+","+betaNS, "--rules=stuck-terminating", "--min-terminating-age=0s", "-o", "json")
	assert.NotContains(t, stderr, "DATA RACE")
	assert.Equal(t, 0, code, stderr)
}
