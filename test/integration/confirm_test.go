package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// The situations of "confirm before acting": each ended in a wrong write with the shipped
// config before the sweeper confirmed what its actions rest on.

// shippedOptions are the options of the shipped CronJob: manifests/base/config.yaml, applying.
func shippedOptions(t *testing.T) options.Options {
	t.Helper()
	opts, err := options.LoadConfigFile("../../manifests/base/config.yaml", testOptions(""))
	require.NoError(t, err)
	opts.DryRun = report.DryRunNone
	return opts
}

// findingAbout returns the report's finding of rule about obj.
func findingAbout(t *testing.T, rep *report.Report, rule string, obj *unstructured.Unstructured) report.FindingResult {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Rule == rule && f.Object.UID == obj.GetUID() {
			return f
		}
	}
	t.Fatalf("no %s finding about %s %s/%s", rule, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	return report.FindingResult{}
}

// createWhenServed creates manifests (see fill) once the API server serves their kinds: a CRD
// created a moment ago takes a moment to be served.
func createWhenServed(t *testing.T, namespace, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	require.Eventually(t, func() bool {
		var err error
		objs, err = testCluster.Create(context.Background(), fill(manifests, namespace, ""))
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "%s is not served", manifests)
	t.Cleanup(func() { remove(t, objs) })
	return objs
}

const olmRBAC = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: NAMESPACE-NAME
  labels: {olm.owner: NAME, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion}
rules: []
`

const plainCSV = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata: {name: NAME, namespace: NAMESPACE}
spec:
  displayName: etcd
  install: {strategy: deployment, spec: {deployments: []}}
`

// TestConfirmOLMRBACOfACSVInstalledMeanwhile: an operator is installed while the sweep runs. Its
// CSV is not in the view (CSVs were listed before ClusterRoles); its ClusterRole is. The CSV is
// read again before the delete: it exists, so the ClusterRole stays.
func TestConfirmOLMRBACOfACSVInstalledMeanwhile(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	role := create(t, ns, fill(olmRBAC, ns, "etcd.v2"))[0]
	rec := &recorder{}

	rep := sweepChanging(t, shippedOptions(t), rec, func() { create(t, ns, fill(plainCSV, ns, "etcd.v2")) })

	f := findingAbout(t, rep, "olm-rbac", role)
	assert.Equal(t, report.OutcomeSkipped, f.Outcome)
	assert.Equal(t, report.ReasonStale, f.SkipReason, f.Error)
	assert.Contains(t, f.Evidence, "re-checked live: ClusterServiceVersion "+ns+"/etcd.v2 exists now")
	assert.NotNil(t, testCluster.Current(t, role), "the new operator's RBAC stays")
	assert.Empty(t, rec.matching("DELETE", "/clusterroles/"+role.GetName()+"$"))
}

// TestConfirmDeleteCarriesTheResourceVersion: OLM re-points the ClusterRole to the CSV of an
// upgrade right before the delete reaches the server. The delete's resourceVersion precondition
// fails; the re-plan finds the new CSV.
func TestConfirmDeleteCarriesTheResourceVersion(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	role := create(t, ns, fill(olmRBAC, ns, "etcd.v1"))[0]
	rec := &recorder{}

	rec.raceBefore("DELETE", "/clusterroles/"+role.GetName()+"$", func() {
		create(t, ns, fill(plainCSV, ns, "etcd.v3"))
		patchObject(t, role, `{"metadata":{"labels":{"olm.owner":"etcd.v3"}}}`)
	})

	rep := sweepChanging(t, shippedOptions(t), rec, nil)

	f := findingAbout(t, rep, "olm-rbac", role)
	assert.Equal(t, report.OutcomeSkipped, f.Outcome, f.Error)
	assert.NotNil(t, testCluster.Current(t, role), "the upgraded operator's RBAC stays")
	deletes := rec.matching("DELETE", "/clusterroles/"+role.GetName()+"$")
	require.Len(t, deletes, 1, "one delete")
	assert.Equal(t, http.StatusConflict, deletes[0].Status, "refused: its resourceVersion precondition failed")
}

// TestConfirmNamespacedOLMRBACIsTheGarbageCollectorsJob: a Role owned by its CSV is collected
// with it; the sweeper reports it and leaves it alone.
func TestConfirmNamespacedOLMRBACIsTheGarbageCollectorsJob(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	role := create(t, ns, fill(`
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: etcd
  namespace: NAMESPACE
  labels: {olm.owner: etcd.v1, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion}
  ownerReferences: [{apiVersion: operators.coreos.com/v1alpha1, kind: ClusterServiceVersion, name: etcd.v1, uid: 3f1c3c84-0000-4000-8000-000000000001}]
rules: []
`, ns, ""))[0]

	rep := sweep(t, shippedOptions(t), nil)

	f := findingAbout(t, rep, "olm-rbac", role)
	assert.Nil(t, f.Action, "reported, not acted on")
	assert.NotNil(t, testCluster.Current(t, role))
}

// packageServer is OLM's own CSV: it has no Subscription, and runs.
const packageServer = `
apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: packageserver
  namespace: NAMESPACE
  labels: {olm.version: v0.28.0}
spec:
  displayName: Package Server
  install: {strategy: deployment, spec: {deployments: []}}
status: {phase: Succeeded, reason: InstallSucceeded}
`

// TestConfirmLeftoversMustBeAbandoned: OLM's packageserver, and an operator that runs without a
// Subscription (its Deployment available), are unmanaged, not left behind: with CSVs and CRDs
// opted in, nothing goes.
func TestConfirmLeftoversMustBeAbandoned(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	server := create(t, ns, packageServer)[0]
	objs := create(t, ns, cluster.EtcdRunning)
	crd, csv := objs[0], objs[1]
	opts := shippedOptions(t)
	opts.RuleConfigs[rules.OperatorLeftoversName] = rules.RuleConfig{Args: rules.OperatorLeftoversArgs{Delete: []string{
		"ClusterServiceVersion.operators.coreos.com", "CustomResourceDefinition.apiextensions.k8s.io", "Operator.operators.coreos.com"}}}

	rep := sweep(t, opts, nil)

	for _, obj := range []*unstructured.Unstructured{server, crd, csv} {
		assert.NotNil(t, testCluster.Current(t, obj), "%s %s stays", obj.GetKind(), obj.GetName())
	}
	f := findingAbout(t, rep, "operator-leftovers", csv)
	assert.Equal(t, rules.SeverityInfo, f.Severity)
	assert.Nil(t, f.Action)
	assert.Equal(t, "unmanaged: no Subscription, but it runs", f.Reason)
	assert.Contains(t, f.Evidence, "ClusterServiceVersion "+ns+"/etcdoperator.v0.9.4 runs: its Deployments "+ns+"/etcd-operator are available")
	for _, f := range rep.Findings {
		if f.Rule == "operator-leftovers" && f.Object.UID == server.GetUID() {
			assert.Nil(t, f.Action, "OLM's own CSV is never acted on")
		}
	}
}

// rancherLogging is logging-operator repackaged: the rancher-logging chart names and labels it
// differently, and mirrors its image.
const rancherLogging = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: rancher-logging
  namespace: NAMESPACE
  labels: {app.kubernetes.io/name: rancher-logging, app.kubernetes.io/instance: rancher-logging}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: rancher-logging}}
  template:
    metadata: {labels: {app.kubernetes.io/name: rancher-logging}}
    spec: {containers: [{name: rancher-logging, image: "rancher/mirrored-kube-logging-logging-operator:4.10.0"}]}
