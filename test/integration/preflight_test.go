package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

// The gizmo operator: a Deployment whose pods two Services select, one behind a validating
// webhook, one behind an APIService; a CRD whose Gizmos carry the operator's finalizer; a Helm
// release record whose manifest holds them all.
const (
	gizmoFinalizer = "gizmos.preflight-test.io/finalizer"
	gizmoCRD       = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.preflight-test.io}
spec:
  group: preflight-test.io
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	gizmoOperator = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gizmo-operator
  namespace: NAMESPACE
  labels: {app.kubernetes.io/name: gizmo-operator}
spec:
  replicas: 1
  selector: {matchLabels: {app: gizmo-operator}}
  template:
    metadata: {labels: {app: gizmo-operator}}
    spec: {containers: [{name: manager, image: example.com/gizmo-operator:1.0.0}]}
---
apiVersion: v1
kind: Service
metadata: {name: gizmo-webhook, namespace: NAMESPACE}
spec: {selector: {app: gizmo-operator}, ports: [{port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: widgets-api, namespace: NAMESPACE}
spec: {selector: {app: gizmo-operator}, ports: [{port: 443}]}
`
	// gizmoWebhook matches only the creation of Gizmos: the test's own writes pass it.
	gizmoWebhook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: gizmo-validator-NAMESPACE}
webhooks:
- name: gizmos.preflight-test.io
  clientConfig: {service: {namespace: NAMESPACE, name: gizmo-webhook, path: /validate}}
  rules: [{apiGroups: [preflight-test.io], apiVersions: ["*"], operations: [CREATE], resources: [gizmos]}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
`
	gizmo = `
apiVersion: preflight-test.io/v1
kind: Gizmo
metadata: {name: NAME, namespace: NAMESPACE, finalizers: [gizmos.preflight-test.io/finalizer]}
`
	// gizmoMapping is the controller mapping of the gizmo operator's finalizer.
	gizmoMapping = `
finalizers:
- pattern: gizmos.preflight-test.io/finalizer
  controllers: [{kind: Deployment, selector: app.kubernetes.io/name=gizmo-operator}]
  consequence: local
`
)

// gizmoFixture is the gizmo operator, installed by Helm release "gizmo" in its namespace, and
// its Gizmos in two namespaces.
type gizmoFixture struct {
	operatorNS, sweeperNS string
	config                string
	gizmos                []*unstructured.Unstructured
	// unrelated are objects no preflight of gizmo may list or change.
	unrelated []*unstructured.Unstructured
	// installed are the operator's own objects, which a drain must not change.
	installed []*unstructured.Unstructured
}

func newGizmoFixture(t *testing.T) gizmoFixture {
	t.Helper()
	f := gizmoFixture{operatorNS: testCluster.NewNamespace(t, "op"), sweeperNS: testCluster.NewNamespace(t, "sweeper")}
	a, b := testCluster.NewNamespace(t, "a"), testCluster.NewNamespace(t, "b")
	crd := createGizmoCRD(t)
	operator := create(t, f.operatorNS, gizmoOperator)
	markRunning(t, testCluster, f.operatorNS, "gizmo-operator")

	for _, at := range []struct{ ns, name string }{{a, "g1"}, {a, "g2"}, {b, "g3"}} {
		f.gizmos = append(f.gizmos, createWhenServed(t, at.ns, fill(gizmo, at.ns, at.name))...)
	}
	// Unrelated: a Gizmo without finalizer, and a ConfigMap with a finalizer of no operator here.
	f.unrelated = append(create(t, b, fill(`{apiVersion: preflight-test.io/v1, kind: Gizmo, metadata: {name: plain, namespace: NAMESPACE}}`, b, "")),
		create(t, b, `{apiVersion: v1, kind: ConfigMap, metadata: {name: kept, namespace: NAMESPACE, finalizers: [other.example.com/keep]}}`)...)
	webhook := create(t, f.operatorNS, gizmoWebhook)
	api := registerAPIService(t, f.operatorNS, "{}")
	f.installed = slices.Concat(crd, operator, webhook, []*unstructured.Unstructured{api})

	// The release's history: revision 1 superseded (an empty manifest), revision 2 deployed.
	manifest := fill(gizmoOperator+"---"+gizmoWebhook+"---"+gizmoCRD+"---"+strings.ReplaceAll(deadAPIService, "LABELS", "{}"), f.operatorNS, "")
	f.installed = append(f.installed, helmRecord(t, f.operatorNS, "gizmo", 1, "superseded", ""), helmRecord(t, f.operatorNS, "gizmo", 2, "deployed", manifest))

	// What was created in the second a sweep began, or the one before, is never deleted: a drain
	// begins two seconds on.
	time.Sleep(2 * time.Second)
	f.config = filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(f.config, []byte(gizmoMapping), 0o600))
	return f
}

