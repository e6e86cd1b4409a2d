package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/operator-sweeper/operator-sweeper/test/cluster"
)

// OptIn is an opt-in as the shipped manifests say: rules.<Rule>.delete set to Delete in the
// config, and manifests/components/opt-in-<Rule> on the base (its RBAC, and the switch the
// admission policy reads in ConfigMap operator-sweeper-opt-ins).
type OptIn struct {
	Rule   string
	Delete any
}

// OptedIn renders the base with optIn's component and config. When the test ends, the shipped
// base is applied again on c and the component's own objects are deleted.
func OptedIn(t *testing.T, c *cluster.Cluster, optIn OptIn) []*unstructured.Unstructured {
	t.Helper()
	// kustomize takes only relative paths to other kustomizations.
	dir := t.TempDir()
	relative := func(path ...string) string {
		abs, err := filepath.Abs(filepath.Join(append([]string{cluster.RepoRoot, "manifests"}, path...)...))
		require.NoError(t, err)
		rel, err := filepath.Rel(dir, abs)
		require.NoError(t, err)
		return rel
	}
	base, component := relative("base"), relative("components", "opt-in-"+optIn.Rule)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"),
		[]byte(fmt.Sprintf("resources: [%q]\ncomponents: [%q]\n", base, component)), 0o600))
	objs := RenderAt(t, dir)
	config := Find(t, objs, "ConfigMap", "operator-sweeper-config")
	data, _, _ := unstructured.NestedString(config.Object, "data", "config.yaml")
	var parsed map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(data), &parsed))
	require.NoError(t, unstructured.SetNestedField(parsed, optIn.Delete, "rules", optIn.Rule, "delete"))
	changed, err := yaml.Marshal(parsed)
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(config.Object, string(changed), "data", "config.yaml"))

	shipped := Render(t, "base")
	t.Cleanup(func() {
		Apply(t, c, shipped, false)
		for _, obj := range objs {
			if slices.ContainsFunc(shipped, func(s *unstructured.Unstructured) bool {
				return s.GetKind() == obj.GetKind() && s.GetName() == obj.GetName()
			}) {
				continue
			}
			client, _, err := c.Resource(obj)
			require.NoError(t, err)
			if err := client.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
				require.NoError(t, err, "delete %s %s", obj.GetKind(), obj.GetName())
			}
		}
	})
	return objs
}
