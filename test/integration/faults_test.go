package integration

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// The binary against a flaky control plane: a fault-injecting TLS proxy (cluster.FaultProxy)
// between it and the API server answers reads 503 and 429, expires a list's continue token,
// stalls a list past --request-timeout, and resets the connection after a PATCH reached the
// server. Every run ends with a complete, correct report, or one that names precisely what it
// could not observe; and nothing is written on evidence that was not fully observed.

const (
	// faultSyslogNGs are more than two pages of --page-size=5: a list with a second page to expire.
	faultSyslogNGs = 12
	faultFluentds  = 3
	faultPageSize  = 5
	// faultStall is how long the stalled list is held: past every attempt of --request-timeout.
	faultStall          = 10 * time.Second
	faultRequestTimeout = 3 * time.Second
)

// faultDebris is what each run cleans up: logging-operator's configs stuck Terminating on its
// finalizers after `helm uninstall` (F4), in two resources, many of one.
type faultDebris struct {
	ns       string
	syslogs  []*unstructured.Unstructured
	fluentds []*unstructured.Unstructured
}

func (d faultDebris) all() []*unstructured.Unstructured {
	return append(append([]*unstructured.Unstructured{}, d.syslogs...), d.fluentds...)
}

// paths of the lists and objects of the debris, as regular expressions on a request's path.
func (d faultDebris) syslogList() string {
	return "/namespaces/" + regexp.QuoteMeta(d.ns) + "/syslogngconfigs$"
}
func (d faultDebris) fluentdList() string {
	return "/namespaces/" + regexp.QuoteMeta(d.ns) + "/fluentdconfigs$"
}
func (d faultDebris) syslogObjects() string {
	return "/namespaces/" + regexp.QuoteMeta(d.ns) + "/syslogngconfigs/"
}
func (d faultDebris) fluentdObjects() string {
	return "/namespaces/" + regexp.QuoteMeta(d.ns) + "/fluentdconfigs/"
}

func seedFaultDebris(t *testing.T) faultDebris {
	t.Helper()
	d := faultDebris{ns: testCluster.NewNamespace(t)}
	var manifests []string
	for i := range faultSyslogNGs {
		manifests = append(manifests, fmt.Sprintf(`
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: syslog-ng-%02d, namespace: NAMESPACE, finalizers: [%s]}
`, i, syslogNGFinalizer))
	}
	for i := range faultFluentds {
		manifests = append(manifests, fmt.Sprintf(`
apiVersion: logging.banzaicloud.io/v1beta1
kind: FluentdConfig
metadata: {name: fluentd-%d, namespace: NAMESPACE, finalizers: [%s]}
`, i, fluentdFinalizer))
	}
	objs := terminate(t, d.ns, strings.Join(manifests, "---"))
	d.syslogs, d.fluentds = objs[:faultSyslogNGs], objs[faultSyslogNGs:]
	cluster.AgeDebris()
	return d
}

// faultRun is one run of the binary through the proxy.
type faultRun struct {
	rep report.Report
	// incomplete is summary.incomplete, nil if the report lacks it.
	incomplete *bool
	stdout     string
	stderr     string
	code       int
	took       time.Duration
}

