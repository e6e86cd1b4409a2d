// Package e2e deploys operator-sweeper as its manifests say, on a real kube-apiserver and etcd,
// and runs the binary built by `make build` as the ServiceAccount the manifests create.
package e2e

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

var (
	testCluster   *cluster.Cluster
	sweeperBinary string
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunTests(m, &testCluster, func(dir string) (err error) {
		sweeperBinary, err = deploy.Build(dir)
		return err
	}))
}

// The deploy helpers on this package's cluster and binary.

func render(t *testing.T, dir string) []*unstructured.Unstructured { return deploy.Render(t, dir) }

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	return deploy.Find(t, objs, kind, name)
}

func apply(t *testing.T, objs []*unstructured.Unstructured, dryRun bool) {
	deploy.Apply(t, testCluster, objs, dryRun)
}

func serviceAccountConfig(t *testing.T) (*rest.Config, string) {
	return deploy.ServiceAccountConfig(t, testCluster)
}

func cronJobArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	return deploy.CronJobArgs(t, objs)
}

func runSweeper(t *testing.T, args ...string) (*report.Report, string, int) {
	return deploy.Run(t, sweeperBinary, args...)
}
