package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// TestExplainANamespaceBlockedByADeadAPIService: a namespace whose deletion waits for the
// discovery of a group whose APIService is dead (its Service gone, and the CSV that registered it,
// and OLM). explain prints the chain the sweep's blockedBy says, down to the APIService and why it
// is dead, whether or not the sweep counts them yet: the namespace terminating for less than
// --min-terminating-age, the APIService unavailable for less than --min-age; and the preflight
// that would have prevented it.
func TestExplainANamespaceBlockedByADeadAPIService(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	svcNS := testCluster.NewNamespace(t, "svc")
	api := registerAPIService(t, svcNS, fill(olmLabels, svcNS, ""))
	create(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: NAMESPACE}}`)
	require.NoError(t, testCluster.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	// What the namespace controller, which the test cluster does not run, says of such a namespace.
	n, err := testCluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = append(n.Status.Conditions, corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Reason: "DiscoveryFailed",
		Message: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: widgets.sweeper-test.io/v1: stale GroupVersion discovery: widgets.sweeper-test.io/v1"})
	_, err = testCluster.Kube.CoreV1().Namespaces().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)

	// The sweep's report: the namespace is blocked by the APIService.
	rep, stderr, code := runReport(t, "--min-terminating-age=0s")
	require.Equal(t, 0, code, stderr)
	namespace := &unstructured.Unstructured{}
	namespace.SetKind("Namespace")
	namespace.SetName(ns)
	namespace.SetUID(n.UID)
	stuck := findingAbout(t, rep, rules.StuckTerminatingName, namespace)
	assert.Contains(t, uids(stuck.BlockedBy), api.GetUID())

	for _, tt := range []struct {
		name string
		args []string
		// namespace and apiService are the thresholds each is below, "" for none.
		namespace, apiService *regexp.Regexp
	}{
		{name: "both counted", args: []string{"--min-terminating-age=0s", "--min-age=0s"}},
		{name: "the APIService unavailable for less than --min-age", args: []string{"--min-terminating-age=0s"},
			apiService: regexp.MustCompile(`\n      not yet reported by a sweep: what it rests on changed less than the 10m0s --min-age ago; without thresholds, the rules say:\n      dead-apiservices `)},
		{name: "both younger than their thresholds",
			namespace:  regexp.MustCompile(`^Namespace \S+\n  not yet counted as stuck: terminating for \d+s of the 15m0s --min-terminating-age; without thresholds, the rules say:\n  stuck-terminating `),
			apiService: regexp.MustCompile(`\n      not yet reported by a sweep: what it rests on changed less than the 10m0s --min-age ago; without thresholds, the rules say:\n`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, append([]string{"explain", "namespace/" + ns, "--log-level=warn"}, tt.args...)...)
			require.Equal(t, 0, code, stderr)
			assert.True(t, strings.HasPrefix(stdout, "Namespace "+ns+"\n"), stdout)
			assert.Contains(t, stdout, "    - namespace condition NamespaceDeletionDiscoveryFailure: Discovery failed for some groups, 1 failing: ")
			assert.Contains(t, stdout, "\n  blocked by:\n    APIService v1.widgets.sweeper-test.io\n")
			assert.Contains(t, stdout, "      dead-apiservices (warning): unavailable: Service "+svcNS+"/widgets-api is gone, and so is whoever registered it\n")
			assert.Contains(t, stdout, "        - Service "+svcNS+"/widgets-api: no such Service\n")
			assert.Contains(t, stdout, "        - ClusterServiceVersion "+svcNS+"/widgets.v1.0.0 no longer exists\n")
			assert.Contains(t, stdout, "\nprevent it next time: operator-sweeper preflight csv/widgets.v1.0.0 -n "+svcNS+" (before uninstalling the operator)\n")
			assert.Contains(t, stdout, "\nerror (inventory): stale GroupVersion discovery: widgets.sweeper-test.io/v1\n")
			assert.NotContains(t, stdout, "no rule has")
			for what, below := range map[string]*regexp.Regexp{"the namespace": tt.namespace, "the APIService": tt.apiService} {
				if below != nil {
					assert.Regexp(t, below, stdout, what)
				}
			}
			if tt.apiService == nil {
				assert.Contains(t, stdout, "        with --dry-run=none: Delete, would be skipped (opt-in): set rules.dead-apiservices.delete to act\n")
				assert.NotContains(t, stdout, "not yet")
			} else {
				assert.NotContains(t, stdout, "with --dry-run=none", "nothing would be done yet")
			}
		})
	}
}

// explainMapping is a config file that maps the finalizer explain.test.operator-sweeper.io/cleanup
// to Deployment NAMESPACE/widget-operator.
func explainMapping(t *testing.T, namespace string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(fill(`
finalizers:
- pattern: "explain.test.operator-sweeper.io/*"
  controllers: [{kind: Deployment, namespace: NAMESPACE, name: widget-operator}]
  consequence: local
