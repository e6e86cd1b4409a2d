package e2e

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/sweeper"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// fieldCases seeds F1 to F5 with OLM and logging-operator uninstalled, each in a namespace of
// its own, and returns them by name.
func fieldCases(t *testing.T) map[string]cluster.Seeded {
	t.Helper()
	ctx := context.Background()
	seeds := map[string]func(ns string) (cluster.Seeded, error){
		"f1": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF1(ctx, ns) },
		"f2": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF2(ctx, ns) },
		"f3": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF3(ctx, ns, false) },
		"f4": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF4(ctx, ns) },
		"f5": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF5(ctx, ns, time.Second) },
	}
	seeded := map[string]cluster.Seeded{}
	for name, seed := range seeds {
		ns := "e2e-" + name
		require.NoError(t, testCluster.CreateNamespace(ctx, ns))
		s, err := seed(ns)
		require.NoError(t, err, name)
		seeded[name] = s
	}
	cluster.AgeDebris() // and past the CatalogSource pods' one-second grace period
	return seeded
}

// findingKeys are the report's findings as rule, kind, namespace/name.
func findingKeys(rep *report.Report) []string {
	var keys []string
	for _, f := range rep.Findings {
		keys = append(keys, f.Rule+" "+f.Object.Kind+" "+f.Object.Namespace+"/"+f.Object.Name)
	}
	slices.Sort(keys)
	return keys
}

// noForbidden checks a report has no error and no failed action: nothing was refused.
func noForbidden(t *testing.T, rep *report.Report) {
	t.Helper()
	assert.Empty(t, rep.Errors)
	for _, f := range rep.Findings {
		assert.NotEqual(t, report.OutcomeFailed, f.Outcome, "%s %s/%s: %s", f.Object.Kind, f.Object.Namespace, f.Object.Name, f.Error)
		assert.NotEqual(t, report.ReasonStale, f.SkipReason, "%s %s/%s: the confirmation reads are allowed: %v", f.Object.Kind, f.Object.Namespace, f.Object.Name, f.Evidence)
		assert.NotContains(t, f.Error, "forbidden")
	}
}

// snapshot is the resourceVersion of every seeded object, or "gone".
func snapshot(t *testing.T, seeded map[string]cluster.Seeded) map[string]string {
	t.Helper()
	versions := map[string]string{}
	for _, s := range seeded {
		for _, obj := range s.Objects {
			version := "gone"
			if now := testCluster.Current(t, obj); now != nil {
				version = now.GetResourceVersion()
			}
			versions[obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName()] = version
		}
	}
	return versions
}

// young are the flags a sweep of the tests' debris needs: it is seconds old, and the shipped
// thresholds would keep it from being acted on.
var young = []string{"--min-terminating-age=0s", "--catalog-pod-slack=0s", "--min-age=0s"}

