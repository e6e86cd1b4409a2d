package report_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestReportChains(t *testing.T) {
	r := reporttest.Chained()
	assert.Equal(t, map[string]int{"dead-apiservices": 1, "orphaned-finalizers": 1, report.CauseUnexplained: 2}, r.Summary.StuckNamespaces)

	var out bytes.Buffer
	require.NoError(t, r.Print(&out, report.Table))
	table := strings.Split(out.String(), "\n")
	require.GreaterOrEqual(t, len(table), 10)
	assert.Equal(t, []string{
		"stuck-terminating | Namespace | logging",
		"dead-apiservices | └ APIService | v1.packages.operators.coreos.com",
		"orphaned-finalizers | └ SyslogNGConfig | logging/s1",
		"stuck-terminating | └ SyslogNGConfig | logging/s1",
		"stuck-terminating | Namespace | waiting",
		"orphaned-finalizers | └ SyslogNGConfig | waiting/s1",
		"orphaned-finalizers | ConfigMap | shop/c",
		"stuck-terminating | Namespace | empty",
	}, trimmed(table[1:9], 3), "the chain first, from the stuck namespace down to its causes, each object's findings together; then the rest in report order")
	assert.Contains(t, out.String(), "; stuck namespaces by root cause: dead-apiservices 1, orphaned-finalizers 1, unexplained 2;")

	out.Reset()
	require.NoError(t, r.Print(&out, report.JSON))
	assert.Contains(t, out.String(), `"blockedBy":[`)
	assert.Contains(t, out.String(), `"stuckNamespaces": {`)
}

// trimmed keeps the first n columns of table rows, which the table separates with three spaces
// or more, joined by " | ".
func trimmed(rows []string, n int) []string {
	var out []string
	for _, row := range rows {
		fields := columns.Split(row, n+1)
		out = append(out, strings.Join(fields[:min(n, len(fields))], " | "))
	}
	return out
}

var columns = regexp.MustCompile(` {3,}`)

func TestReportChainsNested(t *testing.T) {
	// A chain three deep indents each level further, and an object blocking two others shows once.
	r := reporttest.New(time.Now())
	ref := func(kind, name string) rules.ObjectRef {
		return rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: kind, Name: name, UID: k8stypes.UID(name)}
	}
	top, mid, root := ref("Namespace", "top"), ref("CR", "mid"), ref("APIService", "root")
	reporttest.Add(r, rules.Finding{Rule: "a", Object: root, Reason: "root"}, reporttest.Result{})
	reporttest.Add(r, rules.Finding{Rule: "b", Object: mid, Reason: "mid", BlockedBy: []rules.ObjectRef{root}}, reporttest.Result{})
	reporttest.Add(r, rules.Finding{Rule: "c", Object: top, Reason: "top", BlockedBy: []rules.ObjectRef{mid, root}}, reporttest.Result{})
	assert.Equal(t, []string{"top", "└ mid", "  └ root"}, r.RowNames())
}
