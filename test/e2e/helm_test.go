package e2e

import (
	"io"
	"log"
	"net/http/httptest"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/test/cluster"
	"github.com/operator-sweeper/operator-sweeper/test/deploy"
)

// chartDir is the Helm chart, from this package's directory.
var chartDir = filepath.Join(cluster.RepoRoot, "charts", "operator-sweeper")

// helmLabels are the labels the chart adds and the kustomize manifests have not: Helm's own.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// helmBinary builds helm once per machine (hack/helm.sh: pinned, from the Go module proxy) and
// returns its path; the first build takes a couple of minutes, and says so on stderr.
var helmBinary = sync.OnceValues(func() (string, error) {
	cmd := exec.Command(filepath.Join(cluster.RepoRoot, "hack", "helm.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/helm.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// runHelm runs helm and returns its stdout; a failure fails t with helm's stderr.
func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	helm, err := helmBinary()
	require.NoError(t, err)
	cmd := exec.Command(helm, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "helm %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// helmTemplate renders the chart as the release operator-sweeper in the namespace operator-sweeper,
// the kustomize base's, with more helm args (-f FILE, --set KEY=VALUE), files relative to the chart.
func helmTemplate(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := cluster.Decode(runHelm(t, helmTemplateArgs("operator-sweeper", args...)...))
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	return objs
}

// helmTemplateArgs are helm template's args for the chart as the release operator-sweeper in
// namespace, with more args, files given with -f relative to the chart.
func helmTemplateArgs(namespace string, args ...string) []string {
	args = slices.Clone(args)
	for i, arg := range args {
		if i > 0 && args[i-1] == "-f" {
			args[i] = filepath.Join(chartDir, arg)
		}
	}
	return append([]string{"template", "operator-sweeper", chartDir, "--namespace", namespace}, args...)
}

// canonical returns obj as JSON carries it, without Helm's own labels: the kustomize API gives
// ints where a YAML decoder gives float64s, and both sides must compare as the API server reads
// them.
func canonical(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj.Object)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	if labels, ok := m["metadata"].(map[string]any)["labels"].(map[string]any); ok {
		for _, label := range helmLabels {
			delete(labels, label)
		}
	}
	return m
}

// byID returns objects by kind, namespace and name, canonical.
func byID(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	ids := map[string]map[string]any{}
	for _, obj := range objs {
		id := obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
		require.NotContains(t, ids, id, "rendered twice")
		ids[id] = canonical(t, obj)
	}
	return ids
}

// assertSameObjects asserts that the chart rendered the kustomize manifests' objects, object by
// object: the same kinds, names and namespaces, and each the same but for Helm's own labels.
func assertSameObjects(t *testing.T, kustomized, chart []*unstructured.Unstructured) {
	t.Helper()
	want, got := byID(t, kustomized), byID(t, chart)
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)), "the same objects")
	for id, obj := range want {
		assert.Equal(t, obj, got[id], id)
	}
}

// renderOnTop renders a kustomization of the test's own, of resources and components (paths under
// manifests/) and patches (kustomize's inline patches, YAML).
func renderOnTop(t *testing.T, resources, components []string, patches string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes a kustomization outside the root by a relative path (or a URL) only.
	relative := func(paths []string) string {
		var list strings.Builder
		for _, path := range paths {
			abs, err := filepath.Abs(filepath.Join(cluster.RepoRoot, "manifests", path))
			require.NoError(t, err)
			rel, err := filepath.Rel(dir, abs)
			require.NoError(t, err)
			list.WriteString("- " + rel + "\n")
		}
		return list.String()
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + relative(resources)
	if len(components) > 0 {
		kustomization += "components:\n" + relative(components)
	}
	kustomization += patches
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600))
	return deploy.RenderAt(t, dir)
}

// TestChartConfigIsTheBaseConfig: the chart's default config is the kustomize base's, byte for
// byte (a chart cannot read a file outside itself, so it keeps a copy).
func TestChartConfigIsTheBaseConfig(t *testing.T) {
	base, err := os.ReadFile(filepath.Join(cluster.RepoRoot, "manifests", "base", "config.yaml"))
	require.NoError(t, err)
	chart, err := os.ReadFile(filepath.Join(chartDir, "files", "config.yaml"))
	require.NoError(t, err)
	assert.Equal(t, string(base), string(chart), "copy manifests/base/config.yaml to charts/operator-sweeper/files/config.yaml")
}

