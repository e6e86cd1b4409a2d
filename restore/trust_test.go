package restore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-sweeper/operator-sweeper/backup"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
	"github.com/operator-sweeper/operator-sweeper/rules"
)

var testKey = []byte(strings.Repeat("k", 32))

// olmBinding is a ClusterRoleBinding OLM made for CSV operators/etcd.v1, as its pre-image keeps it.
func olmBinding() *unstructured.Unstructured {
	return report.Image(reporttest.Object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "etcd-binding", "crb", func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"olm.owner": "etcd.v1", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"})
		u.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "etcd-role"}
		u.Object["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": "etcd-operator", "namespace": "operators"}}
		delete(u.Object, "data")
	}))
}

// signed is olm-rbac's record of the delete of obj, signed for cluster uid-prod.
func signed(t *testing.T, obj *unstructured.Unstructured) Record {
	t.Helper()
	f := reporttest.Record("clusterrolebindings", obj, report.ActionSummary{Type: "Delete"})
	f.Rule = "olm-rbac"
	f.Evidence = []string{"labelled olm.owner=etcd.v1, olm.owner.namespace=operators, olm.owner.kind=ClusterServiceVersion"}
	f.Before.Kept = "secret:operator-sweeper/operator-sweeper-pre-image-run-1-000001"
	var err error
	f.Signature, err = backup.Sign(testKey, f, "uid-prod", "run-1")
	require.NoError(t, err)
	return Record{FindingResult: f, clusterUID: "uid-prod", runID: "run-1"}
}

func TestTrustRecord(t *testing.T) {
	tr := trust{cluster: "prod", clusterUID: "uid-prod", key: testKey, rules: authorized(t)}
	good := signed(t, olmBinding())
	require.NoError(t, tr.record(good))

	tests := []struct {
		name    string
		change  func(*Record)
		trust   trust
		wantErr string
	}{
		{name: "of another cluster", change: func(r *Record) { r.clusterUID = "uid-staging" },
			wantErr: `it is a record of another cluster (kube-system uid "uid-staging"), not of prod (uid uid-prod)`},
		{name: "unsigned", change: func(r *Record) { r.Signature = "" }, wantErr: "carries no signature"},
		{name: "edited: another object", change: func(r *Record) { r.Object.Name = "cluster-admin" }, wantErr: "was changed after the sweeper signed it"},
		{name: "edited: another run", change: func(r *Record) { r.runID = "run-2" }, wantErr: "was changed"},
		{name: "no signing key", trust: trust{cluster: "prod", clusterUID: "uid-prod", keyErr: assert.AnError, rules: authorized(t)},
			wantErr: "nothing can be verified without the sweeper's signing key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := signed(t, olmBinding())
			if tt.change != nil {
				tt.change(&rec)
			}
			use := tr
			if tt.trust.rules != nil {
				use = tt.trust
			}
			err := use.record(rec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}

	t.Run("a write its rule does not declare, though signed", func(t *testing.T) {
		for _, rule := range []string{"stuck-terminating", "no-such-rule", "installplan-owners"} {
			f := good.FindingResult
			f.Rule, f.Signature = rule, ""
			var err error
			f.Signature, err = backup.Sign(testKey, f, "uid-prod", "run-1")
			require.NoError(t, err)
			err = tr.record(Record{FindingResult: f, clusterUID: "uid-prod", runID: "run-1"})
			require.Error(t, err, rule)
			assert.Contains(t, err.Error(), "no sweep of this version could have written it")
		}
	})
}

func TestTrustPreImage(t *testing.T) {
	tr := trust{cluster: "prod", clusterUID: "uid-prod", key: testKey, rules: authorized(t)}
	rec := signed(t, olmBinding())
	require.NoError(t, tr.preImage(rec, olmBinding()))

	adminBinding := olmBinding()
	adminBinding.SetLabels(nil)
	adminBinding.Object["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}
	otherCSV := olmBinding()
	otherCSV.SetLabels(map[string]string{"olm.owner": "evil.v1", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"})
	renamed := olmBinding()
	renamed.SetName("cluster-admin-binding")
	role := olmBinding()
	role.SetKind("ClusterRole")
	for name, tt := range map[string]struct {
		obj     *unstructured.Unstructured
		wantErr string
	}{
		"a binding to cluster-admin, no OLM labels": {adminBinding, "is not labelled as a ClusterServiceVersion's by OLM"},
		"labelled as another CSV's":                 {otherCSV, "not as the finding's"},
		"another object":                            {renamed, "not of the ClusterRoleBinding etcd-binding its record names"},
		"another kind":                              {role, "not of the ClusterRoleBinding"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tr.preImage(rec, tt.obj)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}

	t.Run("finalizers removed that the pre-image does not hold, or Kubernetes' own", func(t *testing.T) {
		cm := report.Image(reporttest.Object("v1", "ConfigMap", "shop", "cfg", "cm", reporttest.WithFinalizers("kubernetes.io/pvc-protection", "shop.example.com/archive")))
		for _, removed := range []string{"other.example.com/x", "kubernetes.io/pvc-protection"} {
			f := reporttest.Record("configmaps", cm, report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{removed}})
			assert.Error(t, tr.preImage(Record{FindingResult: f}, cm), removed)
		}
		f := reporttest.Record("configmaps", cm, report.ActionSummary{Type: "RemoveFinalizers", Finalizers: []string{"shop.example.com/archive"}})
		assert.NoError(t, tr.preImage(Record{FindingResult: f}, cm))
	})
}

func TestGrants(t *testing.T) {
	assert.Equal(t, []string{"it binds ClusterRole etcd-role to ServiceAccount operators/etcd-operator"}, grants(olmBinding()))
	role := report.Image(reporttest.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "etcd-role", "cr", func(u *unstructured.Unstructured) {
		u.Object["rules"] = []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get", "list"}, "resourceNames": []any{"etcd"}}}
	}))
	assert.Equal(t, []string{"it grants: [get list] on [secrets] of API groups [] named [etcd]"}, grants(role))
	assert.Nil(t, grants(report.Image(reporttest.Object("v1", "ConfigMap", "shop", "cfg", "cm"))))
}

// authorized are the rules that write, as restore builds them.
func authorized(t *testing.T) map[string]rules.Authorized {
	t.Helper()
	out, broken := declared(rules.Registry(), nil)
	require.Empty(t, broken)
	return out
}

// TestTrustARuleThatCannotBeBuilt: a rule whose constructor fails is an error of the run, and its
// records are refused for that reason — not as records no rule of this version could have written.
func TestTrustARuleThatCannotBeBuilt(t *testing.T) {
	out, broken := declared(rules.Registry(), map[string]any{rules.OLMRBACName: "not the rule's arguments"})
	require.Contains(t, broken, rules.OLMRBACName)
	assert.NotContains(t, out, rules.OLMRBACName)
	tr := trust{cluster: "prod", clusterUID: "uid-prod", key: testKey, rules: out, broken: broken}
	err := tr.record(signed(t, olmBinding()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `rule "olm-rbac" could not be built (rules.olm-rbac: arguments of type string, want rules.OLMRBACArgs): its records cannot be checked`)
	assert.NotContains(t, err.Error(), "no sweep of this version could have written it")

	errs := brokenRules(broken)
	require.Len(t, errs, 1)
	assert.Equal(t, report.StagePlan, errs[0].Stage)
	assert.Equal(t, rules.OLMRBACName, errs[0].Rule)
	assert.True(t, errs[0].Fatal, "it fails the run")
}
