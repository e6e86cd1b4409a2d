package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// The policy that fences what the ServiceAccount creates and deletes, and its two refusals, as the
// API server words them.
const (
	createsAndDeletes = "ValidatingAdmissionPolicy 'operator-sweeper-creates-and-deletes-only-what-a-rule-may'"
	mayCreateOnly     = "operator-sweeper may create only Events, and in its namespace the Secrets of its pre-images and its signing key"
	mayDeleteOnly     = "operator-sweeper may delete only what a rule may"
)

// refusedByPolicy checks that err is the policy's refusal with message: the RBAC let the request
// through, and the policy stopped it.
func refusedByPolicy(t assert.TestingT, err error, message, what string) bool {
	return assert.Error(t, err, what) &&
		assert.True(t, apierrors.IsForbidden(err), "%s: %v", what, err) &&
		assert.Contains(t, err.Error(), createsAndDeletes, what) &&
		assert.Contains(t, err.Error(), message, what)
}

// refusedByRBAC checks that err is the RBAC's refusal of verb on resource: no role grants it, and
// the request never reached admission.
func refusedByRBAC(t assert.TestingT, err error, verb, resource, what string) bool {
	return assert.Error(t, err, what) &&
		assert.True(t, apierrors.IsForbidden(err), "%s: %v", what, err) &&
		assert.Contains(t, err.Error(), `cannot `+verb+` resource "`+resource+`"`, what) &&
		assert.NotContains(t, err.Error(), "ValidatingAdmissionPolicy", what)
}

// holdFinalizer keeps the tests' own objects Terminating; no sweep knows its owner.
const holdFinalizer = "e2e.operator-sweeper.io/hold"

// fenced are what TestAdmissionPolicyFencesCreatesAndDeletes asks the ServiceAccount to delete:
// RBAC and a webhook configuration with and without OLM's labels, a plain pod, and CatalogSource
// pods, bare and of a ReplicaSet, which it leaves Terminating on a finalizer of its own.
const fenced = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: NAMESPACE-plain}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: NAMESPACE-olm
  labels: {olm.owner: gone.v1.0.0, olm.owner.namespace: NAMESPACE, olm.owner.kind: ClusterServiceVersion}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: NAMESPACE-plain}
webhooks: []
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: NAMESPACE}
spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: catalog-bare
  namespace: NAMESPACE
  labels: {olm.catalogSource: operatorhubio-catalog}
  finalizers: [HOLD]