// TestHelmLint: helm lint --strict passes with the default values and with every values file
// under ci/, and says nothing but that the chart has no icon (the project has none).
func TestHelmLint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	message := regexp.MustCompile(`(?m)^\[[A-Z]+\].*$`)
	for _, values := range append([]string{""}, files...) {
		name := "default values"
		if values != "" {
			name = filepath.Base(values)
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			if values != "" {
				args = append(args, "--values", values)
			}
			out := runHelm(t, args...)
			assert.Equal(t, []string{"[INFO] Chart.yaml: icon is recommended"}, message.FindAllString(out, -1), out)
		})
	}
}

// TestChartRendersTheKustomizeManifests: helm template renders the kustomize base with
// createNamespace (the base makes its Namespace, the chart leaves it to Helm by default), and each
// overlay with its values file under ci/; with the default values, the same objects but the
// Namespace.
func TestChartRendersTheKustomizeManifests(t *testing.T) {
	t.Run("default values", func(t *testing.T) {
		base := slices.DeleteFunc(deploy.Render(t, "base"), func(obj *unstructured.Unstructured) bool { return obj.GetKind() == "Namespace" })
		assertSameObjects(t, base, helmTemplate(t))
	})
	for _, tc := range []struct {
		name       string
		helmArgs   []string
		kustomized func(t *testing.T) []*unstructured.Unstructured
	}{{
		name:       "base",
		kustomized: func(t *testing.T) []*unstructured.Unstructured { return deploy.Render(t, "base") },
	}, {
		name:       "report-only",
		helmArgs:   []string{"-f", "ci/report-only-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured { return deploy.Render(t, "overlays/report-only") },
	}, {
		name:       "pushgateway",
		helmArgs:   []string{"-f", "ci/pushgateway-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured { return deploy.Render(t, "overlays/pushgateway") },
	}, {
		name:       "backup",
		helmArgs:   []string{"-f", "ci/backup-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured { return deploy.Render(t, "overlays/backup") },
	}, {
		name:       "sharded",
		helmArgs:   []string{"-f", "ci/sharded-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured { return deploy.Render(t, "overlays/sharded") },
	}, {
		// To shard and push, the sharded overlay's comments include the component on the
		// pushgateway overlay: the env of both, in kustomize's order.
		name:     "sharded and pushing",
		helmArgs: []string{"-f", "ci/sharded-pushgateway-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured {
			return renderOnTop(t, []string{"overlays/pushgateway"}, []string{"components/sharded"}, "")
		},
	}, {
		// The notification URL's Secret, mounted as manifests/components/notify mounts it.
		name:     "notifying",
		helmArgs: []string{"-f", "ci/notify-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured {
			return renderOnTop(t, []string{"base"}, []string{"components/notify"}, "")
		},
	}, {
		// Each opt-in switches its key of the one ConfigMap: all four at once show they compose.
		name:     "opted in",
		helmArgs: []string{"-f", "ci/opt-ins-values.yaml"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured {
			return renderOnTop(t, []string{"base"}, []string{
				"components/opt-in-dead-apiservices", "components/opt-in-dead-webhooks", "components/opt-in-operator-leftovers",
				"components/opt-in-olmv1-leftovers",
			}, "")
		},
	}, {
		// The README's way to walk less with kustomize deletes the walk's binding; the chart drops
		// the role it binds too.
		name:     "no walk RBAC",
		helmArgs: []string{"--set", "walk.rbac=false"},
		kustomized: func(t *testing.T) []*unstructured.Unstructured {
			deleteWalk := ""
			for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
				deleteWalk += fmt.Sprintf("- patch: |\n    $patch: delete\n    apiVersion: rbac.authorization.k8s.io/v1\n    kind: %s\n    metadata: {name: operator-sweeper-walk}\n", kind)
			}
			return renderOnTop(t, []string{"base"}, nil, "patches:\n"+deleteWalk)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assertSameObjects(t, tc.kustomized(t), helmTemplate(t, append([]string{"--set", "createNamespace=true"}, tc.helmArgs...)...))
		})
	}
}

// TestChartInAnotherNamespace: the release's namespace is every object's, the ServiceAccount's
// in the bindings, and the one the admission policy holds to its rules; nothing else changes.
func TestChartInAnotherNamespace(t *testing.T) {
	const namespace = "sweeper-elsewhere"
	out := runHelm(t, helmTemplateArgs(namespace)...)
	assert.NotContains(t, out, "namespace: operator-sweeper")
	assert.Contains(t, out, "'system:serviceaccount:"+namespace+":operator-sweeper'")
	elsewhere, err := cluster.Decode(strings.ReplaceAll(out, namespace, "operator-sweeper"))
	require.NoError(t, err)
	assertSameObjects(t, helmTemplate(t), elsewhere)
}

// TestHelmChartDeploysAndSweeps deploys the default chart on the cluster and runs its CronJob's
// command as its ServiceAccount on a cluster with OLM's and logging-operator's debris: the chart's
// RBAC and admission policy allow the walk and every action, and the actions are applied.
func TestHelmChartDeploysAndSweeps(t *testing.T) {
	objs := helmTemplate(t)
	deploy.Apply(t, testCluster, objs, false)

	ctx := context.Background()
	seeds := map[string]func(ns string) (cluster.Seeded, error){
		"e2e-helm-f1": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF1(ctx, ns) },
		"e2e-helm-f4": func(ns string) (cluster.Seeded, error) { return testCluster.SeedF4(ctx, ns) },
	}
	for ns, seed := range seeds {
		require.NoError(t, testCluster.CreateNamespace(ctx, ns))
		_, err := seed(ns)
		require.NoError(t, err, ns)
	}
	cluster.AgeDebris()

	_, kubeconfig := deploy.ServiceAccountConfig(t, testCluster)
	args := deploy.CronJobArgs(t, objs)
	require.Contains(t, args, "--dry-run=none", "the chart's CronJob acts")
	// The debris is seconds old: the thresholds would keep it from being acted on.
	young := []string{"--min-terminating-age=0s", "--catalog-pod-slack=0s", "--min-age=0s"}
	rep, stderr, code := sweeperBinary.RunReport(t, slices.Concat(args, young, []string{"--kubeconfig", kubeconfig})...)
	require.Equal(t, 0, code, stderr)
	noForbidden(t, rep)
	for _, e := range rep.Errors {
		assert.NotRegexp(t, `(?i)403|forbidden`, e.Message, "%s %s", e.Stage, e.Resource)
	}

	outcomes := map[string]report.Outcome{}
	for _, f := range rep.Findings {
		if f.Action != nil {
			outcomes[f.Rule+" "+f.Object.Kind+" "+f.Object.Namespace+"/"+f.Object.Name] = f.Outcome
		}
	}
	for _, key := range []string{
		"olm-rbac ClusterRole /e2e-helm-f1-role",
		"olm-rbac ClusterRoleBinding /e2e-helm-f1-binding",
		"olm-rbac ValidatingWebhookConfiguration /e2e-helm-f1-webhook",
		"orphaned-finalizers ClusterServiceVersion e2e-helm-f1/etcdoperator.v0.9.4",
		"orphaned-finalizers Logging /e2e-helm-f4",
	} {
		assert.Equal(t, report.OutcomeApplied, outcomes[key], key)
	}
}

// TestChartPublishedAndInstalled: the chart make dist packages, pushed as an OCI artifact to a
// registry, installs from it as every chart's README says, helm install -n NAMESPACE
// --create-namespace, on a fresh API server; and its ServiceAccount sweeps with no 403.
func TestChartPublishedAndInstalled(t *testing.T) {
	dist := t.TempDir()
	runHelm(t, "package", chartDir, "-d", dist, "--version", "0.0.1-test", "--app-version", "v0.0.1-test")
	registry := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer registry.Close()
	repo := "oci://" + strings.TrimPrefix(registry.URL, "http://") + "/charts"
	runHelm(t, "push", filepath.Join(dist, "operator-sweeper-0.0.1-test.tgz"), repo, "--plain-http")

	fresh, err := cluster.Start()
	require.NoError(t, err)
	defer func() { assert.NoError(t, fresh.Stop()) }()
	const namespace = "sweeper-helm"
	runHelm(t, "install", "operator-sweeper", repo+"/operator-sweeper", "--version", "0.0.1-test", "--plain-http",
		"--namespace", namespace, "--create-namespace", "--kubeconfig", fresh.Kubeconfig)
	status := runHelm(t, "status", "operator-sweeper", "--namespace", namespace, "--kubeconfig", fresh.Kubeconfig)
	assert.Contains(t, status, "STATUS: deployed")

	objs := helmTemplate(t)
	_, kubeconfig := deploy.ServiceAccountConfigIn(t, fresh, namespace)
	// Outside a pod, the sweeper's namespace is given, as the pod's would be.
	args := slices.Concat(deploy.CronJobArgs(t, objs), []string{"--kubeconfig", kubeconfig, "--sweeper-namespace", namespace})
	rep, stderr, code := sweeperBinary.RunReport(t, args...)
	require.Equal(t, 0, code, stderr)
	noForbidden(t, rep)
	assert.Positive(t, rep.Summary.Resources, "it walked")
}