`, namespace, "")), 0o600))
	return file
}

const (
	explainFinalizer = "explain.test.operator-sweeper.io/cleanup"
	// heldConfigMap waits on explainFinalizer.
	heldConfigMap = `{apiVersion: v1, kind: ConfigMap, metadata: {name: held, namespace: NAMESPACE, finalizers: [explain.test.operator-sweeper.io/cleanup]}}`
	// widgetOperator removes explainFinalizer.
	widgetOperator = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: widget-operator, namespace: NAMESPACE}
spec:
  replicas: 1
  selector: {matchLabels: {app: widget-operator}}
  template:
    metadata: {labels: {app: widget-operator}}
    spec: {containers: [{name: c, image: busybox}]}
`
)

// TestExplainAYoungTerminatingObject: an object terminating for less than --min-terminating-age
// is no finding of a sweep, but explain says what it waits on, who removes that, and that it is
// not yet counted as stuck.
func TestExplainAYoungTerminatingObject(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	create(t, ns, widgetOperator)
	terminate(t, ns, heldConfigMap)
	config := explainMapping(t, ns)

	stdout, stderr, code := runBinary(t, "--config", config, "explain", "configmap/held", "-n", ns, "--log-level=warn")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, regexp.MustCompile(`^ConfigMap `+ns+`/held
  not yet counted as stuck: terminating for \d+s of the 15m0s --min-terminating-age; without thresholds, the rules say:
  orphaned-finalizers \(info\): owner still present, it will release `+explainFinalizer+`: Deployment `+ns+`/widget-operator
(    - .*\n)*  stuck-terminating \(info\): terminating for \d+s, waiting on `+explainFinalizer+`
`), stdout)
	assert.Contains(t, stdout, "    - "+explainFinalizer+`: controller mapping "explain.test.operator-sweeper.io/*"`+"\n")
	assert.Contains(t, stdout, "    - Deployment "+ns+"/widget-operator matches name widget-operator in namespace "+ns+" and runs (1 desired replicas)\n")
	assert.Contains(t, stdout, "    - finalizers: "+explainFinalizer+"\n")
	assert.NotContains(t, stdout, "no rule has")
	assert.NotContains(t, stdout, "prevent it next time", "its operator runs")

	// It is no finding of the sweep: none to print as a report, none to fail on.
	stdout, stderr, code = runBinary(t, "--config", config, "explain", "configmap/held", "-n", ns, "-o", "json", "--fail-on-findings", "--log-level=warn")
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Empty(t, rep.Findings)
}

// TestExplainNamesThePreflight: an object stuck on the finalizer of an operator gone names the
// preflight of the controller its mapping names, to run before uninstalling it next time, in
// explain, stuck or not yet, and in the HTML report.
func TestExplainNamesThePreflight(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	terminate(t, ns, heldConfigMap)
	config := explainMapping(t, ns)
	hint := "prevent it next time: operator-sweeper preflight deployment/widget-operator -n " + ns + " --drain (before uninstalling the operator)"

	for name, args := range map[string][]string{"stuck": {"--min-terminating-age=0s"}, "not yet counted as stuck": nil} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runBinary(t, append([]string{"--config", config, "explain", "configmap/held", "-n", ns, "--log-level=warn"}, args...)...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout, "  orphaned-finalizers (warning): operator gone; releasing "+explainFinalizer+"\n")
			assert.Contains(t, stdout, "    - no Deployment matches name widget-operator in namespace "+ns+"\n")
			assert.True(t, strings.HasSuffix(stdout, "\n"+hint+"\n"), stdout)
		})
	}

	stdout, stderr, code := runBinary(t, "--config", config, "--include-namespaces", ns, "--min-terminating-age=0s", "-o", "html", "--log-level=warn")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `<p class="preflight">`+hint+`</p>`)
}
