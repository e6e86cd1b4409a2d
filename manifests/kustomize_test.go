package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// clusterArgIndex is where the pushgateway overlay adds --cluster, and what its replacement sets.
const clusterArgIndex = 6

// TestPushgatewayOverlaySetsCluster: the overlay adds --cluster with the name of its
// build-time ConfigMap, which is not applied, and changes no other arg.
func TestPushgatewayOverlaySetsCluster(t *testing.T) {
	base := render(t, "base")
	overlay := render(t, "overlays/pushgateway")

	assert.Equal(t, withCluster(cronJobArgs(t, base), "in-cluster"), cronJobArgs(t, overlay))
	assert.Equal(t, kindsAndNames(base), kindsAndNames(overlay), "the ConfigMap operator-sweeper-cluster is local-config: never applied")
	spec := cronJob(t, overlay).Spec.JobTemplate.Spec.Template.Spec
	assert.Equal(t, cronJob(t, base).Spec.JobTemplate.Spec.Template.Spec.Volumes, spec.Volumes, "nothing mounted")
	require.Len(t, spec.Containers, 1)
	assert.Empty(t, spec.Containers[0].EnvFrom)
	for _, env := range spec.Containers[0].Env {
		assert.Nil(t, env.ValueFrom, env.Name)
	}
}

// TestClusterNameFromAnOverlayOnTop: an overlay on top of the pushgateway overlay sets the
// cluster name as the overlay's comments say, by merging it into the ConfigMap and including
// the cluster-name component; its own patches still apply.
func TestClusterNameFromAnOverlayOnTop(t *testing.T) {
	base := cronJobArgs(t, render(t, "base"))
	rename := `
configMapGenerator:
- name: operator-sweeper-cluster
  behavior: merge
  literals:
  - name=prod-eu-1
`
	for _, tc := range []struct {
		name          string
		kustomization string
		want          []string
	}{{
		name:          "renamed",
		kustomization: "components:\n- COMPONENT" + rename,
		want:          withCluster(base, "prod-eu-1"),
	}, {
		name: "renamed, with an arg of its own",
		kustomization: "components:\n- COMPONENT" + rename + `
patches:
- target:
    kind: CronJob
    name: operator-sweeper
  patch: |
    - op: add
      path: /spec/jobTemplate/spec/template/spec/containers/0/args/-
      value: --log-level=debug
`,
		want: append(withCluster(base, "prod-eu-1"), "--log-level=debug"),
	}, {
		// Why the component: kustomize applies the overlay's replacement in the overlay only. Should
		// this fail, a merged name alone is enough, and the overlay's comments can say so.
		name:          "renamed without the component",
		kustomization: rename,
		want:          withCluster(base, "in-cluster"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// kustomize takes a kustomization outside the root by a relative path (or a URL) only.
			relative := func(path string) string {
				abs, err := filepath.Abs(path)
				require.NoError(t, err)
				rel, err := filepath.Rel(dir, abs)
				require.NoError(t, err)
				return rel
			}
			kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + relative("overlays/pushgateway") + "\n" +
				strings.ReplaceAll(tc.kustomization, "COMPONENT", relative("components/cluster-name"))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600))

			objs := render(t, dir)
			assert.Equal(t, tc.want, cronJobArgs(t, objs))
			assert.Equal(t, kindsAndNames(render(t, "overlays/pushgateway")), kindsAndNames(objs), "the ConfigMap stays local-config")
		})
	}
}

// TestClusterNameReplacementsMatch: the component applies the very replacement of the overlay.
func TestClusterNameReplacementsMatch(t *testing.T) {
	replacements := func(file string) []any {
		var k struct {
			Replacements []any `json:"replacements"`
		}
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(data, &k))
		require.NotEmpty(t, k.Replacements, file)
		return k.Replacements
	}
	assert.Equal(t, replacements("overlays/pushgateway/kustomization.yaml"), replacements("components/cluster-name/kustomization.yaml"))
}

// render renders the kustomization in dir (relative to manifests/, or absolute), as kubectl
// kustomize does.
func render(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	objs, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err)
	return objs
}

func cronJob(t *testing.T, objs resmap.ResMap) *batchv1.CronJob {
	t.Helper()
	for _, res := range objs.Resources() {
		if res.GetKind() != "CronJob" || res.GetName() != "operator-sweeper" {
			continue
		}
		data, err := res.AsYAML()
		require.NoError(t, err)
		var cronJob batchv1.CronJob
		require.NoError(t, yaml.UnmarshalStrict(data, &cronJob))
		return &cronJob
	}
	require.FailNow(t, "no CronJob operator-sweeper")
	return nil
}

func cronJobArgs(t *testing.T, objs resmap.ResMap) []string {
	t.Helper()
	containers := cronJob(t, objs).Spec.JobTemplate.Spec.Template.Spec.Containers
	require.Len(t, containers, 1)
	require.Equal(t, "operator-sweeper", containers[0].Name)
	return containers[0].Args
}

// withCluster returns the base's args with --cluster=name where the pushgateway overlay adds it.
func withCluster(args []string, name string) []string {
	return slices.Insert(slices.Clone(args), clusterArgIndex, "--cluster="+name)
}

func kindsAndNames(objs resmap.ResMap) []string {
	var ids []string
	for _, res := range objs.Resources() {
		ids = append(ids, res.GetKind()+"/"+res.GetName())
	}
	return ids
}