// createGizmoCRD creates the gizmo CRD, once that of an earlier test is gone.
func createGizmoCRD(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := testCluster.Dynamic.Resource(rules.CustomResourceDefinitions.GroupVersionResource).Get(context.Background(), "gizmos.preflight-test.io", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 200*time.Millisecond, "the gizmo CRD of an earlier test is gone")
	return create(t, "", gizmoCRD)
}

// helmRecord stores a revision of a Helm release as Helm's Secret driver does: data.release is
// the release's JSON, gzipped and base64-encoded.
func helmRecord(t *testing.T, namespace, release string, revision int, status, manifest string) *unstructured.Unstructured {
	t.Helper()
	body, err := json.Marshal(map[string]any{"name": release, "namespace": namespace, "version": revision, "manifest": manifest,
		"info": map[string]any{"status": status}, "chart": map[string]any{"metadata": map[string]any{"name": release}}})
	require.NoError(t, err)
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, err = zw.Write(body)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	encoded := base64.StdEncoding.EncodeToString(zipped.Bytes())
	name := "sh.helm.release.v1." + release + ".v" + strconv.Itoa(revision)
	secret := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": name, "namespace": namespace,
			"labels": map[string]any{"owner": "helm", "name": release, "status": status, "version": strconv.Itoa(revision)}},
		"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(encoded))},
	}
	doc, err := json.Marshal(secret)
	require.NoError(t, err)
	return create(t, namespace, string(doc))[0]
}

// preflightReport runs a preflight of the fixture with a JSON report.
func (f gizmoFixture) preflight(t *testing.T, target string, args ...string) (*report.Report, string, int) {
	t.Helper()
	return runReport(t, append([]string{"preflight", target, "-n", f.operatorNS, "--config", f.config, "--sweeper-namespace", f.sweeperNS}, args...)...)
}

// byObject are a report's findings by "Kind namespace/name".
func byObject(rep *report.Report) map[string]report.FindingResult {
	out := map[string]report.FindingResult{}
	for _, f := range rep.Findings {
		out[f.Object.String()] = f
	}
	return out
}

// resourceVersions are the objects' resourceVersions now, by "Kind namespace/name".
func resourceVersions(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, obj := range objs {
		now := testCluster.Current(t, obj)
		out[obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName()] = now.GetResourceVersion()
	}
	return out
}

// TestPreflightListsWhatAnUninstallWouldBlock: a preflight of the operator's Deployment and of
// its Helm release lists every Gizmo, the webhook configuration, the APIService and the CRD, and
// nothing unrelated; it exits 3 and changes nothing.
func TestPreflightListsWhatAnUninstallWouldBlock(t *testing.T) {
	f := newGizmoFixture(t)
	before := resourceVersions(t, slices.Concat(f.gizmos, f.unrelated, f.installed))
	want := []string{
		"ValidatingWebhookConfiguration gizmo-validator-" + f.operatorNS,
		"APIService v1.widgets.sweeper-test.io",
		"CustomResourceDefinition gizmos.preflight-test.io",
	}
	for _, g := range f.gizmos {
		want = append(want, "Gizmo "+g.GetNamespace()+"/"+g.GetName())
	}
	for _, target := range []string{"deployment/gizmo-operator", "helm/gizmo"} {
		t.Run(target, func(t *testing.T) {
			rep, stderr, code := f.preflight(t, target)
			require.Equal(t, 3, code, "something would be blocked: exit 3\n%s", stderr)
			found := byObject(rep)
			for _, name := range want {
				finding, ok := found[name]
				if assert.True(t, ok, "%s is listed", name) {
					assert.Equal(t, rules.PreflightName, finding.Rule)
					assert.NotEmpty(t, finding.Evidence, "%s: evidence says why", name)
					assert.Nil(t, finding.Action, "%s: a preflight without --drain plans nothing", name)
				}
			}
			for name := range found {
				if !slices.Contains(want, name) {
					assert.True(t, strings.HasPrefix(name, "Namespace "), "unrelated %s is listed", name)
				}
			}
			for _, g := range f.gizmos {
				assert.Contains(t, found, "Namespace "+g.GetNamespace(), "its namespace's deletion would stick")
			}
			gizmo := found["Gizmo "+f.gizmos[0].GetNamespace()+"/"+f.gizmos[0].GetName()]
			assert.Contains(t, gizmo.Reason, gizmoFinalizer)
			webhook := found[want[0]]
			assert.Contains(t, strings.Join(webhook.Evidence, "\n"), "failurePolicy Fail")
			assert.Contains(t, strings.Join(webhook.Evidence, "\n"), "gizmo-webhook")
			crd := found[want[2]]
			if target == "helm/gizmo" {
				assert.Contains(t, crd.Reason, "deletes it, and its 4 custom resources with it", "Helm deletes a template's CRD")
			} else {
				assert.Contains(t, crd.Reason, "3 of its 4 custom resources hold a finalizer")
			}
		})
	}
	assert.Equal(t, before, resourceVersions(t, slices.Concat(f.gizmos, f.unrelated, f.installed)), "a preflight changes nothing")
}