`

// TestConfirmALiveOperatorIsNotJudgedGone: logging-operator runs as rancher-logging, or out of
// the cluster, holding its leader-election Lease: its finalizers stay.
func TestConfirmALiveOperatorIsNotJudgedGone(t *testing.T) {
	for name, alive := range map[string]string{
		"repackaged chart": rancherLogging,
		"outside the cluster": `
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: logging-operator.logging.banzaicloud.io, namespace: NAMESPACE}
spec: {holderIdentity: laptop_1f0c, leaseDurationSeconds: 15, renewTime: "RENEWED", acquireTime: "RENEWED"}
`,
	} {
		t.Run(name, func(t *testing.T) {
			operatorNS := testCluster.NewNamespace(t, "operator")
			// Renewed as the sweep runs: an hour from now, the sweep's clock.
			create(t, operatorNS, strings.ReplaceAll(alive, "RENEWED", time.Now().Add(time.Hour).UTC().Format(metav1.RFC3339Micro)))
			ns := testCluster.NewNamespace(t)
			debris := seeded(t)(testCluster.SeedF4(context.Background(), ns)).Objects

			rep := sweep(t, shippedOptions(t), nil)

			for _, obj := range debris {
				current := testCluster.Current(t, obj)
				require.NotNil(t, current, "%s is still there", obj.GetKind())
				assert.NotEmpty(t, current.GetFinalizers(), "%s keeps its finalizers", obj.GetKind())
				assert.Nil(t, findingAbout(t, rep, "orphaned-finalizers", obj).Action, obj.GetKind())
			}
		})
	}
}

// helmCRD is a CRD of group NAMESPACE.test.operator-sweeper.io installed by Helm release acme,
// with LABELS; and a Widget stuck on a finalizer of the CRD's group.
const helmCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.NAMESPACE.test.operator-sweeper.io
  labels: {app.kubernetes.io/managed-by: Helm, LABELS}
  annotations: {meta.helm.sh/release-name: acme, meta.helm.sh/release-namespace: NAMESPACE}
spec:
  group: NAMESPACE.test.operator-sweeper.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`

