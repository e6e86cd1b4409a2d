package sweeper

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// chainedReport has three stuck namespaces: one held by a CR on an orphaned finalizer and by a
// dead APIService, one by a CR whose controller runs (which explains nothing: it will finish),
// one by nothing; and a finding in no chain.
func chainedReport() *Report {
	r := newReport(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), DefaultOptions())
	ns := func(name string) rules.ObjectRef {
		return rules.ObjectRef{Resource: rules.Namespaces.GroupVersionResource, Kind: "Namespace", Name: name, UID: k8stypes.UID("ns-" + strings.ToLower(name))}
	}
	cr := rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1", Resource: "syslogngconfigs"},
		Kind: "SyslogNGConfig", Namespace: "logging", Name: "s1", UID: "cr"}
	api := rules.ObjectRef{Resource: rules.APIServices.GroupVersionResource, Kind: "APIService", Name: "v1.packages.operators.coreos.com", UID: "api"}
	other := rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: "ConfigMap", Namespace: "shop", Name: "c", UID: "cm"}
	waiting := cr
	waiting.Namespace, waiting.UID = "waiting", "cr-waiting"
	add := func(rule string, severity rules.Severity, action rules.Action, obj rules.ObjectRef, reason string, blockedBy ...rules.ObjectRef) {
		r.addFinding(rules.Finding{Rule: rule, Severity: severity, Action: action, Object: obj, Reason: reason, BlockedBy: blockedBy}, Result{Outcome: OutcomePlanned})
	}
	info, warning := rules.SeverityInfo, rules.SeverityWarning
	add("orphaned-finalizers", warning, rules.RemoveFinalizers{Finalizers: []string{"x"}}, cr, "operator gone")
	add("dead-apiservices", warning, nil, api, "Service olm/packageserver-service is gone")
	add("orphaned-finalizers", info, nil, other, "owner unknown")
	add("orphaned-finalizers", info, nil, waiting, "owner still present")
	add("stuck-terminating", info, nil, cr, "terminating for 1h")
	add("stuck-terminating", info, nil, ns("logging"), "terminating for 1h", api, cr)
	add("stuck-terminating", info, nil, ns("empty"), "terminating for 1h")
	add("stuck-terminating", info, nil, ns("waiting"), "terminating for 1h", waiting)
	r.countStuckNamespaces(everyNamespace)
	return r
}

func TestReportChains(t *testing.T) {
	r := chainedReport()
	assert.Equal(t, map[string]int{"dead-apiservices": 1, "orphaned-finalizers": 1, causeUnexplained: 2}, r.Summary.StuckNamespaces)

	var out bytes.Buffer
	require.NoError(t, r.Print(&out, OutputTable))
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
	require.NoError(t, r.Print(&out, OutputJSON))
	assert.Contains(t, out.String(), `"blockedBy": [`)
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
	r := newReport(time.Now(), DefaultOptions())
	ref := func(kind, name string) rules.ObjectRef {
		return rules.ObjectRef{Resource: rules.ConfigMaps.GroupVersionResource, Kind: kind, Name: name, UID: k8stypes.UID(name)}
	}
	top, mid, root := ref("Namespace", "top"), ref("CR", "mid"), ref("APIService", "root")
	r.addFinding(rules.Finding{Rule: "a", Object: root, Reason: "root"}, Result{})
	r.addFinding(rules.Finding{Rule: "b", Object: mid, Reason: "mid", BlockedBy: []rules.ObjectRef{root}}, Result{})
	r.addFinding(rules.Finding{Rule: "c", Object: top, Reason: "top", BlockedBy: []rules.ObjectRef{mid, root}}, Result{})
	var rows []string
	for _, row := range r.rows() {
		rows = append(rows, indent(row.depth)+r.Findings[row.finding].Object.Name)
	}
	assert.Equal(t, []string{"top", "└ mid", "  └ root"}, rows)
}
