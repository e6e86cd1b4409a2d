// Package integration tests operator-sweeper against a real kube-apiserver and etcd (see package
// cluster): the engine through its Go API, and the binary as a user runs it.
package integration

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

var (
	// testCluster is started once for the package; tests isolate themselves by namespace.
	testCluster *cluster.Cluster
	// sweeperBinary is operator-sweeper built for this run, as a developer builds it: version dev.
	sweeperBinary cluster.Binary
	// raceSweeper is operator-sweeper built with the race detector, for the fleet's tests: a
	// fleet sweeps its clusters in goroutines of their own.
	raceSweeper cluster.Binary
)

func TestMain(m *testing.M) {
	cluster.Main(m, &testCluster, cluster.Components{}, func(dir string) (err error) {
		if sweeperBinary, err = cluster.Build(dir, cluster.Stamp{}); err != nil {
			return err
		}
		raceSweeper, err = cluster.BuildRace(dir)
		return err
	})
}

// asAdmin is args with the test cluster's admin kubeconfig first: the binary runs as the
// cluster's admin, unless args say otherwise.
func asAdmin(args ...string) []string {
	return append([]string{"--kubeconfig", testCluster.Kubeconfig}, args...)
}

// runBinary runs operator-sweeper as the test cluster's admin.
func runBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return sweeperBinary.Run(t, asAdmin(args...)...)
}

// runReport runs operator-sweeper as the test cluster's admin, with a JSON report and only
// warnings logged, and decodes the report.
func runReport(t *testing.T, args ...string) (*report.Report, string, int) {
	t.Helper()
	return sweeperBinary.RunReport(t, asAdmin(append(args, "-o", "json", "--log-level=warn")...)...)
}

// fill replaces every "NAMESPACE" in manifests by namespace, then every "NAME" by name, if given.
func fill(manifests, namespace, name string) string {
	manifests = cluster.Fill(manifests, namespace)
	if name != "" {
		manifests = strings.ReplaceAll(manifests, "NAME", name)
	}
	return manifests
}

// create creates manifests (see fill). When the test ends, the objects are released from their
// finalizers and deleted, so that no test sees another's debris or operators.
func create(t testing.TB, namespace, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testCluster.Create(context.Background(), fill(manifests, namespace, ""))
	require.NoError(t, err)
	t.Cleanup(func() { remove(t, objs) })
	return objs
}

// terminate creates manifests (see fill) and deletes them, leaving objects with finalizers
// Terminating; they are removed when the test ends.
func terminate(t testing.TB, namespace, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs := create(t, namespace, manifests)
	deleted := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		after, err := testCluster.Delete(context.Background(), obj)
		require.NoError(t, err)
		deleted = append(deleted, after)
	}
	return deleted
}

// seeded returns a function that takes what a field case seeded and removes it when the test ends:
// seeded(t)(testCluster.SeedF4(ctx, ns)).
func seeded(t testing.TB) func(cluster.Seeded, error) cluster.Seeded {
	return func(s cluster.Seeded, err error) cluster.Seeded {
		t.Helper()
		t.Cleanup(func() { remove(t, s.Objects) })
		require.NoError(t, err)
		return s
	}
}