// TestDeployed deploys the report-only overlay, then the base, on a cluster seeded with every
// field case, and runs the CronJob's command as the ServiceAccount each time.
func TestDeployed(t *testing.T) {
	seeded := fieldCases(t)

	reportOnly := deploy.Render(t, "overlays/report-only")
	deploy.Apply(t, testCluster, reportOnly, false)
	saConfig, kubeconfig := deploy.ServiceAccountConfig(t, testCluster)
	args := append(append(deploy.CronJobArgs(t, reportOnly), young...), "--kubeconfig", kubeconfig)
	require.Contains(t, args, "--dry-run=client")

	before := snapshot(t, seeded)
	planned, stderr, code := sweeperBinary.RunReport(t, args...)
	require.Equal(t, 0, code, stderr)
	noForbidden(t, planned)
	assert.Equal(t, cluster.ReleaseStamp.Version, planned.Metadata.Version)
	assert.Equal(t, before, snapshot(t, seeded), "a report-only run changes nothing")
	// The report-only ServiceAccount cannot write.
	saClient, err := dynamic.NewForConfig(saConfig)
	require.NoError(t, err)
	logging := seeded["f4"].Get("Logging", "e2e-f4")
	_, gvr, err := testCluster.Resource(logging)
	require.NoError(t, err)
	_, err = saClient.Resource(gvr).Patch(context.Background(), logging.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the report-only role may not patch: %v", err)

	// The base: a server-side dry run is allowed every action and changes nothing.
	base := deploy.Render(t, "base")
	deploy.Apply(t, testCluster, base, false)
	args = append(append(deploy.CronJobArgs(t, base), young...), "--kubeconfig", kubeconfig)
	require.Contains(t, args, "--dry-run=none")
	rehearsed, stderr, code := sweeperBinary.RunReport(t, append(args, "--dry-run=server")...)
	require.Equal(t, 0, code, stderr)
	noForbidden(t, rehearsed)
	assert.Equal(t, findingKeys(planned), findingKeys(rehearsed), "the same findings as the report-only run")
	for _, f := range rehearsed.Findings {
		if f.Action != nil && f.Outcome != report.OutcomeSkipped {
			assert.Equal(t, report.OutcomeDryRun, f.Outcome, "%s %s/%s", f.Object.Kind, f.Object.Namespace, f.Object.Name)
		}
	}
	assert.Equal(t, before, snapshot(t, seeded), "a server-side dry run changes nothing")

	// The base for real: every expected action applied.
	applied, stderr, code := sweeperBinary.RunReport(t, args...)
	require.Equal(t, 0, code, stderr)
	noForbidden(t, applied)
	outcomes, why := map[string]report.Outcome{}, map[string]string{}
	for _, f := range applied.Findings {
		if f.Action != nil {
			key := f.Rule + " " + f.Object.Kind + " " + f.Object.Namespace + "/" + f.Object.Name
			outcomes[key], why[key] = f.Outcome, fmt.Sprintf("%s %s %v", f.SkipReason, f.Error, f.Evidence)
		}
	}
	for key, want := range map[string]report.Outcome{
		"olm-rbac ClusterRole /e2e-f1-role":                                    report.OutcomeApplied,
		"olm-rbac ClusterRoleBinding /e2e-f1-binding":                          report.OutcomeApplied,
		"olm-rbac ValidatingWebhookConfiguration /e2e-f1-webhook":              report.OutcomeApplied,
		"orphaned-finalizers ClusterServiceVersion e2e-f1/etcdoperator.v0.9.4": report.OutcomeApplied,
		"operator-leftovers ClusterServiceVersion e2e-f2/etcdoperator.v0.9.4":  report.OutcomeSkipped, // not opted in by the shipped config
		"installplan-owners InstallPlan e2e-f3/install-abcde":                  report.OutcomeApplied,
		"orphaned-finalizers Logging /e2e-f4":                                  report.OutcomeApplied,
		"catalog-pods Pod e2e-f5/on-lost-node":                                 report.OutcomeApplied,
		"catalog-pods Pod e2e-f5/on-missing-node":                              report.OutcomeApplied,
	} {
		assert.Equal(t, want, outcomes[key], "%s: %s", key, why[key])
	}
	for _, gone := range []*unstructured.Unstructured{
		seeded["f1"].Get("ClusterServiceVersion", "etcdoperator.v0.9.4"), seeded["f1"].Get("ClusterRole", "e2e-f1-role"),
		logging, seeded["f5"].Get("Pod", "on-lost-node"), seeded["f5"].Get("Pod", "on-missing-node"),
	} {
		assert.Nil(t, testCluster.Current(t, gone), "%s %s is gone", gone.GetKind(), gone.GetName())
	}
	assert.NotNil(t, testCluster.Current(t, seeded["f5"].Get("Pod", "on-ready-node")), "never on a Ready node")
}

// policySet flattens policy rules into "verb group/resource" grants.
func policySet(rules []rbacv1.PolicyRule) []string {
	var grants []string
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, verb := range r.Verbs {
					grants = append(grants, verb+" "+group+"/"+resource)
				}
			}
		}
	}
	slices.Sort(grants)
	return slices.Compact(grants)
}

func clusterRole(t *testing.T, objs []*unstructured.Unstructured, name string) []rbacv1.PolicyRule {
	t.Helper()
	var role rbacv1.ClusterRole
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deploy.Find(t, objs, "ClusterRole", name).Object, &role))
	require.Equal(t, name, role.Name)
	return role.Rules
}