// TestPreflightBadTargets: an unknown type, release or workload, a release uninstalled (with its
// history kept), are bad input, exit 2.
func TestPreflightBadTargets(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	helmRecord(t, ns, "gone", 1, "uninstalled", "")
	for _, args := range [][]string{
		{"preflight", "helm/gone", "-n", ns},
		{"preflight", "helm/nothing", "-n", ns},
		{"preflight", "deployment/nothing", "-n", ns},
		{"preflight", "subscription/nothing", "-n", ns},
		{"preflight", "configmap/x", "-n", ns},
		{"preflight", "helm/x"},
		{"preflight", "helm", "-n", ns},
	} {
		stdout, stderr, code := runBinary(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
		assert.Empty(t, stdout, "%v", args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "%v: one line: %s", args, stderr)
	}
}

// TestPreflightDrain: the default dry run plans the deletes and sends none; --dry-run=none with
// nothing to finalize times out, exit 1, every finalizer in place; with a controller that
// finalizes, every Gizmo goes, exit 0, and nothing else changes.
func TestPreflightDrain(t *testing.T) {
	f := newGizmoFixture(t)
	others := slices.Concat(f.unrelated, f.installed)
	before := resourceVersions(t, slices.Concat(f.gizmos, others))

	rep, stderr, code := f.preflight(t, "helm/gizmo", "--drain")
	require.Equal(t, 3, code, stderr)
	for _, g := range f.gizmos {
		finding := byObject(rep)["Gizmo "+g.GetNamespace()+"/"+g.GetName()]
		require.NotNil(t, finding.Action, "the drain plans the delete of %s", g.GetName())
		assert.Equal(t, "Delete", finding.Action.Type)
		assert.Equal(t, report.OutcomePlanned, finding.Outcome)
	}
	assert.Equal(t, before, resourceVersions(t, slices.Concat(f.gizmos, others)), "the default dry run changes nothing")

	rep, stderr, code = f.preflight(t, "helm/gizmo", "--drain", "--dry-run=none", "--drain-timeout=3s")
	require.Equal(t, 1, code, "nothing finalizes: what was deleted stays\n%s", stderr)
	for _, g := range f.gizmos {
		finding := byObject(rep)["Gizmo "+g.GetNamespace()+"/"+g.GetName()]
		assert.Equal(t, report.OutcomeFailed, finding.Outcome, g.GetName())
		assert.Equal(t, report.ReasonStayed, finding.FailReason, g.GetName())
		assert.Contains(t, finding.Error, gizmoFinalizer)
		now := testCluster.Current(t, g)
		assert.Equal(t, []string{gizmoFinalizer}, now.GetFinalizers(), "a drain never removes a finalizer")
		assert.NotNil(t, now.GetDeletionTimestamp(), "%s was deleted", g.GetName())
	}
	assert.Equal(t, resourceVersionsExcept(before, f.gizmos), resourceVersions(t, others), "nothing else changed")
}

// TestPreflightDrainFinalized: with the operator finalizing what is deleted, a drain deletes
// every Gizmo and waits until they are gone, exit 0; nothing else changes.
func TestPreflightDrainFinalized(t *testing.T) {
	f := newGizmoFixture(t)
	others := slices.Concat(f.unrelated, f.installed)
	before := resourceVersions(t, others)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go finalizeDeleted(ctx, gizmoResource(), f.gizmos)
	rep, stderr, code := f.preflight(t, "deployment/gizmo-operator", "--drain", "--dry-run=none", "--drain-timeout=1m")
	require.Equal(t, 0, code, "drained\n%s", stderr)
	assert.Equal(t, 0, rep.Summary.Failed)
	assert.Equal(t, len(f.gizmos), rep.Summary.Applied)
	for _, g := range f.gizmos {
		_, err := testCluster.Dynamic.Resource(gizmoResource()).Namespace(g.GetNamespace()).Get(context.Background(), g.GetName(), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s is gone: %v", g.GetName(), err)
	}
	assert.Equal(t, before, resourceVersions(t, others), "nothing else changed")
}

func gizmoResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "preflight-test.io", Version: "v1", Resource: "gizmos"}
}