spec: {containers: [{name: registry-server, image: quay.io/operatorhubio/catalog:latest}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: catalog-of-a-replicaset
  namespace: NAMESPACE
  labels: {olm.catalogSource: operatorhubio-catalog}
  finalizers: [HOLD]
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: registry-5b6f7d, uid: 3f1c3c84-0000-4000-8000-000000000010, controller: true}]
spec: {containers: [{name: registry-server, image: quay.io/operatorhubio/catalog:latest}]}
`

// TestAdmissionPolicyFencesCreatesAndDeletes: with the base applied, the sweeper's ServiceAccount
// may delete what a rule may, and create its Events and its own Secrets, whatever its roles grant:
// a leaked token cannot delete RBAC, webhook configurations or pods OLM did not make for a CSV,
// nor a pod a ReplicaSet would replace, nor create a binding or a Secret to hold or read anything.
// Where the RBAC already refuses, a role granting more shows the policy refuses as well.
func TestAdmissionPolicyFencesCreatesAndDeletes(t *testing.T) {
	ctx := context.Background()
	deploy.Apply(t, testCluster, deploy.Render(t, "base"), false)
	saConfig, _ := deploy.ServiceAccountConfig(t, testCluster)
	sa, err := dynamic.NewForConfig(saConfig)
	require.NoError(t, err)
	ns := "e2e-trust-fences"
	require.NoError(t, testCluster.CreateNamespace(ctx, ns))
	objs, err := testCluster.Create(ctx, strings.ReplaceAll(cluster.Fill(fenced, ns), "HOLD", holdFinalizer))
	require.NoError(t, err)
	byName := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		byName[obj.GetKind()+" "+strings.TrimPrefix(obj.GetName(), ns+"-")] = obj
		t.Cleanup(func() { // released and deleted, whatever the test got to
			client, _, err := testCluster.Resource(obj)
			require.NoError(t, err)
			_, err = client.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err == nil {
				err = client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
			}
			if !apierrors.IsNotFound(err) {
				require.NoError(t, err)
			}
		})
	}
	for _, pod := range []string{"catalog-bare", "catalog-of-a-replicaset"} {
		terminating, err := testCluster.Delete(ctx, byName["Pod "+pod])
		require.NoError(t, err)
		require.NotNil(t, terminating.GetDeletionTimestamp(), "%s is Terminating, held by the test's finalizer", pod)
	}
	deleteAs := func(obj *unstructured.Unstructured, opts metav1.DeleteOptions) error {
		_, gvr, err := testCluster.Resource(obj)
		require.NoError(t, err)
		return sa.Resource(gvr).Namespace(obj.GetNamespace()).Delete(ctx, obj.GetName(), opts)
	}
	// Creates are dry runs: admission judges them as it judges a create, and one the fences let
	// through would leave nothing behind.
	createAs := func(manifest string) error {
		objs, err := cluster.Decode(manifest)
		require.NoError(t, err)
		require.Len(t, objs, 1)
		_, gvr, err := testCluster.Resource(objs[0])
		require.NoError(t, err)
		_, err = sa.Resource(gvr).Namespace(objs[0].GetNamespace()).Create(ctx, objs[0], metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	// The API server takes a while to load a new policy (see
	// TestAdmissionPolicyLimitsTheServiceAccount); the probe that waits for it is a dry run, so
	// that a delete let through before it is loaded does not take the object the test needs.
	plainRole := byName["ClusterRole plain"]
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		refusedByPolicy(c, deleteAs(plainRole, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}), mayDeleteOnly, "a ClusterRole OLM did not make")
	}, time.Minute, 200*time.Millisecond)

	// The role grants delete on every ClusterRole, webhook configuration and pod (olm-rbac's and
	// catalog-pods' needs): the policy alone tells a rule's from the rest.
	for what, obj := range map[string]*unstructured.Unstructured{
		"a ClusterRole OLM did not make":                                           plainRole,
		"a ValidatingWebhookConfiguration OLM did not make":                        byName["ValidatingWebhookConfiguration plain"],
		"a pod, not Terminating, not a CatalogSource's":                            byName["Pod plain"],
		"a Terminating CatalogSource pod a ReplicaSet would start again elsewhere": byName["Pod catalog-of-a-replicaset"],
	} {
		before := testCluster.Current(t, obj)
		refusedByPolicy(t, deleteAs(obj, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), mayDeleteOnly, what)
		if now := testCluster.Current(t, obj); assert.NotNil(t, now, what) {
			assert.Equal(t, before.GetResourceVersion(), now.GetResourceVersion(), "%s: left as it was", what)
		}
	}

	// Secrets: the role grants create in the sweeper's namespace, for its pre-images and key.
	const notItsOwn = `
apiVersion: v1
kind: Secret
metadata: {name: e2e-trust-not-a-pre-image, namespace: operator-sweeper}
stringData: {token: stolen}
`
	refusedByPolicy(t, createAs(notItsOwn), mayCreateOnly, "a Secret in its namespace that is neither a pre-image nor its key")
	// Elsewhere, and any binding, the role does not grant; a role that does shows the policy too.
	elsewhere := cluster.Fill(`
apiVersion: v1
kind: Secret
metadata:
  name: e2e-trust-not-a-pre-image
  namespace: NAMESPACE
  labels: {operator-sweeper.io/pre-image: "true", operator-sweeper.io/run: 20250101t000000z-00000000}
