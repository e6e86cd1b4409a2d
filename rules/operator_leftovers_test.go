package rules

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// operatorObject is the Operator etcd.operators listing refs.
func operatorObject(refs ...map[string]any) *Object {
	list := make([]any, 0, len(refs))
	for _, r := range refs {
		list = append(list, r)
	}
	return object(Operators, "", "etcd.operators", withContent(map[string]any{"status": map[string]any{"components": map[string]any{"refs": list}}}))
}

func ref(apiVersion, kind, namespace, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": namespace, "name": name,
		"conditions": []any{map[string]any{"type": "Succeeded", "status": "True"}}}
}

func TestOperatorLeftovers(t *testing.T) {
	csvObj := csv("operators", "etcdoperator.v0.9.4", []string{"etcdclusters.etcd.database.coreos.com"}, withLabels("operators.coreos.com/etcd.operators", ""))
	plan := object(InstallPlans, "operators", "install-abc")
	role := object(ClusterRoles, "", "etcd-role")
	crd := object(CustomResourceDefinitions, "", "etcdclusters.etcd.database.coreos.com")
	op := operatorObject(
		ref("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "operators", "etcdoperator.v0.9.4"),
		ref("operators.coreos.com/v1alpha1", "InstallPlan", "operators", "install-abc"),
		ref("rbac.authorization.k8s.io/v1", "ClusterRole", "", "etcd-role"),
		ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "etcdclusters.etcd.database.coreos.com"),
		ref("v1", "ServiceAccount", "operators", "already-gone"),
	)
	debris := []*Object{op, csvObj, plan, role, crd}

	t.Run("Subscription deleted: every ref, and the Operator, reported with opt-in deletes", func(t *testing.T) {
		findings := OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{}, debris...))
		got := map[string]Finding{}
		for _, f := range findings {
			got[f.Object.Kind] = f
		}
		require.Len(t, findings, 5, "the CSV is reported once, the missing ServiceAccount not at all")
		for kind, f := range got {
			assert.Equal(t, SeverityWarning, f.Severity, kind)
			assert.Equal(t, "subscription deleted; left behind", f.Reason, kind)
			assert.Contains(t, f.Evidence, "no Subscription in namespace operators is named etcd, has spec.name etcd or carries label operators.coreos.com/etcd.operators", kind)
			assert.Equal(t, Delete{}, f.Action, kind)
			assert.Equal(t, "rules.operator-leftovers.delete: ["+kind+"]", f.OptIn, kind)
		}
		assert.Contains(t, got["ClusterServiceVersion"].Evidence, "Operator etcd.operators lists it in status.components.refs")
		assert.Contains(t, got["CustomResourceDefinition"].Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
	})
	t.Run("opted-in kinds are deleted, the others not", func(t *testing.T) {
		findings := OperatorLeftovers{args: OperatorLeftoversArgs{Delete: []string{"ClusterServiceVersion", "InstallPlan"}}}.Plan(context.Background(), viewWith(Coverage{}, debris...))
		optIn := map[string]string{}
		for _, f := range findings {
			optIn[f.Object.Kind] = f.OptIn
		}
		assert.Equal(t, map[string]string{
			"ClusterServiceVersion":    "",
			"InstallPlan":              "",
			"ClusterRole":              "rules.operator-leftovers.delete: [ClusterRole]",
			"CustomResourceDefinition": "rules.operator-leftovers.delete: [CustomResourceDefinition]",
			"Operator":                 "rules.operator-leftovers.delete: [Operator]",
		}, optIn)
	})
	t.Run("a CRD another CSV still owns or requires is never deleted", func(t *testing.T) {
		other := csv("monitoring", "backup.v1", nil, func(o *Object) {
			o.Content["spec"].(map[string]any)["customresourcedefinitions"].(map[string]any)["required"] = []any{map[string]any{"name": "etcdclusters.etcd.database.coreos.com"}}
		})
		backupSub := object(Subscriptions, "monitoring", "backup", withContent(map[string]any{"status": map[string]any{"installedCSV": "backup.v1"}}))
		f := findingOf(t, OperatorLeftovers{args: OperatorLeftoversArgs{Delete: []string{"CustomResourceDefinition"}}}.Plan(context.Background(), viewWith(Coverage{}, append(debris, other, backupSub)...)), "CustomResourceDefinition")
		assert.Nil(t, f.Action)
		assert.Contains(t, f.Evidence, "still owned or required by ClusterServiceVersion monitoring/backup.v1: not deleted")
	})
	t.Run("a CRD goes after the leftover CSV that owns it", func(t *testing.T) {
		f := findingOf(t, OperatorLeftovers{args: OperatorLeftoversArgs{Delete: []string{"CustomResourceDefinition", "ClusterServiceVersion"}}}.Plan(context.Background(), viewWith(Coverage{}, debris...)), "CustomResourceDefinition")
		assert.Equal(t, Delete{}, f.Action)
		assert.Equal(t, []ObjectRef{csvObj.Ref()}, f.DependsOn)
		assert.Contains(t, f.Evidence, "deleted only after ClusterServiceVersion operators/etcdoperator.v0.9.4, left behind too, which owns or requires it")
	})
	t.Run("a CRD is not deleted when a CSV may be unseen", func(t *testing.T) {
		coverage := Coverage{Namespaces: []string{"operators"}}
		f := findingOf(t, OperatorLeftovers{args: OperatorLeftoversArgs{Delete: []string{"CustomResourceDefinition"}}}.Plan(context.Background(), viewWith(coverage, debris...)), "CustomResourceDefinition")
		assert.Nil(t, f.Action)
		assert.Contains(t, f.Evidence, "ClusterServiceVersions were not all listed: one may still own or require it; not deleted")
	})
	t.Run("the Subscription exists: nothing", func(t *testing.T) {
		for name, sub := range map[string]*Object{
			"by label":   object(Subscriptions, "operators", "my-etcd", withLabels("operators.coreos.com/etcd.operators", "")),
			"by name":    object(Subscriptions, "operators", "etcd"),
			"by package": object(Subscriptions, "operators", "my-etcd", withContent(map[string]any{"spec": map[string]any{"name": "etcd"}, "status": map[string]any{"installedCSV": "etcdoperator.v0.9.4"}})),
		} {
			assert.Empty(t, OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{}, append(debris, sub)...)), name)
		}
	})
	t.Run("Subscriptions not listed in the namespace: nothing", func(t *testing.T) {
		assert.Empty(t, OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{Failed: []schema.GroupResource{Subscriptions.GroupResource()}}, debris...)))
	})
}