// TestClusterRoleGrantsWhatTheRulesNeed: the shipped ClusterRoles grant exactly what the rules
// enabled by the shipped config declare, with the CronJob's mode, and the walk: no verb more.
func TestClusterRoleGrantsWhatTheRulesNeed(t *testing.T) {
	for _, overlay := range []string{"base", "overlays/report-only", "overlays/pushgateway"} {
		t.Run(overlay, func(t *testing.T) {
			objs := deploy.Render(t, overlay)
			args := deploy.CronJobArgs(t, objs)
			opts := options.Default()
			for _, arg := range args {
				if file, ok := strings.CutPrefix(arg, "--config="); ok {
					var err error
					opts, err = options.LoadConfigFile(file, opts)
					require.NoError(t, err)
				}
			}
			for _, arg := range args {
				if mode, ok := strings.CutPrefix(arg, "--dry-run="); ok {
					opts.DryRun = report.DryRunMode(mode)
				}
			}
			require.NoError(t, opts.Validate())
			needed, err := opts.PolicyRules()
			require.NoError(t, err)

			assert.Equal(t, policySet(needed), policySet(clusterRole(t, objs, "operator-sweeper")), "operator-sweeper grants what the rules need, no more, no less")
			assert.Equal(t, policySet(sweeper.WalkPolicyRules()), policySet(clusterRole(t, objs, "operator-sweeper-walk")))
			for _, grant := range policySet(clusterRole(t, objs, "operator-sweeper")) {
				assert.False(t, strings.HasPrefix(grant, "watch ") || strings.HasPrefix(grant, "* "), grant)
			}
		})
	}
}

// baseObjects are what the base renders, as kind and name: an object added to it, or dropped,
// is one the overlays and the chart (which renders the same objects) must follow.
var baseObjects = []string{
	"Namespace operator-sweeper",
	"ServiceAccount operator-sweeper",
	// What it reads and what it acts on; its own state, in its namespace.
	"ClusterRole operator-sweeper-walk", "ClusterRoleBinding operator-sweeper-walk",
	"ClusterRole operator-sweeper", "ClusterRoleBinding operator-sweeper",
	"Role operator-sweeper-state", "RoleBinding operator-sweeper-state",
	// The fences around its writes, and the opt-ins the second one reads.
	"ValidatingAdmissionPolicy operator-sweeper-changes-only-finalizers-and-owners",
	"ValidatingAdmissionPolicyBinding operator-sweeper-changes-only-finalizers-and-owners",
	"ValidatingAdmissionPolicy operator-sweeper-creates-and-deletes-only-what-a-rule-may",
	"ValidatingAdmissionPolicyBinding operator-sweeper-creates-and-deletes-only-what-a-rule-may",
	"ConfigMap operator-sweeper-opt-ins",
	"ConfigMap operator-sweeper-config",
	"CronJob operator-sweeper",
}

// kindsAndNames are objects as "Kind name".
func kindsAndNames(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, obj := range objs {
		names = append(names, obj.GetKind()+" "+obj.GetName())
	}
	return names
}

// TestOverlaysApplyServerSide: every overlay renders and passes a server-side dry-run apply.
func TestOverlaysApplyServerSide(t *testing.T) {
	deploy.Apply(t, testCluster, []*unstructured.Unstructured{deploy.Find(t, deploy.Render(t, "base"), "Namespace", "operator-sweeper")}, false)
	for _, overlay := range []string{"base", "overlays/report-only", "overlays/pushgateway"} {
		t.Run(overlay, func(t *testing.T) {
			objs := deploy.Render(t, overlay)
			assert.ElementsMatch(t, baseObjects, kindsAndNames(objs), "the base's objects, which these overlays only patch")
			deploy.Apply(t, testCluster, objs, true)
		})
	}
	env, _, _ := unstructured.NestedSlice(deploy.Find(t, deploy.Render(t, "overlays/pushgateway"), "CronJob", "operator-sweeper").Object,
		"spec", "jobTemplate", "spec", "template", "spec", "containers")
	assert.Equal(t, []any{map[string]any{"name": "SWEEPER_PUSHGATEWAY_URL", "value": "http://pushgateway.monitoring.svc:9091"}},
		env[0].(map[string]any)["env"])
}