stringData: {token: stolen}
`, ns)
	binding := cluster.Fill(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: NAMESPACE-sweeper-for-an-intruder}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: operator-sweeper}
subjects: [{kind: ServiceAccount, name: intruder, namespace: NAMESPACE}]
`, ns)
	refusedByRBAC(t, createAs(elsewhere), "create", "secrets", "a Secret labelled as a pre-image, out of its namespace")
	refusedByRBAC(t, createAs(binding), "create", "clusterrolebindings", "a ClusterRoleBinding")

	more, err := testCluster.Create(ctx, cluster.Fill(`
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: NAMESPACE-more-than-the-rules-need}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [create]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterrolebindings], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: NAMESPACE-more-than-the-rules-need}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: NAMESPACE-more-than-the-rules-need}
subjects: [{kind: ServiceAccount, name: operator-sweeper, namespace: operator-sweeper}]
`, ns))
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, obj := range more {
			_, err := testCluster.Delete(ctx, obj)
			require.NoError(t, err)
		}
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) { // once the RBAC authorizer has the binding
		refusedByPolicy(c, createAs(elsewhere), mayCreateOnly, "a Secret labelled as a pre-image, out of its namespace, once granted")
		refusedByPolicy(c, createAs(binding), mayCreateOnly, "a ClusterRoleBinding, once granted")
	}, 30*time.Second, 200*time.Millisecond)

	// What the rules do passes: olm-rbac's delete, catalog-pods' force-delete.
	olmRole := byName["ClusterRole olm"]
	require.NoError(t, deleteAs(olmRole, metav1.DeleteOptions{}), "the RBAC OLM made for a CSV")
	assert.Nil(t, testCluster.Current(t, olmRole))
	bare := byName["Pod catalog-bare"]
	require.NoError(t, deleteAs(bare, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: ptr.To(bare.GetUID())}}),
		"a Terminating CatalogSource pod without another controller")
}

