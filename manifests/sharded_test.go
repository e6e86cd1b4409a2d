package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/resmap"
)

// TestShardedOverlay: the overlay is the base with its CronJob's Job Indexed, 4 shards at once,
// one retry per shard; the same args, resources, RBAC and everything else.
func TestShardedOverlay(t *testing.T) {
	base := render(t, "base")
	require.Equal(t, ptr.To[int32](1), cronJob(t, base).Spec.JobTemplate.Spec.BackoffLimit,
		"the overlay's one retry per shard mirrors the base's backoffLimit")
	assertSharded(t, base, render(t, "overlays/sharded"), 4)
}

// TestShardedComponentOnOverlays: the component shards another overlay as the sharded overlay's
// comments say, by including it on top, and keeps what that overlay changed (the pushgateway's
// --cluster and env, report-only's dry run and RBAC).
func TestShardedComponentOnOverlays(t *testing.T) {
	for _, overlay := range []string{"overlays/pushgateway", "overlays/report-only"} {
		t.Run(overlay, func(t *testing.T) {
			dir := t.TempDir()
			writeKustomization(t, dir, "resources:\n- "+relativeTo(t, dir, overlay)+"\ncomponents:\n- "+relativeTo(t, dir, "components/sharded")+"\n")
			assertSharded(t, render(t, overlay), render(t, dir), 4)
		})
	}
}

// TestShardCountIsCompletions: in a copy of the component, editing completions alone changes the
// shard count everywhere: the replacements copy it into parallelism and JOB_COMPLETIONS.
func TestShardCountIsCompletions(t *testing.T) {
	data, err := os.ReadFile("components/sharded/kustomization.yaml")
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(data), "completions: 4"))
	dir := t.TempDir()
	component := filepath.Join(dir, "sharded")
	require.NoError(t, os.Mkdir(component, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(component, "kustomization.yaml"),
		[]byte(strings.Replace(string(data), "completions: 4", "completions: 7", 1)), 0o600))
	writeKustomization(t, dir, "resources:\n- "+relativeTo(t, dir, "base")+"\ncomponents:\n- sharded\n")

	assertSharded(t, render(t, "base"), render(t, dir), 7)
}

// assertSharded asserts that sharded is plain with its CronJob's Job Indexed in n shards, as the
// component makes it, and nothing else changed.
func assertSharded(t *testing.T, plain, sharded resmap.ResMap, n int32) {
	t.Helper()
	assert.Equal(t, kindsAndNames(plain), kindsAndNames(sharded))
	assert.Equal(t, notCronJobs(t, plain), notCronJobs(t, sharded), "the objects other than the CronJob (RBAC, admission, config) are the same")

	want := cronJob(t, plain)
	got := cronJob(t, sharded)
	job := got.Spec.JobTemplate.Spec
	assert.Equal(t, ptr.To(batchv1.IndexedCompletion), job.CompletionMode)
	assert.Equal(t, ptr.To(n), job.Completions)
	assert.Equal(t, job.Completions, job.Parallelism, "all shards at once: activeDeadlineSeconds covers one sweep")
	require.Len(t, job.Template.Spec.Containers, 1)
	env := job.Template.Spec.Containers[0].Env
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "JOB_COMPLETIONS" })
	require.GreaterOrEqual(t, i, 0, "JOB_COMPLETIONS: Kubernetes sets only JOB_COMPLETION_INDEX")
	assert.Equal(t, corev1.EnvVar{Name: "JOB_COMPLETIONS", Value: strconv.Itoa(int(n))}, env[i], "JOB_COMPLETIONS equals completions")
	assert.Equal(t, ptr.To[int32](1), job.BackoffLimitPerIndex)
	assert.Nil(t, job.BackoffLimit, "a Job-wide backoffLimit would cap the failures of all shards together")

	// Without what sharding adds, the CronJob is plain's.
	job.CompletionMode, job.Completions, job.Parallelism, job.BackoffLimitPerIndex = nil, nil, nil, nil
	job.BackoffLimit = want.Spec.JobTemplate.Spec.BackoffLimit
	job.Template.Spec.Containers[0].Env = slices.Delete(env, i, i+1)
	if len(job.Template.Spec.Containers[0].Env) == 0 {
		job.Template.Spec.Containers[0].Env = nil
	}
	got.Spec.JobTemplate.Spec = job
	assert.Equal(t, want, got)
}

// notCronJobs returns the YAML of every object but the CronJob, by kind and name.
func notCronJobs(t *testing.T, objs resmap.ResMap) map[string]string {
	t.Helper()
	others := map[string]string{}
	for _, res := range objs.Resources() {
		if res.GetKind() == "CronJob" {
			continue
		}
		data, err := res.AsYAML()
		require.NoError(t, err)
		others[res.GetKind()+"/"+res.GetName()] = string(data)
	}
	return others
}

// relativeTo returns path (relative to manifests/) relative to dir: kustomize takes a
// kustomization outside the root by a relative path (or a URL) only.
func relativeTo(t *testing.T, dir, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	rel, err := filepath.Rel(dir, abs)
	require.NoError(t, err)
	return rel
}

func writeKustomization(t *testing.T, dir, body string) {
	t.Helper()
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600))
}
