// Package controllers tests operator-sweeper against debris the real controllers make:
// kube-controller-manager (node lifecycle, taint eviction, garbage collector, namespaces),
// kube-scheduler, kwok's simulated kubelets, and OLM v0's own operators, installing a demo
// operator from a real catalog (see package cluster, Components). The sweeper runs as its shipped
// ServiceAccount, with its shipped config.
package controllers

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	cluster.Main(m, &testCluster, cluster.Components{Controllers: true, OLM: true}, func(dir string) (err error) {
		sweeperBinary, err = cluster.Build(dir, cluster.ReleaseStamp)
		return err
	})
}

// The nodes every test's pods run on, the demo catalog and OLM's Deployments, set up once.
var (
	setUp    sync.Once
	setUpErr error
)

// stableNodes are nodes whose kwok runs for the whole package.
var stableNodes = []string{"stable-1", "stable-2", "stable-3"}

func setUpOnce(t *testing.T) {
	t.Helper()
	setUp.Do(func() {
		ctx := context.Background()
		if _, setUpErr = testCluster.StartNodes(ctx, "stable", nil, stableNodes...); setUpErr != nil {
			return
		}
		if setUpErr = testCluster.StartDemoCatalog(ctx); setUpErr != nil {
			return
		}
		setUpErr = testCluster.SetOLMDeployments(ctx, 1)
	})
	require.NoError(t, setUpErr, "set up nodes, catalog and OLM")
}

// uninstallOLM uninstalls OLM; restoreOLM undoes it when the test ends.
func uninstallOLM(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { restoreOLM(t) })
	require.NoError(t, testCluster.UninstallOLM(context.Background()))
}

func restoreOLM(t *testing.T) {
	t.Helper()
	require.NoError(t, testCluster.SetOLMDeployments(context.Background(), 1))
	require.NoError(t, testCluster.StartOLM(context.Background()))
}

// installDemo installs the demo operator in namespace through OLM and returns its CSV.
func installDemo(t *testing.T, namespace string) *unstructured.Unstructured {
	t.Helper()
	csv, err := testCluster.InstallDemo(context.Background(), namespace)
	require.NoError(t, err)
	return csv
}

// sweep deploys the base manifests and runs the CronJob's command as their ServiceAccount, with
// the shipped config, deploy.Young, and args.
func sweep(t *testing.T, args ...string) *report.Report {
	t.Helper()
	return sweepConfigured(t, nil, args...)
}

// optIn is an opt-in as the shipped manifests say (deploy.OptIn).
type optIn = deploy.OptIn

// sweepConfigured is sweep opted in by optIn, if not nil. When the test ends, the base is applied
// again and the component's own objects deleted.
func sweepConfigured(t *testing.T, optIn *optIn, args ...string) *report.Report {
	t.Helper()
	objs := deploy.Render(t, "base")
	if optIn != nil {
		objs = deploy.OptedIn(t, testCluster, *optIn)
	}
	return deploy.SweepAsCronJob(t, testCluster, sweeperBinary, objs, args...)
}

// findings returns the report's findings of rule about objects in namespace, or cluster-scoped
// ones whose name has it as a prefix.
func findings(rep *report.Report, rule, namespace string) []report.FindingResult {
	var out []report.FindingResult
	for _, f := range rep.Findings {
		if f.Rule == rule && (f.Object.Namespace == namespace || (f.Object.Namespace == "" && strings.HasPrefix(f.Object.Name, namespace))) {
			out = append(out, f)
		}
	}
	return out
}
