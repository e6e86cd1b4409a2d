// Package operators tests operator-sweeper against real third-party operators, each built from the
// Go module proxy by hack/testbin.sh all and run as a process of the test against a control plane
// with kube-controller-manager, kube-scheduler and kwok nodes (which run the operators' workloads,
// so the cluster sees them available). The sweeper runs as its shipped ServiceAccount, with its
// shipped config. A suite of its own, after test/controllers: on a fresh machine, the operators
// build while that suite runs.
package operators

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

var (
	testCluster *cluster.Cluster
	// sweeperBinary is operator-sweeper built as a release is, as the CronJob runs it.
	sweeperBinary cluster.Binary
)

func TestMain(m *testing.M) {
	cluster.Main(m, &testCluster, cluster.Components{Controllers: true, EndpointRouting: true}, func(dir string) (err error) {
		sweeperBinary, err = cluster.Build(dir, cluster.ReleaseStamp)
		return err
	})
}

// The nodes the operators' pods run on, started once.
var (
	setUp    sync.Once
	setUpErr error
)

func setUpOnce(t *testing.T) {
	t.Helper()
	setUp.Do(func() {
		_, setUpErr = testCluster.StartNodes(context.Background(), "stable", nil, "stable-1", "stable-2")
	})
	require.NoError(t, setUpErr, "start the nodes")
}

// sweep deploys the base manifests and runs the CronJob's command as their ServiceAccount, with
// the shipped config, deploy.Young, and args.
func sweep(t *testing.T, args ...string) *report.Report {
	t.Helper()
	return deploy.SweepAsCronJob(t, testCluster, sweeperBinary, deploy.Render(t, "base"), args...)
}