// resourceVersionsExcept is versions without the objects of objs.
func resourceVersionsExcept(versions map[string]string, objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for k, v := range versions {
		out[k] = v
	}
	for _, obj := range objs {
		delete(out, obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
	}
	return out
}

// finalizeDeleted removes the finalizers of the objs of resource being deleted, as their operator
// would after its cleanup, until ctx is done.
func finalizeDeleted(ctx context.Context, resource schema.GroupVersionResource, objs []*unstructured.Unstructured) {
	for ctx.Err() == nil {
		for _, g := range objs {
			client := testCluster.Dynamic.Resource(resource).Namespace(g.GetNamespace())
			now, err := client.Get(ctx, g.GetName(), metav1.GetOptions{})
			if err != nil || now.GetDeletionTimestamp() == nil || len(now.GetFinalizers()) == 0 {
				continue
			}
			_, _ = client.Patch(ctx, g.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPreflightDrainProtected: a mapping that guards data is drained only with
// --drain-protected; without it, nothing is deleted and the drain fails, exit 1.
func TestPreflightDrainProtected(t *testing.T) {
	f := newGizmoFixture(t)
	guarded := strings.Replace(gizmoMapping, "consequence: local", "consequence: guards\n  stands-for: the gizmos' volumes\n  remedy: back the volumes up", 1)
	require.NoError(t, os.WriteFile(f.config, []byte(guarded), 0o600))
	before := resourceVersions(t, f.gizmos)

	rep, stderr, code := f.preflight(t, "deployment/gizmo-operator", "--drain", "--dry-run=none", "--drain-timeout=1m")
	require.Equal(t, 1, code, "protected: not drained\n%s", stderr)
	for _, g := range f.gizmos {
		finding := byObject(rep)["Gizmo "+g.GetNamespace()+"/"+g.GetName()]
		assert.Equal(t, report.OutcomeSkipped, finding.Outcome, g.GetName())
		assert.Equal(t, report.ReasonOptIn, finding.SkipReason, g.GetName())
		assert.Contains(t, strings.Join(finding.Evidence, "\n"), "the gizmos' volumes")
	}
	assert.Equal(t, before, resourceVersions(t, f.gizmos), "nothing deleted")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go finalizeDeleted(ctx, gizmoResource(), f.gizmos)
	_, stderr, code = f.preflight(t, "deployment/gizmo-operator", "--drain", "--drain-protected", "--dry-run=none", "--drain-timeout=1m")
	require.Equal(t, 0, code, "drained, as asked\n%s", stderr)
}

// TestPreflightDrainWithoutAMapping: with no controller mapping, only the CRD's API domain ties
// the Gizmos to the release, which does not say which install finalizes them: a drain deletes
// none, reports each skipped (not-drainable), and exits 1, not 0 — the README's
// "preflight --drain --dry-run=none && helm uninstall" must not go on to leave them stuck.
func TestPreflightDrainWithoutAMapping(t *testing.T) {
	f := newGizmoFixture(t)
	require.NoError(t, os.WriteFile(f.config, []byte("finalizers: []\n"), 0o600))
	before := resourceVersions(t, f.gizmos)

	rep, stderr, code := f.preflight(t, "helm/gizmo", "--drain", "--dry-run=none", "--drain-timeout=1m")
	require.Equal(t, 1, code, "nothing drained: the Gizmos would be left blocked\n%s", stderr)
	assert.Contains(t, stderr, "3 custom resources were not drained")
	for _, g := range f.gizmos {
		finding := byObject(rep)["Gizmo "+g.GetNamespace()+"/"+g.GetName()]
		assert.Equal(t, report.OutcomeSkipped, finding.Outcome, g.GetName())
		assert.Equal(t, report.ReasonNotDrainable, finding.SkipReason, g.GetName())
		assert.Contains(t, finding.Error, "only a controller mapping says which workload finalizes it")
	}
	assert.Equal(t, before, resourceVersions(t, f.gizmos), "nothing deleted")
}

// TestPreflightCSVWithALongName: a CSV whose name is no label value (over 63 characters) labels
// nothing; its preflight walks the cluster and prints its report rather than failing, with no
// report, on a selector the client refuses. (Exit 0 or 1: the walk of this shared cluster may meet
// another test's dead APIService.)
func TestPreflightCSVWithALongName(t *testing.T) {
	ns := testCluster.NewNamespace(t)
	name := "a-very-long-operator-name-that-its-authors-did-not-keep-short.v1.2.3"
	require.Greater(t, len(name), 63)
	createWhenServed(t, ns, fill(plainCSV, ns, name))
	rep, stderr, code := runReport(t, "preflight", "csv/"+name, "-n", ns) // fails t if no report is printed
	assert.Contains(t, []int{0, 1}, code, stderr)
	assert.NotContains(t, stderr, "must be no more than 63")
	for _, e := range rep.Errors {
		assert.NotContains(t, e.Message, name, "no error about the CSV")
	}
}
