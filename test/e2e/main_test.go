// Package e2e deploys operator-sweeper as its manifests say, on a real kube-apiserver and etcd,
// and runs the binary built by `make build` as the ServiceAccount the manifests create.
package e2e

import (
	"testing"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

var (
	testCluster *cluster.Cluster
	// sweeperBinary is operator-sweeper built as a release is, stamped with cluster.ReleaseStamp.
	sweeperBinary cluster.Binary
)

func TestMain(m *testing.M) {
	cluster.Main(m, &testCluster, cluster.Components{}, func(dir string) (err error) {
		sweeperBinary, err = cluster.Build(dir, cluster.ReleaseStamp)
		return err
	})
}