// TestBackupOverlay: the backup overlay mounts a PersistentVolumeClaim at /backup, where the
// sweeper keeps its pre-images, writable by the non-root sweeper, and leaves the root filesystem
// read-only; it applies server-side.
func TestBackupOverlay(t *testing.T) {
	deploy.Apply(t, testCluster, []*unstructured.Unstructured{deploy.Find(t, deploy.Render(t, "base"), "Namespace", "operator-sweeper")}, false)
	objs := deploy.Render(t, "overlays/backup")
	assert.ElementsMatch(t, append(slices.Clone(baseObjects), "PersistentVolumeClaim operator-sweeper-backup"), kindsAndNames(objs), "the base, and the claim")
	deploy.Apply(t, testCluster, objs, true)

	var cronJob batchv1.CronJob
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deploy.Find(t, objs, "CronJob", "operator-sweeper").Object, &cronJob))
	pod := cronJob.Spec.JobTemplate.Spec.Template.Spec
	container := pod.Containers[0]
	assert.Contains(t, container.Args, "--backup-dir=/backup")
	assert.Contains(t, container.VolumeMounts, corev1.VolumeMount{Name: "backup", MountPath: "/backup"})
	assert.True(t, *container.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, ptr.To[int64](65532), pod.SecurityContext.FSGroup, "the volume is writable by the sweeper's group")
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "backup" })
	require.GreaterOrEqual(t, i, 0)
	claim := deploy.Find(t, objs, "PersistentVolumeClaim", pod.Volumes[i].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "operator-sweeper", claim.GetNamespace())
}

// TestJobFromCronJob: a Job made from the CronJob as `kubectl create job --from=cronjob/…` makes
// it is valid, and runs the same pod.
func TestJobFromCronJob(t *testing.T) {
	deploy.Apply(t, testCluster, deploy.Render(t, "base"), false)
	cronJob, err := testCluster.Kube.BatchV1().CronJobs("operator-sweeper").Get(context.Background(), "operator-sweeper", metav1.GetOptions{})
	require.NoError(t, err)

	// What kubectl create job --from does (kubectl/pkg/cmd/create/create_job.go).
	annotations := map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
	for k, v := range cronJob.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "sweep-now",
			Namespace:   cronJob.Namespace,
			Labels:      cronJob.Spec.JobTemplate.Labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cronJob.Name, UID: cronJob.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: cronJob.Spec.JobTemplate.Spec,
	}
	created, err := testCluster.Kube.BatchV1().Jobs("operator-sweeper").Create(context.Background(), job, metav1.CreateOptions{})
	require.NoError(t, err, "the Job is valid")
	t.Cleanup(func() {
		_ = testCluster.Kube.BatchV1().Jobs("operator-sweeper").Delete(context.Background(), "sweep-now", metav1.DeleteOptions{})
	})
	assert.Equal(t, cronJob.Spec.JobTemplate.Spec.Template.Spec, created.Spec.Template.Spec, "the same pod")
	assert.Equal(t, cronJob.Spec.JobTemplate.Spec.BackoffLimit, created.Spec.BackoffLimit)
	assert.Equal(t, cronJob.Spec.JobTemplate.Spec.ActiveDeadlineSeconds, created.Spec.ActiveDeadlineSeconds)
}

// TestStaticBinary: make build gives a static binary, built with -trimpath, that knows its version.
func TestStaticBinary(t *testing.T) {
	// Statically linked: no ELF interpreter, no shared library.
	binary, err := elf.Open(string(sweeperBinary))
	require.NoError(t, err)
	defer binary.Close()
	for _, prog := range binary.Progs {
		assert.NotEqual(t, elf.PT_INTERP, prog.Type, "a dynamic loader is required")
	}
	libraries, err := binary.ImportedLibraries()
	require.NoError(t, err)
	assert.Empty(t, libraries)

	out, err := exec.Command("go", "version", "-m", string(sweeperBinary)).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Regexp(t, `(?m)^\s+build\s+CGO_ENABLED=0$`, string(out))
	assert.Regexp(t, `(?m)^\s+build\s+-trimpath=true$`, string(out))
	assert.NotContains(t, string(out), mustAbs(t, cluster.RepoRoot), "no local paths")

	stdout, stderr, code := sweeperBinary.Run(t, "--version")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "operator-sweeper "+cluster.ReleaseStamp.Version+" (commit "+cluster.ReleaseStamp.Commit+")\n", stdout+stderr, "all it prints")
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	_, err = os.Stat(abs)
	require.NoError(t, err)
	return abs
}