// remove releases and deletes objs, newest first. Each is retried for a while: a webhook
// configuration deleted a moment ago still admits requests until the API server's cache drops it.
func remove(t testing.TB, objs []*unstructured.Unstructured) {
	for _, obj := range slices.Backward(objs) {
		client, _, err := testCluster.Resource(obj)
		require.NoError(t, err)
		var last error
		gone := func() bool {
			_, err := client.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err == nil {
				err = client.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
			}
			last = err
			return err == nil || apierrors.IsNotFound(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !gone() && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		if !apierrors.IsNotFound(last) {
			assert.NoError(t, last, "remove %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		}
	}
}

// loggingConfigs is a controller mapping of the tests' own, as a site configures one for an
// operator of its own: logging-operator's syslog-ng and fluentd finalizers on SyslogNGConfigs and
// FluentdConfigs, which the tests of the engine seed in namespaces of their own, served by
// logging-operator's Deployment and cleaning up inside the cluster. Upstream puts those
// finalizers on Loggings only (the catalog's entries); here they stand for any namespaced
// object's finalizer whose operator the config file names.
func loggingConfigs() rules.FinalizerOwner {
	return rules.FinalizerOwner{
		Pattern:     "*.logging.banzaicloud.io/finalizer",
		Resources:   []string{"syslogngconfigs.logging.banzaicloud.io", "fluentdconfigs.logging.banzaicloud.io"},
		Controllers: []rules.Controller{{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"}},
		Consequence: rules.ConsequenceLocal,
	}
}

// loggingConfigsFile is a config file with loggingConfigs, and extra, for the binary.
func loggingConfigsFile(t testing.TB, extra string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`finalizers:
- pattern: "*.logging.banzaicloud.io/finalizer"
  resources: [syslogngconfigs.logging.banzaicloud.io, fluentdconfigs.logging.banzaicloud.io]
  controllers: [{kind: Deployment, selector: "app.kubernetes.io/name=logging-operator"}]
  consequence: local
`+extra), 0o600))
	return file
}

// loggingConfigDebris are a SyslogNGConfig and a FluentdConfig Terminating on the finalizers
// loggingConfigs maps.
const loggingConfigDebris = `
apiVersion: logging.banzaicloud.io/v1beta1
kind: SyslogNGConfig
metadata: {name: syslog-ng, namespace: NAMESPACE, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: FluentdConfig
metadata: {name: fluentd, namespace: NAMESPACE, finalizers: [fluentdconfig.logging.banzaicloud.io/finalizer]}
`

// testOptions are the defaults, with loggingConfigs and the namespace filter set to namespace,
// if any.
func testOptions(namespace string) options.Options {
	opts := options.Default()
	opts.Version = "test"
	opts.Cluster = "envtest"
	opts.Finalizers = []rules.FinalizerOwner{loggingConfigs()}
	if namespace != "" {
		opts.IncludeNamespaces = []string{namespace}
	}
	return opts
}

// newEngine returns an engine on the test cluster. rec, if not nil, records every request.
func newEngine(t testing.TB, opts options.Options, rec *recorder, clk clock.PassiveClock, ruleSet ...rules.Rule) *sweeper.Engine {
	t.Helper()
	require.NoError(t, opts.Validate())
	cfg := rest.CopyConfig(testCluster.Config)
	if rec != nil {
		cfg.WrapTransport = rec.wrap
	}
	var level slog.Level
	require.NoError(t, level.UnmarshalText([]byte(opts.LogLevel)))
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
	clients, err := sweeper.NewClients(cfg, opts.ClientConfig(), logger)
	require.NoError(t, err)
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &sweeper.Engine{Config: opts.EngineConfig(), Clients: clients, Rules: ruleSet, Clock: clk, Logger: logger}
}

// stuckTerminating is rule stuck-terminating with threshold minAge.
func stuckTerminating(t testing.TB, minAge time.Duration) rules.StuckTerminating {
	t.Helper()
	rule, err := rules.NewStuckTerminating(rules.StuckTerminatingArgs{}, rules.Settings{MinTerminatingAge: minAge})
	require.NoError(t, err)
	return rule
}

// orphanedFinalizers is rule orphaned-finalizers as the default options build it.
func orphanedFinalizers(t testing.TB) rules.OrphanedFinalizers {
	t.Helper()
	ruleSet, err := testOptions("").RuleSet()
	require.NoError(t, err)
	for _, rule := range ruleSet {
		if r, ok := rule.(rules.OrphanedFinalizers); ok {
			return r
		}
	}
	t.Fatal("no rule orphaned-finalizers")
	return rules.OrphanedFinalizers{}
}

// findingsIn returns the report's findings about objects in namespace (or named namespace).
func findingsIn(rep *report.Report, namespace string) []report.FindingResult {
	var out []report.FindingResult
	for _, f := range rep.Findings {
		if f.Object.Namespace == namespace || (f.Object.Kind == "Namespace" && f.Object.Name == namespace) {
			out = append(out, f)
		}
	}
	return out
}

// why is what a skipped or failed action's report says of it, as "reason: detail".
func why(f report.FindingResult) string {
	return string(cmp.Or(f.SkipReason, f.FailReason)) + ": " + f.Error
}

// recorder records the requests a client sends, and the answers' status. It can also play a
// controller that writes right before one of the client's requests (raceBefore).
type recorder struct {
	mu       sync.Mutex
	requests []request
	races    []race
}

// race is a change made on the server right before the first request of method to a path matching
// path is sent, once.
type race struct {
	method string
	path   *regexp.Regexp
	change func()
	done   bool
}

// raceBefore makes change, once, right before the next request of method whose path matches
// pattern is sent: the window between the sweeper's last read of an object and its write, which
// only the write's preconditions guard. Races registered for the same requests are run one per
// request, in order.
func (r *recorder) raceBefore(method, pattern string, change func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.races = append(r.races, race{method: method, path: regexp.MustCompile(pattern), change: change})
}

// raceFor returns the change to make before req, if any, and marks it done.
func (r *recorder) raceFor(req *http.Request) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.races {
		if rc := &r.races[i]; !rc.done && rc.method == req.Method && rc.path.MatchString(req.URL.Path) {
			rc.done = true
			return rc.change
		}
	}
	return nil
}

type request struct {
	Method    string
	Path      string
	Query     url.Values
	UserAgent string
	// Status is the answer's HTTP status, 0 if there was none.
	Status int
}

func (r *recorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if change := r.raceFor(req); change != nil {
			change()
		}
		resp, err := rt.RoundTrip(req)
		recorded := request{Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(), UserAgent: req.UserAgent()}
		if err == nil {
			recorded.Status = resp.StatusCode
		}
		r.mu.Lock()
		r.requests = append(r.requests, recorded)
		r.mu.Unlock()
		return resp, err
	})
}

// writes returns the requests with the method whose path matches pattern that the API server
// accepted: what was written.
func (r *recorder) writes(method, pattern string) []request {
	var out []request
	for _, req := range r.matching(method, pattern) {
		if req.Status >= 200 && req.Status < 300 {
			out = append(out, req)
		}
	}
	return out
}

// matching returns the recorded requests with the method whose path matches pattern.
func (r *recorder) matching(method, pattern string) []request {
	re := regexp.MustCompile(pattern)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, req := range r.requests {
		if req.Method == method && re.MatchString(req.Path) {
			out = append(out, req)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
