package report_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// clusterReport is a report of cluster with a stuck ConfigMap of each name.
func clusterReport(cluster string, start time.Time, names ...string) *report.Report {
	r := reporttest.New(start)
	r.Metadata.Cluster = cluster
	r.Metadata.EndTime.Time = start.Add(time.Second)
	for _, name := range names {
		reporttest.Add(r, rules.Finding{
			Rule: rules.StuckTerminatingName, Symptom: true, Severity: rules.SeverityWarning, Reason: "terminating for 1h",
			Object: rules.ObjectRef{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap",
				Namespace: "shop", Name: name, UID: types.UID(cluster + "-" + name)},
		}, reporttest.Result{})
	}
	return r
}

func TestFleet(t *testing.T) {
	start := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	beta, alpha := clusterReport("beta", start.Add(time.Minute), "b1"), clusterReport("alpha", start, "a1", "a2")
	alpha.Errors = append(alpha.Errors, report.Error{Stage: report.StageObserve, Resource: "widgets.acme.io", Message: "forbidden"})
	fleet, err := report.NewFleet([]*report.Report{beta, alpha})
	require.NoError(t, err)
	assert.Equal(t, report.FleetSummary{Clusters: 2, Findings: 3}, fleet.Summary)
	assert.Equal(t, []string{"alpha", "beta"}, []string{fleet.Clusters[0].Metadata.Cluster, fleet.Clusters[1].Metadata.Cluster}, "by cluster name")

	merged := fleet.Merged()
	var clusters []string
	for _, f := range merged.Findings {
		clusters = append(clusters, f.Cluster+" "+f.Object.Name)
	}
	assert.Equal(t, []string{"alpha a1", "alpha a2", "beta b1"}, clusters, "each finding under its cluster, none crossed")
	assert.Equal(t, "alpha", merged.Errors[0].Cluster)
	assert.Equal(t, 3, merged.Summary.Findings)
	assert.Equal(t, start, merged.Metadata.StartTime.Time.UTC())
	assert.Empty(t, alpha.Findings[0].Cluster, "the clusters' own reports are not changed")

	var table bytes.Buffer
	require.NoError(t, fleet.Print(&table, report.Table, false))
	lines := strings.Split(table.String(), "\n")
	assert.Regexp(t, `^CLUSTER\s+RULE\s+KIND`, lines[0])
	assert.Regexp(t, `^alpha\s+stuck-terminating\s+ConfigMap\s+shop/a1, a2`, lines[1], "similar findings of one cluster are one row")
	assert.Regexp(t, `^beta\s+stuck-terminating\s+ConfigMap\s+shop/b1`, lines[2])
	assert.Regexp(t, `(?m)^alpha\s+observe\s+-\s+widgets.acme.io\s+forbidden$`, table.String())
	assert.Contains(t, table.String(), "cluster 2 clusters (alpha, beta)")
	assert.Contains(t, table.String(), "\nalpha: 2 findings")
	assert.Contains(t, table.String(), "\nbeta: 1 findings")

	var markdown bytes.Buffer
	require.NoError(t, fleet.Print(&markdown, report.Markdown, false))
	assert.Contains(t, markdown.String(), "| cluster | rule | severity |")
	assert.Contains(t, markdown.String(), "| beta | stuck-terminating |")

	var page bytes.Buffer
	require.NoError(t, fleet.Print(&page, report.HTML, false))
	assert.Contains(t, page.String(), `<select id="filter-cluster" data-filter="cluster">`)
	assert.Contains(t, page.String(), `data-cluster="alpha"`)
	assert.Contains(t, page.String(), `data-cluster="beta"`)

	var out bytes.Buffer
	require.NoError(t, fleet.Print(&out, report.JSON, false))
	var decoded report.Fleet
	require.NoError(t, json.Unmarshal(out.Bytes(), &decoded))
	assert.Equal(t, report.FleetKind, decoded.Kind)
	require.Len(t, decoded.Clusters, 2)
	assert.Len(t, decoded.Clusters[0].Findings, 2)
	assert.Equal(t, "alpha", decoded.Clusters[0].Metadata.Cluster)

	_, err = report.NewFleet([]*report.Report{alpha, clusterReport("alpha", start)})
	assert.ErrorContains(t, err, `two reports of cluster "alpha"`)
}

// TestSingleClusterHasNoClusterColumn: a report of one cluster prints as before.
func TestSingleClusterHasNoClusterColumn(t *testing.T) {
	var table bytes.Buffer
	require.NoError(t, clusterReport("alpha", time.Now(), "a1").Print(&table, report.Table))
	assert.True(t, strings.HasPrefix(table.String(), "RULE"), table.String())
	var page bytes.Buffer
	require.NoError(t, clusterReport("alpha", time.Now(), "a1").Print(&page, report.HTML))
	assert.NotContains(t, page.String(), "filter-cluster")
}