// sweepThroughProxy runs the binary through proxy on the debris' namespace, applying, with small
// pages and a short request timeout. On failure, the test's log shows the run's log and what the
// proxy injected and let through as writes.
func sweepThroughProxy(t *testing.T, proxy *cluster.FaultProxy, d faultDebris, extra ...string) faultRun {
	t.Helper()
	kubeconfig, err := proxy.Kubeconfig(t.TempDir())
	require.NoError(t, err)
	// logging-operator runs, if at all, as a Deployment in the namespace (orphansConfig). Every
	// action is taken (no cap).
	args := append([]string{"--kubeconfig", kubeconfig, "--config", orphansConfig(t, d.ns),
		"--max-actions=0", "--log-format=json",
		"--dry-run=none", "-o", "json", fmt.Sprintf("--page-size=%d", faultPageSize),
		"--request-timeout=" + faultRequestTimeout.String(), "--include-namespaces", d.ns,
		"--min-terminating-age=0s", "--min-age=0s"}, extra...)

	start := time.Now()
	var run faultRun
	run.stdout, run.stderr, run.code = sweeperBinary.Run(t, args...)
	run.took = time.Since(start)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run took %s, exit %d; its log:\n%s", run.took, run.code, run.stderr)
			t.Logf("faults injected:\n%s", proxyLog(proxy.Injected()))
			t.Logf("writes:\n%s", proxyLog(proxyWrites(proxy, ".")))
		}
	})
	require.NoError(t, json.Unmarshal([]byte(run.stdout), &run.rep), "stdout: %s\nstderr: %s", run.stdout, run.stderr)
	var summary struct {
		Summary struct {
			Incomplete *bool `json:"incomplete"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(run.stdout), &summary))
	run.incomplete = summary.Summary.Incomplete
	return run
}

// startFaultProxy starts a proxy with faults for the test.
func startFaultProxy(t *testing.T, faults cluster.Faults) *cluster.FaultProxy {
	t.Helper()
	proxy, err := testCluster.StartFaultProxy(faults)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	return proxy
}

// proxyRequests returns the requests the proxy received with the method whose path matches
// pattern.
func proxyRequests(proxy *cluster.FaultProxy, method, pattern string) []cluster.ProxyRequest {
	re := regexp.MustCompile(pattern)
	var out []cluster.ProxyRequest
	for _, r := range proxy.Requests() {
		if r.Method == method && re.MatchString(r.Path) {
			out = append(out, r)
		}
	}
	return out
}

// proxyWrites returns the PATCH and DELETE requests whose path matches pattern that reached the
// API server.
func proxyWrites(proxy *cluster.FaultProxy, pattern string) []cluster.ProxyRequest {
	var out []cluster.ProxyRequest
	for _, method := range []string{"PATCH", "DELETE"} {
		for _, r := range proxyRequests(proxy, method, pattern) {
			if r.Forwarded {
				out = append(out, r)
			}
		}
	}
	return out
}

func proxyLog(requests []cluster.ProxyRequest) string {
	var b strings.Builder
	for _, r := range requests {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	return b.String()
}

// assertComplete: exit 0, the report complete and without errors.
func assertComplete(t *testing.T, run faultRun) {
	t.Helper()
	assert.Equal(t, 0, run.code, "exit code")
	if assert.NotNil(t, run.incomplete, "the report has summary.incomplete") {
		assert.False(t, *run.incomplete, "summary.incomplete")
	}
	assert.Empty(t, run.rep.Errors)
}

// assertReleased: each object's orphaned-finalizers finding was applied, and the object is gone
// from the API server (its only finalizer removed, it was deleted).
func assertReleased(t *testing.T, run faultRun, objs []*unstructured.Unstructured) {
	t.Helper()
	findings := map[string]report.FindingResult{}
	for _, f := range ruleFindings(&run.rep, "orphaned-finalizers", objs[0].GetNamespace()) {
		findings[f.Object.Kind+"/"+f.Object.Name] = f
	}
	for _, obj := range objs {
		f, ok := findings[obj.GetKind()+"/"+obj.GetName()]
		if assert.True(t, ok, "a finding for %s %s", obj.GetKind(), obj.GetName()) {
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s %s: %s", obj.GetKind(), obj.GetName(), why(f))
		}
		assert.Nil(t, testCluster.Current(t, obj), "%s %s is released and gone", obj.GetKind(), obj.GetName())
	}
}

// assertUntouched: the objects still carry their finalizers, and no write reached any object of
// the resource.
func assertUntouched(t *testing.T, proxy *cluster.FaultProxy, objects string, objs []*unstructured.Unstructured) {
	t.Helper()
	assert.Empty(t, proxyWrites(proxy, objects), "no write on what was not observed")
	for _, obj := range objs {
		got := testCluster.Current(t, obj)
		if assert.NotNil(t, got, "%s %s is still there", obj.GetKind(), obj.GetName()) {
			assert.Equal(t, obj.GetFinalizers(), got.GetFinalizers())
		}
	}
}

// listRestarts asserts that the list of path had a next page expired, and returns how many
// times it was then requested from the start (without a continue token).
func listRestarts(t *testing.T, proxy *cluster.FaultProxy, list string) int {
	t.Helper()
	gets := proxyRequests(proxy, "GET", list)
	var expired *cluster.ProxyRequest
	for i, r := range gets {
		if r.Fault == cluster.FaultExpired {
			expired = &gets[i]
		}
	}
	require.NotNil(t, expired, "a next page was expired:\n%s", proxyLog(gets))
	restarts := 0
	for _, r := range gets {
		if r.Seq > expired.Seq && r.Query.Get("continue") == "" {
			restarts++
		}
	}
	if restarts == 0 {
		t.Errorf("the list was not requested from the start after the 410:\n%s", proxyLog(gets))
	}
	return restarts
}

// assertStalledListGivenUp: the stalled list was tried more than once, each attempt given up by
// the client before the proxy let it through, and the report names it as not observed.
func assertStalledListGivenUp(t *testing.T, run faultRun, proxy *cluster.FaultProxy, list, resource string) {
	t.Helper()
	attempts := proxyRequests(proxy, "GET", list)
	assert.GreaterOrEqual(t, len(attempts), 2, "the stalled list is retried:\n%s", proxyLog(attempts))
	for _, r := range attempts {
		assert.Equal(t, cluster.FaultStalled, r.Fault)
		assert.False(t, r.Forwarded, "the attempt timed out after --request-timeout=%s, before the %s stall ended: %s", faultRequestTimeout, faultStall, r)
	}
	if assert.NotNil(t, run.incomplete, "the report has summary.incomplete") {
		assert.True(t, *run.incomplete, "summary.incomplete: a list failed")
	}
	if assert.Len(t, run.rep.Errors, 1, "exactly what was not observed: %+v", run.rep.Errors) {
		e := run.rep.Errors[0]
		assert.Equal(t, report.StageObserve, e.Stage)
		assert.Contains(t, e.Resource, resource)
		assert.False(t, e.Fatal)
	}
}

// assertResetWriteApplied: the connection was reset after one PATCH of an object reached the
// server and was applied there; the sweeper re-read the object instead of patching it again, and
// reports the action applied.
func assertResetWriteApplied(t *testing.T, run faultRun, proxy *cluster.FaultProxy, d faultDebris) {
	t.Helper()
	var reset []cluster.ProxyRequest
	for _, r := range proxy.Injected() {
		if r.Fault == cluster.FaultReset {
			reset = append(reset, r)
		}
	}
	require.Len(t, reset, 1, "one PATCH was reset")
	r := reset[0]
	require.Regexp(t, d.syslogObjects(), r.Path)
	require.True(t, r.Forwarded)
	require.Equal(t, 200, r.Status, "the PATCH was applied on the server")
	name := path.Base(r.Path)

	patches := proxyRequests(proxy, "PATCH", regexp.QuoteMeta(r.Path)+"$")
	assert.Len(t, patches, 1, "no second PATCH of %s:\n%s", name, proxyLog(patches))
	var reread bool
	for _, get := range proxyRequests(proxy, "GET", regexp.QuoteMeta(r.Path)+"$") {
		reread = reread || get.Seq > r.Seq
	}
	assert.True(t, reread, "%s was read again after the reset", name)
	var found bool
	for _, f := range ruleFindings(&run.rep, "orphaned-finalizers", d.ns) {
		if f.Object.Kind == "SyslogNGConfig" && f.Object.Name == name {
			found = true
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s", name, why(f))
		}
	}
	assert.True(t, found, "a finding for %s", name)
}

// TestFaultRandomReadErrors: a tenth of the reads answered 503 or 429 with Retry-After are
// retried; the report is complete and every orphan released.
func TestFaultRandomReadErrors(t *testing.T) {
	d := seedFaultDebris(t)
	proxy := startFaultProxy(t, cluster.Faults{ReadFaultRate: 0.1, Seed: 1})

	run := sweepThroughProxy(t, proxy, d)

	assertComplete(t, run)
	assertReleased(t, run, d.all())
	assert.Equal(t, len(d.all()), run.rep.Summary.Applied)
	counts := proxy.Counts()
	assert.Positive(t, counts.ByFault[cluster.FaultUnavailable], "503s were injected: %v", counts)
	assert.Positive(t, counts.ByFault[cluster.FaultThrottled], "429s were injected: %v", counts)
	t.Logf("%s, %d requests, faults %v", run.took, len(proxy.Requests()), counts.ByFault)
}

// TestFaultExpiredContinueToken: a 410 Expired on the second page of one list restarts that list
// once from its first page; the report is complete, each object in it once.
func TestFaultExpiredContinueToken(t *testing.T) {
	d := seedFaultDebris(t)
	proxy := startFaultProxy(t, cluster.Faults{ExpireSecondPage: d.syslogList()})

	run := sweepThroughProxy(t, proxy, d)

	assertComplete(t, run)
	assert.Equal(t, 1, listRestarts(t, proxy, d.syslogList()), "the list restarted once:\n%s", proxyLog(proxyRequests(proxy, "GET", d.syslogList())))
	assertReleased(t, run, d.all())
	assert.Equal(t, len(d.all()), run.rep.Summary.Applied, "each object once, though its list was read twice in part")
	assert.Len(t, ruleFindings(&run.rep, "orphaned-finalizers", d.ns), len(d.all()), "no object found twice")
}

// TestFaultStalledList: one resource's list stalls longer than every attempt of
// --request-timeout. The sweeper gives up on it within its retries, says so, writes nothing to
// that resource, and releases the orphans of the others.
func TestFaultStalledList(t *testing.T) {
	d := seedFaultDebris(t)
	proxy := startFaultProxy(t, cluster.Faults{Stall: d.fluentdList(), StallFor: faultStall})

	run := sweepThroughProxy(t, proxy, d, "--timeout=40s")

	assert.Less(t, run.took, 50*time.Second)
	assert.Equal(t, 0, run.code, "exit code: an incomplete observation is reported, not a failure")
	assertStalledListGivenUp(t, run, proxy, d.fluentdList(), "fluentdconfigs.logging.banzaicloud.io")
	assertUntouched(t, proxy, d.fluentdObjects(), d.fluentds)
	assertReleased(t, run, d.syslogs)
	assert.Equal(t, len(d.syslogs), run.rep.Summary.Applied)
}

// TestFaultConnectionResetAfterPatch: the connection is reset after a PATCH reached the server
// and was applied. The sweeper cannot know from the error; it reads the object again, finds it
// released, and reports the action applied without patching again.
func TestFaultConnectionResetAfterPatch(t *testing.T) {
	d := seedFaultDebris(t)
	proxy := startFaultProxy(t, cluster.Faults{ResetAfterWrite: d.syslogObjects()})

	run := sweepThroughProxy(t, proxy, d)

	assertComplete(t, run)
	assertResetWriteApplied(t, run, proxy, d)
	assertReleased(t, run, d.all())
	assert.Equal(t, len(d.all()), run.rep.Summary.Applied)
}

// TestFaultAllAtOnce: the four faults in one run, with the outcomes of each.
func TestFaultAllAtOnce(t *testing.T) {
	d := seedFaultDebris(t)
	proxy := startFaultProxy(t, cluster.Faults{
		ReadFaultRate:    0.1,
		Seed:             2,
		ExpireSecondPage: d.syslogList(),
		Stall:            d.fluentdList(),
		StallFor:         faultStall,
		ResetAfterWrite:  d.syslogObjects(),
	})

	run := sweepThroughProxy(t, proxy, d, "--timeout=40s")

	assert.Less(t, run.took, 50*time.Second)
	assert.Equal(t, 0, run.code, "exit code")
	assertStalledListGivenUp(t, run, proxy, d.fluentdList(), "fluentdconfigs.logging.banzaicloud.io")
	assertUntouched(t, proxy, d.fluentdObjects(), d.fluentds)
	listRestarts(t, proxy, d.syslogList()) // more than once if a restart drew a 503 or 429
	assertResetWriteApplied(t, run, proxy, d)
	assertReleased(t, run, d.syslogs)
	assert.Equal(t, len(d.syslogs), run.rep.Summary.Applied)
	t.Logf("%s, %d requests, faults %v", run.took, len(proxy.Requests()), proxy.Counts().ByFault)
}
