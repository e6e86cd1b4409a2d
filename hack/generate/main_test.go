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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/rules"
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
	acting, ruleSet, err := actingRules("../../manifests/base/config.yaml")
	require.NoError(t, err)
	_, granted := clusterRoleRules(ruleSet)
	roles, err := optInRoles("../..", acting, granted)
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

	_, err = optInRoles("../..", acting, nil)
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

// authorized is a rule's declarations, for what generate derives from them.
type authorized struct {
	policy    []rbacv1.PolicyRule
	admission rules.Admission
}

func (a authorized) PolicyRules() []rbacv1.PolicyRule { return a.policy }
func (authorized) Writes() []rules.Write              { return nil }
func (authorized) MayHaveWritten(string, *unstructured.Unstructured, []string) error {
	return nil
}
func (a authorized) Admission() rules.Admission { return a.admission }

// TestDeleteVariables: a rule's deletes are allowed on the resources its Admission names, when
// its When holds, and an opt-in's while its key is "true"; a delete its RBAC grants and its
// Admission does not name fails generate, which would ship a policy refusing it.
func TestDeleteVariables(t *testing.T) {
	deleteSecrets := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "delete"}}}
	out, err := deleteVariables([]actingRule{
		{authorized{deleteSecrets, rules.Admission{Deletes: []rules.Resource{rules.Secrets}, When: "has(oldObject.type)"}}, "tidy-secrets", true},
		{authorized{admission: rules.Admission{Deletes: []rules.Resource{rules.ConfigMaps}}}, "tidy", false},
	})
	require.NoError(t, err)
	assert.Contains(t, out, "  - name: tidySecretsDeletes\n    expression: >-\n"+
		"      'tidy-secrets' in variables.optIn && variables.optIn['tidy-secrets'] == 'true' &&\n"+
		"      variables.resource in ['/secrets'] &&\n      (has(oldObject.type))\n")
	assert.Contains(t, out, "  - name: tidyDeletes\n    expression: >-\n      variables.resource in ['/configmaps']\n")
	assert.Contains(t, out, "  - name: ruleDeletes\n    expression: >-\n      variables.tidySecretsDeletes ||\n      variables.tidyDeletes\n")

	_, err = deleteVariables([]actingRule{{authorized{policy: deleteSecrets}, "tidy-secrets", false}})
	assert.ErrorContains(t, err, "rule tidy-secrets may delete secrets by its PolicyRules, but its Admission does not name it in Deletes")

	out, err = deleteVariables(nil)
	require.NoError(t, err)
	assert.Contains(t, out, "  - name: ruleDeletes\n    expression: >-\n      false\n", "no rule deletes: nothing may be")
}

// TestOwnerValidations: ownerReferences change only on the resources a rule gives owners, and
// only by gaining the owners it may add; with none, they never change.
func TestOwnerValidations(t *testing.T) {
	out := ownerValidations([]actingRule{{authorized{admission: rules.Admission{Owners: []rules.OwnerAdmission{
		{Resource: rules.InstallPlans, Owner: "r.kind == 'Subscription'", Owners: "Subscriptions"},
	}}}, "installplan-owners", false}})
	assert.Contains(t, out, "variables.resourceName in ['installplans.operators.coreos.com'] ||")
	assert.Contains(t, out, "message: operator-sweeper may change the ownerReferences of InstallPlans only\n")
	assert.Contains(t, out, "variables.resourceName != 'installplans.operators.coreos.com' || !has(object.metadata.ownerReferences) ||")
	assert.Contains(t, out, "        (r.kind == 'Subscription'))\n    message: operator-sweeper may give an InstallPlan only Subscriptions as owners\n")

	out = ownerValidations(nil)
	assert.Contains(t, out, "message: operator-sweeper may change no ownerReferences\n")
	assert.NotContains(t, out, "variables.resourceName")
}