const stuckWidget = `
apiVersion: NAMESPACE.test.operator-sweeper.io/v1
kind: Widget
metadata: {name: w, namespace: NAMESPACE, finalizers: [NAMESPACE.test.operator-sweeper.io/cleanup]}
`

// TestConfirmHelmIsReadRight: the release of a CRD's chart is installed, stored as a ConfigMap, or
// as a Secret while the CRD still carries the labels of the OLM install it replaced: the Widget's
// finalizer stays.
func TestConfirmHelmIsReadRight(t *testing.T) {
	for name, tt := range map[string]struct{ labels, release string }{
		"configmap driver": {"helm.sh/chart: acme-1.0.0", `
apiVersion: v1
kind: ConfigMap
metadata: {name: sh.helm.release.v1.acme.v1, namespace: NAMESPACE, labels: {owner: helm, name: acme, status: deployed, version: "1"}}
data: {release: H4sI}
`},
		"moved from OLM to Helm": {"operators.coreos.com/acme.NAMESPACE: ''", `
apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.acme.v2, namespace: NAMESPACE, labels: {owner: helm, name: acme, status: deployed, version: "2"}}
type: helm.sh/release.v1
data: {release: SDRzSQ==}
`},
	} {
		t.Run(name, func(t *testing.T) {
			ns := testCluster.NewNamespace(t)
			create(t, ns, tt.release)
			create(t, ns, fill(strings.ReplaceAll(helmCRD, "LABELS", tt.labels), ns, ""))
			widget := createWhenServed(t, ns, stuckWidget)[0]
			widget, err := testCluster.Delete(context.Background(), widget)
			require.NoError(t, err)

			rep := sweep(t, shippedOptions(t), nil)

			current := testCluster.Current(t, widget)
			require.NotNil(t, current, "the Widget is still there")
			assert.Equal(t, []string{ns + ".test.operator-sweeper.io/cleanup"}, current.GetFinalizers())
			f := findingAbout(t, rep, "orphaned-finalizers", widget)
			assert.Nil(t, f.Action, f.Reason)
			assert.Equal(t, "owner still present, it will release "+ns+".test.operator-sweeper.io/cleanup: Helm release "+ns+"/acme", f.Reason)
		})
	}
}