// TestAdmissionPolicyLimitsTheServiceAccount: with the base applied, the sweeper's ServiceAccount
// may release a finalizer and give an InstallPlan a Subscription as owner, and change nothing
// else, whatever its role grants. What it may create and delete: see
// TestAdmissionPolicyFencesCreatesAndDeletes.
func TestAdmissionPolicyLimitsTheServiceAccount(t *testing.T) {
	deploy.Apply(t, testCluster, deploy.Render(t, "base"), false)
	saConfig, _ := deploy.ServiceAccountConfig(t, testCluster)
	saClient, err := dynamic.NewForConfig(saConfig)
	require.NoError(t, err)
	ns := "e2e-admission"
	require.NoError(t, testCluster.CreateNamespace(context.Background(), ns))
	created, err := testCluster.Create(context.Background(), cluster.Fill(cluster.F1CSV+`
---
apiVersion: operators.coreos.com/v1alpha1
kind: InstallPlan
metadata: {name: install-abc, namespace: NAMESPACE}
spec: {approval: Automatic, approved: true, clusterServiceVersionNames: [etcdoperator.v0.9.4]}
`, ns))
	require.NoError(t, err)
	csv, plan := created[0], created[1]
	patchAs := func(obj *unstructured.Unstructured, patch string, opts metav1.PatchOptions) error {
		_, gvr, err := testCluster.Resource(obj)
		require.NoError(t, err)
		_, err = saClient.Resource(gvr).Namespace(obj.GetNamespace()).Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(patch), opts)
		return err
	}
	patch := func(obj *unstructured.Unstructured, patch string) error {
		return patchAs(obj, patch, metav1.PatchOptions{})
	}

	// The policy takes effect once the API server has loaded it. Both probes are valid by the
	// CRD's schema, so that only the policy can refuse them. The probe that waits for it is a dry
	// run: one that passed before the policy was loaded would leave the label changed, and every
	// later attempt a change of nothing, which the policy lets through.
	const onlyFinalizersAndOwners = "operator-sweeper may change only metadata.finalizers and metadata.ownerReferences"
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := patchAs(csv, `{"metadata":{"labels":{"olm.owner":"hijacked"}}}`, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if assert.Error(c, err, "a label change is denied") {
			assert.Contains(c, err.Error(), onlyFinalizersAndOwners)
		}
	}, time.Minute, 200*time.Millisecond) // under load, the API server has taken over 30 s to load a new policy
	err = patch(csv, `{"spec":{"displayName":"evil"}}`)
	require.Error(t, err, "so is a change of the spec")
	assert.Contains(t, err.Error(), onlyFinalizersAndOwners)

	err = patch(csv, `{"metadata":{"finalizers":["operators.coreos.com/csv-cleanup","evil.example.com/hold"]}}`)
	require.Error(t, err, "a finalizer added")
	assert.Contains(t, err.Error(), "operator-sweeper may only remove finalizers")
	err = patch(csv, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"3f1c3c84-0000-4000-8000-000000000003"}]}}`)
	require.Error(t, err, "a bogus owner, for the garbage collector to delete the CSV by")
	assert.Contains(t, err.Error(), "operator-sweeper may change the ownerReferences of InstallPlans only")
	err = patch(plan, `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"3f1c3c84-0000-4000-8000-000000000004"}]}}`)
	require.Error(t, err, "an InstallPlan's bogus owner, though the role may patch InstallPlans")
	assert.Contains(t, err.Error(), "operator-sweeper may give an InstallPlan only Subscriptions as owners")

	require.NoError(t, patch(plan, `{"metadata":{"ownerReferences":[{"apiVersion":"operators.coreos.com/v1alpha1","kind":"Subscription","name":"etcd","uid":"3f1c3c84-0000-4000-8000-000000000002"}]}}`),
		"an InstallPlan's ownerReference change passes")
	require.NoError(t, patch(csv, `{"metadata":{"finalizers":null}}`), "a finalizer release passes")
	assert.Empty(t, testCluster.Current(t, csv).GetFinalizers())
	after := testCluster.Current(t, csv)
	assert.NotEqual(t, "evil", after.Object["spec"].(map[string]any)["displayName"])
	assert.NotEqual(t, "hijacked", after.GetLabels()["olm.owner"])
}
