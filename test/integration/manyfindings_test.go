package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// TestEveryStuckObjectIsReported: where an operator left a thousand objects stuck, the JSON report
// lists a finding of each rule for every one of them, as counted on the server; the table shows
// them as a few rows, each naming how many objects it stands for; --no-group shows a row each.
func TestEveryStuckObjectIsReported(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	const total = 1000
	seedOrphans(t, ns, total, func(i int) []string {
		if i%2 == 0 {
			return []string{syslogNGFinalizer}
		}
		return []string{"example.com/unknown-cleanup"}
	})
	list, err := syslogNGClient(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	stuck := map[string]bool{}
	for _, obj := range list.Items {
		if obj.GetDeletionTimestamp() != nil {
			stuck[obj.GetName()] = true
		}
	}
	require.Len(t, stuck, total)
	args := []string{"--include-namespaces", ns, "--min-terminating-age=0s", "--rules", rules.StuckTerminatingName + "," + rules.OrphanedFinalizersName}

	rep, stderr, code := runReport(t, args...)

	require.Equal(t, 0, code, stderr)
	byRule := map[string]map[string]bool{}
	for _, f := range rep.Findings {
		if byRule[f.Rule] == nil {
			byRule[f.Rule] = map[string]bool{}
		}
		byRule[f.Rule][f.Object.Name] = true
	}
	assert.Equal(t, stuck, byRule[rules.StuckTerminatingName], "a stuck-terminating finding for each object stuck")
	assert.Equal(t, stuck, byRule[rules.OrphanedFinalizersName], "an orphaned-finalizers finding for each")
	assert.Equal(t, 2*total, rep.Summary.Findings)

	table, stderr, code := runBinary(t, args...)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	assert.LessOrEqual(t, len(lines), 12, "a few rows:\n%s", table)
	assert.Contains(t, table, "SyslogNGConfig   "+ns+"/orphan-0000, orphan-0002, orphan-0004 and 497 more")
	assert.Contains(t, table, "2000 findings in ")

	each, stderr, code := runBinary(t, append(args, "--no-group")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1+2*total+2, strings.Count(each, "\n"), "a header, a row per finding, a blank line and the summary")
}