// TestConfirmLeftoverOptInNamesTheGroup: an Operator without Subscription lists a core Service
// and a Knative Service; another Operator, whose Subscription exists, shares a ConfigMap with it.
// Opted in for Services and ConfigMaps, only the core Service goes.
func TestConfirmLeftoverOptInNamesTheGroup(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	group := "serving." + ns + ".test.operator-sweeper.io"
	create(t, ns, strings.ReplaceAll(fill(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: services.GROUP}
spec:
  group: GROUP
  scope: Namespaced
  names: {plural: services, singular: service, kind: Service, listKind: ServiceList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`, ns, ""), "GROUP", group))
	create(t, ns, cluster.ShopSubscription)
	objs := createWhenServed(t, ns, strings.NewReplacer("GROUP", group, "NAMESPACE", ns).Replace(`
apiVersion: GROUP/v1
kind: Service
metadata: {name: hello, namespace: NAMESPACE}
---
apiVersion: v1
kind: Service
metadata: {name: metrics, namespace: NAMESPACE}
spec: {ports: [{port: 8443}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shared, namespace: NAMESPACE}
---`+cluster.Operator("knative",
		"{apiVersion: GROUP/v1, kind: Service, name: hello, namespace: NAMESPACE}",
		"{apiVersion: v1, kind: Service, name: metrics, namespace: NAMESPACE}",
		"{apiVersion: v1, kind: ConfigMap, name: shared, namespace: NAMESPACE}")+
		"---"+cluster.Operator("shop", "{apiVersion: v1, kind: ConfigMap, name: shared, namespace: NAMESPACE}")))
	knative, core, shared := objs[0], objs[1], objs[2]
	opts := shippedOptions(t)
	opts.RuleConfigs[rules.OperatorLeftoversName] = rules.RuleConfig{Args: rules.OperatorLeftoversArgs{Delete: []string{"Service", "ConfigMap"}}}

	rep := sweep(t, opts, nil)

	assert.Nil(t, testCluster.Current(t, core), "the core Service is opted in and goes")
	assert.NotNil(t, testCluster.Current(t, knative), "Service means the core group only")
	assert.NotNil(t, testCluster.Current(t, shared), "shared with an operator whose Subscription exists")
	assert.Equal(t, "opt-in", string(findingAbout(t, rep, "operator-leftovers", knative).SkipReason))
	f := findingAbout(t, rep, "operator-leftovers", shared)
	assert.Nil(t, f.Action)
	assert.Contains(t, f.Evidence, "also listed by Operator shop."+ns+", whose Subscription "+ns+"/shop exists: shared, kept")
}

// lostNode is a node whose Ready condition is STATUS since SINCE, the last heartbeat at BEAT, in
// zone ZONE.
const lostNode = `
apiVersion: v1
kind: Node
metadata: {name: NAME, labels: {topology.kubernetes.io/zone: ZONE}}
status:
  conditions:
  - {type: Ready, status: "STATUS", reason: R, message: m, lastHeartbeatTime: BEAT, lastTransitionTime: SINCE}
`

func node(t *testing.T, name, zone, status string, since, beat time.Duration) {
	t.Helper()
	ago := func(d time.Duration) string { return time.Now().Add(-d).UTC().Format(time.RFC3339) }
	create(t, "", strings.NewReplacer("NAME", name, "ZONE", zone, "STATUS", status, "SINCE", ago(since), "BEAT", ago(beat)).Replace(lostNode))
}

// catalogPodOn leaves a CatalogSource pod Terminating on nodeName, a DisruptionTarget if asked.
func catalogPodOn(t *testing.T, ns, pod, nodeName string, disruptionTarget bool) *unstructured.Unstructured {
	t.Helper()
	created := create(t, ns, strings.NewReplacer("POD", pod, "NODE", nodeName).Replace(cluster.Fill(cluster.CatalogPod, ns)))[0]
	if disruptionTarget {
		client, _, err := testCluster.Resource(created)
		require.NoError(t, err)
		created.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}}}
		_, err = client.UpdateStatus(context.Background(), created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, testCluster.Kube.CoreV1().Pods(ns).Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}))
	return created
}

// TestConfirmLostNodesAreJudgedAsKubernetesJudgesThem: a node NotReady for seconds whose pod is a
// DisruptionTarget, a node Ready=False with a fresh heartbeat (its kubelet reports), and a zone
// where most nodes went Unknown at once: no pod is force-deleted.
func TestConfirmLostNodesAreJudgedAsKubernetesJudgesThem(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	healthy, outage := ns+"-a", ns+"-b"
	node(t, ns+"-flapping", healthy, "Unknown", 20*time.Second, 20*time.Second)
	node(t, ns+"-reporting", healthy, "False", time.Hour, 5*time.Second)
	node(t, ns+"-a-up", healthy, "True", time.Hour, 5*time.Second)
	for i := range 3 {
		node(t, fmt.Sprintf("%s-down-%d", ns, i), outage, "Unknown", 10*time.Minute, 10*time.Minute)
	}
	node(t, ns+"-b-up", outage, "True", time.Hour, 5*time.Second)
	pods := []*unstructured.Unstructured{
		catalogPodOn(t, ns, "on-flapping-node", ns+"-flapping", true),
		catalogPodOn(t, ns, "on-reporting-node", ns+"-reporting", false),
		catalogPodOn(t, ns, "in-outage", ns+"-down-0", false),
	}
	time.Sleep(1500 * time.Millisecond) // past the grace period

	opts := shippedOptions(t)
	opts.CatalogPodSlack.Duration, opts.MinAge.Duration = 0, 0 // the debris is seconds old
	ruleSet, err := opts.RuleSet()
	require.NoError(t, err)
	rep := newEngine(t, opts, nil, nil, ruleSet...).Run(context.Background())

	for _, pod := range pods {
		_, err := testCluster.Kube.CoreV1().Pods(ns).Get(context.Background(), pod.GetName(), metav1.GetOptions{})
		assert.NoError(t, err, "%s stays", pod.GetName())
	}
	for _, f := range ruleFindings(rep, "catalog-pods", ns) {
		assert.NotEqual(t, report.OutcomeApplied, f.Outcome, f.Object.Name)
		if f.Object.Name == "in-outage" {
			assert.Equal(t, report.ReasonZoneOutage, f.SkipReason, f.Error)
		}
	}
}

// TestConfirmAgesAreMeasuredAgainstTheServersClock: the sweeper's clock is an hour ahead of the
// API server's (here the server's answers say so). A node that went Unknown ten minutes ago by
// the sweeper's clock has, by the server's, not yet: its pod stays.
func TestConfirmAgesAreMeasuredAgainstTheServersClock(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	node(t, ns+"-lost", ns, "Unknown", 10*time.Minute, 10*time.Minute)
	for i := range 3 {
		node(t, fmt.Sprintf("%s-up-%d", ns, i), ns, "True", time.Hour, 5*time.Second)
	}
	pod := catalogPodOn(t, ns, "on-lost-node", ns+"-lost", false)
	time.Sleep(1500 * time.Millisecond) // past the grace period

	opts := shippedOptions(t)
	opts.CatalogPodSlack.Duration, opts.MinAge.Duration = 0, 0
	ruleSet, err := opts.RuleSet()
	require.NoError(t, err)
	cfg := rest.CopyConfig(testCluster.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Header.Set("Date", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))
			}
			return resp, err
		})
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	clients, err := sweeper.NewClients(cfg, opts.ClientConfig(), logger)
	require.NoError(t, err)
	require.NoError(t, clients.Ping(context.Background(), cfg.Host))
	assert.InDelta(t, -time.Hour.Seconds(), time.Until(clients.Clock().Now()).Seconds(), 2, "the server's clock")

	rep := (&sweeper.Engine{Config: opts.EngineConfig(), Clients: clients, Rules: ruleSet, Logger: logger}).Run(context.Background())

	assert.NotNil(t, testCluster.Current(t, pod), "by the server's clock the pod's grace period has not even begun")
	for _, f := range ruleFindings(rep, "catalog-pods", ns) {
		assert.NotEqual(t, report.OutcomeApplied, f.Outcome)
	}
	assert.WithinDuration(t, time.Now().Add(-time.Hour), rep.Metadata.StartTime.Time, 5*time.Second, "the report's times are the server's")
}

// TestConfirmAControllerBackBetweenTwoWrites: two Loggings rest on the same fact, logging-operator
// gone. Right after the first is confirmed, logging-operator is installed again: the first release
// is sent (its check came before), the second is not — the fact is read again before each write,
// not reused from the first.
func TestConfirmAControllerBackBetweenTwoWrites(t *testing.T) {
	ctx := context.Background()
	ns := testCluster.NewNamespace(t)
	loggings := terminate(t, "", fill(`
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata: {name: NAMESPACE-a, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
spec: {controlNamespace: NAMESPACE}
---
apiVersion: logging.banzaicloud.io/v1beta1
kind: Logging
metadata: {name: NAMESPACE-b, finalizers: [syslogngconfig.logging.banzaicloud.io/finalizer]}
spec: {controlNamespace: NAMESPACE}
`, ns, ""))
	var operator []*unstructured.Unstructured
	t.Cleanup(func() { remove(t, operator) })
	rec := &recorder{}
	rec.raceBefore("PATCH", "/loggings/"+ns+"-a$", func() {
		var err error
		operator, err = testCluster.Create(ctx, fill(deployment(cluster.LoggingOperator, "1"), ns, ""))
		require.NoError(t, err)
	})
	opts := sweepOptions()
	opts.Rules = []string{rules.OrphanedFinalizersName}
	ruleSet, err := opts.RuleSet()
	require.NoError(t, err)
	rep := newEngine(t, opts, rec, clocktesting.NewFakePassiveClock(time.Now().Add(time.Hour)), ruleSet...).Run(ctx)

	first, second := findingAbout(t, rep, rules.OrphanedFinalizersName, loggings[0]), findingAbout(t, rep, rules.OrphanedFinalizersName, loggings[1])
	assert.Equal(t, report.OutcomeApplied, first.Outcome, why(first))
	assert.Equal(t, report.OutcomeSkipped, second.Outcome, why(second))
	assert.Equal(t, report.ReasonStale, second.SkipReason)
	assert.True(t, slices.ContainsFunc(second.Evidence, func(e string) bool {
		return strings.HasPrefix(e, `re-checked live: a controller of "syslogngconfig.logging.banzaicloud.io/finalizer" is there now`)
	}), "%v", second.Evidence)
	assert.Empty(t, rec.matching("PATCH", "/loggings/"+ns+"-b$"), "the second release was not sent")
	assert.Equal(t, []string{"syslogngconfig.logging.banzaicloud.io/finalizer"}, testCluster.Current(t, loggings[1]).GetFinalizers())
}