// helmReleaseCRD is Flux's HelmRelease as a minimal CRD: the sweeper needs its group, kind and
// finalizer, not its schema.
const helmReleaseCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: helmreleases.helm.toolkit.fluxcd.io}
spec:
  group: helm.toolkit.fluxcd.io
  scope: Namespaced
  names: {plural: helmreleases, singular: helmrelease, kind: HelmRelease, listKind: HelmReleaseList, shortNames: [hr]}
  versions: [{name: v2, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`

// helmRelease is a HelmRelease with a password in its values, as a chart's values often hold
// one, on helm-controller's finalizer.
const helmRelease = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: NAMESPACE, finalizers: [finalizers.fluxcd.io]}
spec:
  interval: 10m
  chart: {spec: {chart: podinfo, version: 6.x, sourceRef: {kind: HelmRepository, name: podinfo}}}
  values: {redis: {enabled: true, auth: {password: PASSWORD}}}
`

// markerAnnotation carries a random marker on the ClusterRole TestBodiesStayInTheCluster deletes.
const markerAnnotation = "e2e.operator-sweeper.io/marker"

// TestBodiesStayInTheCluster: the deployed sweeper keeps the pre-images of what it writes in
// Secrets of its namespace and prints none of their content, in no format, at no log level; yet
// restore, given nothing but the report (or the run's ID), brings the objects back whole: what it
// needs besides the report is in the cluster, where the objects were.
func TestBodiesStayInTheCluster(t *testing.T) {
	ctx := context.Background()
	password, marker := "pw-"+rand.Text(), "marker-"+rand.Text()
	leaksNothing := func(t *testing.T, what, output string) {
		t.Helper()
		assert.NotContains(t, output, password, "%s prints the HelmRelease's values", what)
		assert.NotContains(t, output, marker, "%s prints the ClusterRole's annotations", what)
	}

	// A HelmRelease Terminating, helm-controller gone (orphaned-finalizers releases it), and F1,
	// its CSV gone (olm-rbac deletes its RBAC), a marker in its ClusterRole.
	if _, err := testCluster.Create(ctx, helmReleaseCRD); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	nsFlux, nsF1 := "e2e-trust-flux", "e2e-trust-f1"
	for _, ns := range []string{nsFlux, nsF1} {
		require.NoError(t, testCluster.CreateNamespace(ctx, ns))
	}
	var release *unstructured.Unstructured
	require.EventuallyWithT(t, func(c *assert.CollectT) { // once the API server serves the CRD
		created, err := testCluster.Create(ctx, strings.ReplaceAll(cluster.Fill(helmRelease, nsFlux), "PASSWORD", password))
		if assert.NoError(c, err) {
			release = created[0]
		}
	}, 30*time.Second, 200*time.Millisecond)
	_, err := testCluster.Delete(ctx, release)
	require.NoError(t, err)
	f1, err := testCluster.SeedF1(ctx, nsF1)
	require.NoError(t, err)
	role := f1.Get("ClusterRole", nsF1+"-role")
	roleClient, _, err := testCluster.Resource(role)
	require.NoError(t, err)
	role, err = roleClient.Patch(ctx, role.GetName(), types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+markerAnnotation+`":"`+marker+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	cluster.AgeDebris()

	base := deploy.Render(t, "base")
	deploy.Apply(t, testCluster, base, false)
	_, kubeconfig := deploy.ServiceAccountConfig(t, testCluster)
	args := append(append(deploy.CronJobArgs(t, base), young...), "--kubeconfig", kubeconfig)
	mine := []string{
		"orphaned-finalizers HelmRelease " + nsFlux + "/podinfo",
		"olm-rbac ClusterRole /" + nsF1 + "-role",
		"olm-rbac ClusterRoleBinding /" + nsF1 + "-binding",
		"olm-rbac ValidatingWebhookConfiguration /" + nsF1 + "-webhook",
		"orphaned-finalizers ClusterServiceVersion " + nsF1 + "/etcdoperator.v0.9.4",
	}

	// A server-side rehearsal, as a table: what an admin reads on a terminal.
	stdout, stderr, code := sweeperBinary.Run(t, append(slices.Clone(args), "--dry-run=server", "-o", "table")...)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "podinfo", "the table lists the HelmRelease")
	leaksNothing(t, "the table", stdout)
	leaksNothing(t, "the logs of the rehearsal", stderr)

	// The CronJob's run, as the ServiceAccount.
	stdout, stderr, code = sweeperBinary.Run(t, args...)
	require.Equal(t, 0, code, stderr)
	leaksNothing(t, "the JSON report", stdout)
	leaksNothing(t, "the JSON logs", stderr)
	var swept report.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &swept), stdout)
	runID := swept.Metadata.RunID
	require.NotEmpty(t, runID)
	reportFile := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, os.WriteFile(reportFile, []byte(stdout), 0o600))

	found := findingsOf(&swept)
	secrets, err := testCluster.Kube.CoreV1().Secrets(cluster.SweeperNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: backup.PreImageLabel + "=true," + backup.RunLabel + "=" + runID})
	require.NoError(t, err)
	kept := map[string]corev1.Secret{}
	for _, s := range secrets.Items {
		kept[s.Name] = s
	}
	for _, key := range mine {
		f, ok := found[key]
		if !assert.True(t, ok, "%s: a finding of the run", key) {
			continue
		}
		assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s %s %v", key, f.SkipReason, f.Error, f.Evidence)
		assert.NotEmpty(t, f.Signature, key)
		if !assert.NotNil(t, f.Before, "%s: where its pre-image is", key) {
			continue
		}
		name, ok := strings.CutPrefix(f.Before.Kept, "secret:"+cluster.SweeperNamespace+"/")
		if assert.True(t, ok, "%s: its pre-image is in a Secret of the sweeper's namespace, not %q", key, f.Before.Kept) {
			assert.Contains(t, kept, name, "%s: its record, labelled with the run", key)
			if f.Before.Entry != "" {
				// Kept with its batch's (docs/undo.md): records and bodies in one Secret.
				assert.Contains(t, kept[name].Data, "records.jsonl.gz", "%s: its record, in its batch's Secret", key)
				assert.Contains(t, kept[name].Data, "body-"+f.Before.Entry, "%s: its body, in its batch's Secret", key)
			} else {
				assert.Positive(t, f.Before.Parts, key)
				for i := range f.Before.Parts {
					assert.Contains(t, kept, name+"-"+strconv.Itoa(i), "%s: part %d of its body, labelled with the run", key, i)
				}
			}
		}
	}
	for name, s := range kept {
		assert.True(t, ptr.Deref(s.Immutable, false), "Secret %s is immutable", name)
		assert.Equal(t, corev1.SecretType(backup.SecretType), s.Type, name)
	}
	// The body is in the cluster, in the Secrets only: the password of the HelmRelease is there.
	if f := found[mine[0]]; f != nil && f.Before != nil {
		name, _ := strings.CutPrefix(f.Before.Kept, "secret:"+cluster.SweeperNamespace+"/")
		var body bytes.Buffer
		body.Write(kept[name].Data["body-"+f.Before.Entry]) // nothing when it has Secrets of its own
		for i := range f.Before.Parts {
			body.Write(kept[name+"-"+strconv.Itoa(i)].Data["body"])
		}
		gz, err := gzip.NewReader(&body)
		require.NoError(t, err)
		plain, err := io.ReadAll(gz)
		require.NoError(t, err)
		assert.Contains(t, string(plain), password, "the HelmRelease's body, in the Secrets of its pre-image")
	}
	assert.Nil(t, testCluster.Current(t, release), "the HelmRelease is released, and gone")
	assert.Nil(t, testCluster.Current(t, role), "the ClusterRole is deleted")

	// restore --run reads the run from its Secrets; a dry run plans it.
	restoreRun := func(args ...string) *report.Report {
		t.Helper()
		stdout, stderr, code := sweeperBinary.Run(t, append([]string{"restore", "--kubeconfig", testCluster.Kubeconfig, "-o", "json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		leaksNothing(t, "restore "+strings.Join(args, " "), stdout+stderr)
		var rep report.Report
		require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
		return &rep
	}
	undone := func(rep *report.Report) map[string]report.Outcome {
		outcomes := map[string]report.Outcome{}
		for key, f := range findingsOf(rep) {
			outcomes[strings.TrimPrefix(key, "restore ")] = f.Outcome
		}
		return outcomes
	}
	planned := undone(restoreRun("--run", runID))
	applied := undone(restoreRun("--from", reportFile, "--dry-run=none"))
	for _, key := range mine {
		_, object, _ := strings.Cut(key, " ")
		assert.Equal(t, report.OutcomePlanned, planned[object], "restore --run %s plans %s", runID, object)
		assert.Equal(t, report.OutcomeApplied, applied[object], "restore --from the report undoes %s", object)
	}

	// Both back whole, from their bodies in the Secrets: the report holds none of it.
	if now := testCluster.Current(t, role); assert.NotNil(t, now, "the ClusterRole is back") {
		assert.Equal(t, marker, now.GetAnnotations()[markerAnnotation])
		assert.Equal(t, role.GetLabels(), now.GetLabels())
		assert.Equal(t, role.Object["rules"], now.Object["rules"])
	}
	if now := testCluster.Current(t, release); assert.NotNil(t, now, "the HelmRelease is back") {
		assert.Equal(t, release.Object["spec"], now.Object["spec"], "its values, its password among them")
		assert.Equal(t, []string{"finalizers.fluxcd.io"}, now.GetFinalizers())
		assert.Nil(t, now.GetDeletionTimestamp())
	}

	// Swept again, as YAML and with debug logs: the same writes, and still nothing of their bodies.
	for _, obj := range []*unstructured.Unstructured{release, f1.Get("ClusterServiceVersion", "etcdoperator.v0.9.4")} {
		_, err := testCluster.Delete(ctx, obj)
		require.NoError(t, err)
	}
	cluster.AgeDebris() // restore re-created them
	stdout, stderr, code = sweeperBinary.Run(t, append(slices.Clone(args), "-o", "yaml", "--log-level=debug")...)
	require.Equal(t, 0, code, stderr)
	leaksNothing(t, "the YAML report", stdout)
	leaksNothing(t, "the debug logs", stderr)
	var again report.Report
	require.NoError(t, yaml.Unmarshal([]byte(stdout), &again), stdout)
	foundAgain := findingsOf(&again)
	for _, key := range mine {
		if f := foundAgain[key]; assert.NotNil(t, f, key) {
			assert.Equal(t, report.OutcomeApplied, f.Outcome, "%s: %s %s %v", key, f.SkipReason, f.Error, f.Evidence)
		}
	}
}

// findingsOf are a report's findings by rule, kind, namespace/name.
func findingsOf(rep *report.Report) map[string]*report.FindingResult {
	out := map[string]*report.FindingResult{}
	for i, f := range rep.Findings {
		out[f.Rule+" "+f.Object.Kind+" "+f.Object.Namespace+"/"+f.Object.Name] = &rep.Findings[i]
	}
	return out
}
