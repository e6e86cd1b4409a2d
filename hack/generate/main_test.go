package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TestGeneratedFilesAreUpToDate: the ClusterRoles' rules (the base's and the opt-ins'), the
// admission policy's guarded finalizers and docs/catalog.md on disk are what make generate (and
// make manifests) writes from the walk's and the rules' declarations and the catalog.
func TestGeneratedFilesAreUpToDate(t *testing.T) {
	files, err := generate("../..")
	require.NoError(t, err)
	var paths []string
	for _, f := range files {
		paths = append(paths, f.path)
	}
	assert.Subset(t, paths, []string{"manifests/base/rbac.yaml", "charts/operator-sweeper/templates/rbac.yaml",
		"manifests/components/opt-in-dead-apiservices/rbac.yaml", "charts/operator-sweeper/templates/opt-ins.yaml", "docs/catalog.md"})
	for _, f := range files {
		disk, err := os.ReadFile(filepath.Join("../..", f.path))
		require.NoError(t, err)
		assert.Equal(t, string(f.content), string(disk), "%s is stale: run make generate", f.path)
	}
}

// TestOptInRoles: an opt-in whose component has no rbac.yaml (dead-webhooks) is one whose
// rules the ClusterRole operator-sweeper grants already; generate fails when it does not.
func TestOptInRoles(t *testing.T) {
	_, granted, err := clusterRoleRules("../../manifests/base/config.yaml")
	require.NoError(t, err)
	roles, err := optInRoles("../..", granted)
	require.NoError(t, err)
	components := map[string]string{}
	for _, r := range roles {
		components[r.region.name] = r.component
	}
	assert.Equal(t, map[string]string{
		"opt-in dead-apiservices":   "manifests/components/opt-in-dead-apiservices/rbac.yaml",
		"opt-in dead-webhooks":      "",
		"opt-in olmv1-leftovers":    "manifests/components/opt-in-olmv1-leftovers/rbac.yaml",
		"opt-in operator-leftovers": "manifests/components/opt-in-operator-leftovers/rbac.yaml",
	}, components)

	_, err = optInRoles("../..", nil)
	assert.ErrorContains(t, err, "opt-in dead-webhooks needs get on validatingwebhookconfigurations.admissionregistration.k8s.io, which the ClusterRole operator-sweeper does not grant")
}

// TestNotCovered: a verb on a resource is covered by a rule that grants it, wildcards included.
func TestNotCovered(t *testing.T) {
	granted := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"list"}},
	}
	assert.Empty(t, notCovered(granted, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"delete", "list"}}))
	assert.Equal(t, "patch on deployments.apps", notCovered(granted, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "patch"}}))
	assert.Equal(t, "get on pods", notCovered(granted, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}))
}

// TestGlobRegexp: a glob becomes the regular expression that matches what path.Match matches.
func TestGlobRegexp(t *testing.T) {
	for glob, names := range map[string]map[string]bool{
		"karpenter.sh/termination":        {"karpenter.sh/termination": true, "karpenterxsh/termination": false, "karpenter.sh/termination2": false},
		"*.ceph.rook.io":                  {"cephcluster.ceph.rook.io": true, "a/b.ceph.rook.io": false, "ceph.rook.io": false},
		"finalizers.*.services.k8s.aws/*": {"finalizers.s3.services.k8s.aws/Bucket": true, "finalizers.s3.services.k8s.aws/a/b": false},
		"a?c":                             {"abc": true, "a/c": false},
	} {
		re := regexp.MustCompile("^" + globRegexp(glob) + "$")
		for name, want := range names {
			assert.Equal(t, want, re.MatchString(name), "%s ~ %s", glob, name)
		}
	}
}

// TestReplaceRegion keeps what is outside the markers, and refuses a file without them.
func TestReplaceRegion(t *testing.T) {
	out, err := replaceRegion([]byte("a\n# BEGIN generated x (why)\nold\n# END generated x\nb\n"), "x", "new\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n# BEGIN generated x (why)\nnew\n# END generated x\nb\n", string(out))
	_, err = replaceRegion([]byte("a\n"), "x", "new\n")
	assert.ErrorContains(t, err, `no region "# BEGIN generated x"`)
	assert.True(t, strings.HasPrefix(string(out), "a\n"))
}