func TestCSVsWithoutSubscription(t *testing.T) {
	lone := csv("shop", "lonely.v1", nil)
	copied := csv("other", "etcdoperator.v0.9.4", nil, withLabels("olm.copiedFrom", "operators"))
	installedCSV := csv("operators", "etcdoperator.v0.9.4", nil)
	sub := object(Subscriptions, "operators", "etcd", withContent(map[string]any{"status": map[string]any{"currentCSV": "etcdoperator.v0.9.4"}}))

	findings := OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{}, lone, copied, installedCSV, sub))

	require.Len(t, findings, 1, "the copy and the installed CSV are not leftovers")
	assert.Equal(t, "lonely.v1", findings[0].Object.Name)
	assert.Equal(t, "no Subscription installed it; left behind", findings[0].Reason)
	assert.Equal(t, []string{"no Subscription in namespace shop has it as status.installedCSV or status.currentCSV, or is of the operator it is labelled with"}, findings[0].Evidence)
}

func TestSplitOperatorName(t *testing.T) {
	for name, want := range map[string][3]string{
		"etcd.operators":        {"etcd", "operators", "ok"},
		"my.dotted.package.olm": {"my.dotted.package", "olm", "ok"},
		"nodot":                 {"", "", ""},
		".operators":            {"", "", ""},
		"etcd.":                 {"", "", ""},
	} {
		pkg, ns, ok := splitOperatorName(name)
		assert.Equal(t, want, [3]string{pkg, ns, map[bool]string{true: "ok"}[ok]}, name)
	}
}

// findingOf returns the one finding about an object of kind.
func findingOf(t *testing.T, findings []Finding, kind string) Finding {
	t.Helper()
	var found []Finding
	for _, f := range findings {
		if f.Object.Kind == kind {
			found = append(found, f)
		}
	}
	require.Len(t, found, 1, "findings about a %s", kind)
	return found[0]
}
