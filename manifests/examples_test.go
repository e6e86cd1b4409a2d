package manifests

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestPreflightDrainHookExample: the pre-delete hook renders as Helm would render it into a
// release: a Job that drains the release with the base's image, run by a ServiceAccount that may
// list everything, delete custom resources, and keep its pre-images in its namespace.
func TestPreflightDrainHookExample(t *testing.T) {
	data, err := os.ReadFile("examples/preflight-drain-hook.yaml")
	require.NoError(t, err)
	tmpl, err := template.New("hook").Option("missingkey=error").Parse(string(data))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, tmpl.Execute(&out, map[string]any{"Release": map[string]any{"Name": "gizmo", "Namespace": "gizmo-system"}}))

	objs := map[string][]byte{}
	reader := utilyaml.NewYAMLReader(bufioReader(out.Bytes()))
	for {
		doc, err := reader.Read()
		if err != nil {
			break
		}
		var u unstructured.Unstructured
		require.NoError(t, yaml.Unmarshal(doc, &u.Object))
		if u.Object != nil {
			objs[u.GetKind()] = doc
		}
	}
	require.ElementsMatch(t, []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Job"}, keys(objs))

	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict(objs["Job"], &job))
	assert.Equal(t, "pre-delete", job.Annotations["helm.sh/hook"])
	spec := job.Spec.Template.Spec
	assert.Equal(t, "gizmo-drain", spec.ServiceAccountName)
	require.Len(t, spec.Containers, 1)
	args := spec.Containers[0].Args
	assert.Equal(t, []string{"preflight", "helm/gizmo", "--namespace=gizmo-system", "--drain", "--dry-run=none"}, args[:5])
	base := cronJob(t, render(t, "base")).Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	assert.Equal(t, base.Image, spec.Containers[0].Image, "the hook runs the release the base installs")

	var clusterRole rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(objs["ClusterRole"], &clusterRole))
	assert.Contains(t, clusterRole.Rules, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}}, "the walk")
	assert.True(t, slices.ContainsFunc(clusterRole.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Verbs, "delete") }), "the drain")
	for _, r := range clusterRole.Rules {
		assert.NotContains(t, r.Verbs, "patch", "a drain never removes a finalizer")
		assert.NotContains(t, r.Verbs, "update", "a drain never removes a finalizer")
		if slices.Contains(r.Verbs, "delete") {
			assert.NotContains(t, r.APIGroups, "*", "a drain deletes only the operator's custom resources")
			assert.NotContains(t, r.Resources, "*", "a drain deletes only the operator's custom resources")
		}
	}
	var role rbacv1.Role
	require.NoError(t, yaml.UnmarshalStrict(objs["Role"], &role))
	assert.Equal(t, []string{"secrets"}, role.Rules[0].Resources)
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		var binding rbacv1.RoleBinding
		require.NoError(t, yaml.Unmarshal(objs[kind], &binding))
		assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gizmo-drain", Namespace: "gizmo-system"}}, binding.Subjects, kind)
	}
}

func bufioReader(data []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(data)) }

func keys(m map[string][]byte) []string {
	return slices.Collect(maps.Keys(m))
}
