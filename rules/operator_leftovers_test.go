package rules

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			group := f.Object.Resource.Group
			assert.Equal(t, "rules.operator-leftovers.delete: ["+kind+"."+group+"]", f.OptIn, kind)
			var keys []string
			for _, fact := range f.Facts {
				keys = append(keys, strings.Fields(fact.Key())[0])
			}
			want := map[string][]string{"Operator": {"abandoned"}, "CustomResourceDefinition": {"abandoned", "not", "unused"}}[kind]
			if want == nil {
				want = []string{"abandoned", "not"}
			}
			assert.Equal(t, want, keys, "%s: the operator still abandoned, the component not shared (the CRD unused) are read again", kind)
		}
		assert.Contains(t, got["ClusterServiceVersion"].Evidence, "Operator etcd.operators lists it in status.components.refs")
		assert.Contains(t, got["CustomResourceDefinition"].Evidence, "deleting a CustomResourceDefinition deletes every custom resource of it: user data")
	})
	t.Run("opted-in kinds are deleted, the others not", func(t *testing.T) {
		findings := leftoversDeleting(t, "ClusterServiceVersion.operators.coreos.com", "InstallPlan.operators.coreos.com").Plan(context.Background(), viewWith(Coverage{}, debris...))
		optIn := map[string]string{}
		for _, f := range findings {
			optIn[f.Object.Kind] = f.OptIn
		}
		assert.Equal(t, map[string]string{
			"ClusterServiceVersion":    "",
			"InstallPlan":              "",
			"ClusterRole":              "rules.operator-leftovers.delete: [ClusterRole.rbac.authorization.k8s.io]",
			"CustomResourceDefinition": "rules.operator-leftovers.delete: [CustomResourceDefinition.apiextensions.k8s.io]",
			"Operator":                 "rules.operator-leftovers.delete: [Operator.operators.coreos.com]",
		}, optIn)
	})
	t.Run("a CRD another CSV still owns or requires is never deleted", func(t *testing.T) {
		other := csv("monitoring", "backup.v1", nil, func(o *Object) {
			o.Content["spec"].(map[string]any)["customresourcedefinitions"].(map[string]any)["required"] = []any{map[string]any{"name": "etcdclusters.etcd.database.coreos.com"}}
		})
		backupSub := object(Subscriptions, "monitoring", "backup", withContent(map[string]any{"status": map[string]any{"installedCSV": "backup.v1"}}))
		f := findingOf(t, leftoversDeleting(t, "CustomResourceDefinition.apiextensions.k8s.io").Plan(context.Background(), viewWith(Coverage{}, append(debris, other, backupSub)...)), "CustomResourceDefinition")
		assert.Nil(t, f.Action)
		assert.Contains(t, f.Evidence, "still owned or required by ClusterServiceVersion monitoring/backup.v1: not deleted")
	})
	t.Run("a CRD goes after the leftover CSV that owns it", func(t *testing.T) {
		f := findingOf(t, leftoversDeleting(t, "CustomResourceDefinition.apiextensions.k8s.io", "ClusterServiceVersion.operators.coreos.com").Plan(context.Background(), viewWith(Coverage{}, debris...)), "CustomResourceDefinition")
		assert.Equal(t, Delete{}, f.Action)
		assert.Equal(t, []ObjectRef{csvObj.Ref()}, f.DependsOn)
		assert.Contains(t, f.Evidence, "deleted only after ClusterServiceVersion operators/etcdoperator.v0.9.4, left behind too, which owns or requires it")
	})
	t.Run("a CRD is not deleted when a CSV may be unseen", func(t *testing.T) {
		coverage := Coverage{Namespaces: []string{"operators"}}
		f := findingOf(t, leftoversDeleting(t, "CustomResourceDefinition.apiextensions.k8s.io").Plan(context.Background(), viewWith(coverage, debris...)), "CustomResourceDefinition")
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

// leftoversDeleting is operator-leftovers opted in to delete kinds.
func leftoversDeleting(t *testing.T, kinds ...string) OperatorLeftovers {
	t.Helper()
	r, err := NewOperatorLeftovers(OperatorLeftoversArgs{Delete: kinds}, Settings{})
	require.NoError(t, err)
	return r
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

// installs makes a CSV install a Deployment.
func installs(deployment string) func(*Object) {
	return func(o *Object) {
		_ = unstructured.SetNestedSlice(o.Content, []any{map[string]any{"name": deployment}}, "spec", "install", "spec", "deployments")
	}
}

// deploymentWith is a Deployment with available replicas.
func deploymentWith(namespace, name string, available int64) *Object {
	return object(Deployments, namespace, name, withContent(map[string]any{"status": map[string]any{"availableReplicas": available}}))
}

func TestLeftoversMustBeAbandoned(t *testing.T) {
	succeeded := func(o *Object) { o.Content["status"] = map[string]any{"phase": "Succeeded"} }
	crdName := "etcdclusters.etcd.database.coreos.com"
	running := csv("operators", "etcdoperator.v0.9.4", []string{crdName}, withLabels("operators.coreos.com/etcd.operators", ""), succeeded, installs("etcd-operator"))
	deployment := deploymentWith("operators", "etcd-operator", 1)
	crd := object(CustomResourceDefinitions, "", crdName)
	op := operatorObject(
		ref("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "operators", "etcdoperator.v0.9.4"),
		ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName),
	)
	packageServer := csv("olm", "packageserver", nil, withLabels("olm.version", "v0.28.0"), succeeded, installs("packageserver"))
	clusterOperator := csv("openshift-operator-lifecycle-manager", "packageserver", nil, withLabels("olm.clusteroperator.name", "operator-lifecycle-manager-packageserver"))
	rule := leftoversDeleting(t, "ClusterServiceVersion.operators.coreos.com", "CustomResourceDefinition.apiextensions.k8s.io", "Operator.operators.coreos.com")

	findings := rule.Plan(context.Background(), viewWith(Coverage{}, running, deployment, crd, op, packageServer, clusterOperator))

	require.Len(t, findings, 1, "only the running CSV is reported; OLM's own are not; the running operator's CRD and Operator are not leftovers")
	f := findings[0]
	assert.Equal(t, running.Ref(), f.Object)
	assert.Equal(t, SeverityInfo, f.Severity)
	assert.Equal(t, "unmanaged: no Subscription, but it runs", f.Reason)
	assert.Contains(t, f.Evidence, "ClusterServiceVersion operators/etcdoperator.v0.9.4 runs: its Deployments operators/etcd-operator are available")
	assert.Nil(t, f.Action)
}

// TestAPhaseIsNoEvidenceOfLife: a CSV that Succeeded, but whose Deployment is gone or unavailable,
// or that is being deleted, does not run: OLM wrote the phase, and OLM may be gone. Its operator's
// components are left behind.
func TestAPhaseIsNoEvidenceOfLife(t *testing.T) {
	crdName := "etcdclusters.etcd.database.coreos.com"
	op := operatorObject(
		ref("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "operators", "etcdoperator.v0.9.4"),
		ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName),
	)
	crd := object(CustomResourceDefinitions, "", crdName)
	succeeded := func(o *Object) { o.Content["status"] = map[string]any{"phase": "Succeeded"} }
	labelled := withLabels("operators.coreos.com/etcd.operators", "")
	tests := []struct {
		name    string
		csv     *Object
		objects []*Object
		runs    string // the evidence; "" if it does not run
		stopped string // why it does not run, in the evidence of what is left behind
	}{
		{name: "its Deployment available: runs", csv: csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, succeeded, installs("etcd-operator")),
			objects: []*Object{deploymentWith("operators", "etcd-operator", 2)},
			runs:    "ClusterServiceVersion operators/etcdoperator.v0.9.4 runs: its Deployments operators/etcd-operator are available"},
		{name: "its Deployment gone", csv: csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, succeeded, installs("etcd-operator")),
			stopped: "ClusterServiceVersion operators/etcdoperator.v0.9.4 does not run: its Deployment operators/etcd-operator does not exist"},
		{name: "its Deployment without an available replica", csv: csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, succeeded, installs("etcd-operator")),
			objects: []*Object{deploymentWith("operators", "etcd-operator", 0)},
			stopped: "ClusterServiceVersion operators/etcdoperator.v0.9.4 does not run: its Deployment operators/etcd-operator has no available replica"},
		{name: "being deleted, its Deployment still available", csv: csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, succeeded, installs("etcd-operator"),
			terminatingFor(time.Hour, "operators.coreos.com/csv-cleanup")), objects: []*Object{deploymentWith("operators", "etcd-operator", 1)},
			stopped: "ClusterServiceVersion operators/etcdoperator.v0.9.4 is being deleted: it is being uninstalled"},
		{name: "it installs no Deployment", csv: csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, succeeded),
			stopped: "ClusterServiceVersion operators/etcdoperator.v0.9.4 does not run: it installs no Deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := append([]*Object{op, crd, tt.csv}, tt.objects...)
			findings := OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{}, objects...))
			if tt.runs != "" {
				require.Len(t, findings, 1)
				assert.Equal(t, "unmanaged: no Subscription, but it runs", findings[0].Reason)
				assert.Contains(t, findings[0].Evidence, tt.runs)
				return
			}
			for what, obj := range map[string]*Object{"the Operator": op, "its component": crd} {
				f := findingAbout(t, findings, obj)
				assert.Equal(t, "subscription deleted; left behind", f.Reason, "%s is left behind", what)
				assert.Contains(t, f.Evidence, tt.stopped, "%s: the evidence says why the operator does not run", what)
			}
		})
	}

	t.Run("the Deployments not listed: it may run", func(t *testing.T) {
		running := csv("operators", "etcdoperator.v0.9.4", []string{crdName}, labelled, installs("etcd-operator"))
		findings := OperatorLeftovers{}.Plan(context.Background(), viewWith(Coverage{Unlisted: []schema.GroupResource{Deployments.GroupResource()}}, op, crd, running))
		require.Len(t, findings, 1)
		assert.Equal(t, "unmanaged: no Subscription, but it runs", findings[0].Reason)
		assert.Contains(t, findings[0].Evidence, "the Deployments of operators were not all listed: it may run")
	})
}

func TestSharedComponentsAreKept(t *testing.T) {
	shared := object(ConfigMaps, "operators", "shared")
	mine := object(ConfigMaps, "operators", "mine")
	abandoned := object(Operators, "", "etcd.operators", withContent(map[string]any{"status": map[string]any{"components": map[string]any{"refs": []any{
		ref("v1", "ConfigMap", "operators", "shared"), ref("v1", "ConfigMap", "operators", "mine")}}}}))
	live := object(Operators, "", "backup.operators", withContent(map[string]any{"status": map[string]any{"components": map[string]any{"refs": []any{
		ref("v1", "ConfigMap", "operators", "shared")}}}}))
	sub := object(Subscriptions, "operators", "backup")

	findings := leftoversDeleting(t, "ConfigMap").Plan(context.Background(), viewWith(Coverage{}, shared, mine, abandoned, live, sub))

	kept := findingAbout(t, findings, shared)
	assert.Nil(t, kept.Action)
	assert.Equal(t, SeverityInfo, kept.Severity)
	assert.Contains(t, kept.Evidence, "also listed by Operator backup.operators, whose Subscription operators/backup exists: shared, kept")
	assert.Equal(t, Delete{}, findingAbout(t, findings, mine).Action)
	assert.Empty(t, findingAbout(t, findings, mine).OptIn)

	// Read again: the live operator lists it now.
	fact := findingAbout(t, findings, mine).Facts[1]
	read := []Resource{Operators, Subscriptions}
	holds, _ := fact.Holds(freshView(read, Coverage{}, abandoned, live, sub))
	assert.True(t, holds)
	sharing := object(Operators, "", "backup.operators", withContent(map[string]any{"status": map[string]any{"components": map[string]any{"refs": []any{
		ref("v1", "ConfigMap", "operators", "mine")}}}}))
	holds, evidence := fact.Holds(freshView(read, Coverage{}, abandoned, sharing, sub))
	assert.False(t, holds)
	assert.Equal(t, "re-checked live: Operator backup.operators, whose Subscription operators/backup exists, lists it now: shared", evidence)
}

func TestLeftoverOptInNamesTheGroup(t *testing.T) {
	knative := Resource{GroupVersionResource: schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}, Kind: "Service", Namespaced: true}
	hello := object(knative, "operators", "hello")
	metrics := object(Services, "operators", "metrics")
	op := operatorObject(ref("serving.knative.dev/v1", "Service", "operators", "hello"), ref("v1", "Service", "operators", "metrics"))
	view := NewView(testNow, append(slices.Clone(allTestResources), knative), Coverage{}, []*Object{hello, metrics, op})

	findings := leftoversDeleting(t, "Service").Plan(context.Background(), view)

	assert.Empty(t, findingAbout(t, findings, metrics).OptIn, "Service is the core group's")
	assert.Equal(t, "rules.operator-leftovers.delete: [Service.serving.knative.dev]", findingAbout(t, findings, hello).OptIn)
}

func TestLeftoverOptInErrors(t *testing.T) {
	_, err := NewOperatorLeftovers(OperatorLeftoversArgs{Delete: []string{"ClusterServiceVersion", "Service.serving.knative.dev", "Secret"}}, Settings{})
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, `rules.operator-leftovers.delete[0] "ClusterServiceVersion" names no API group and is not a core kind: write ClusterServiceVersion.operators.coreos.com`, lines[0])
	assert.True(t, strings.HasPrefix(lines[1], `rules.operator-leftovers.delete[1] "Service.serving.knative.dev" is not a kind OLM lists as a component; use one of APIService.apiregistration.k8s.io, ClusterRole.rbac.authorization.k8s.io, `), lines[1])
}

// findingAbout returns the one finding about obj.
func findingAbout(t *testing.T, findings []Finding, obj *Object) Finding {
	t.Helper()
	for _, f := range findings {
		if f.Object.UID == obj.UID {
			return f
		}
	}
	t.Fatalf("no finding about %s", obj.Ref())
	return Finding{}
}

func TestAnOperatorDisownedByOLMStillRuns(t *testing.T) {
	// OLM removed the operators.coreos.com/etcd.operators label when the Subscription went; the
	// package in its properties annotation stays.
	running := csv("operators", "etcdoperator.v0.9.4", nil, withAnnotations("operatorframework.io/properties",
		`{"properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}},{"type":"olm.gvk","value":{"group":"etcd.database.coreos.com","kind":"EtcdCluster","version":"v1beta2"}}]}`),
		installs("etcd-operator"))
	findings := leftoversDeleting(t, "Operator.operators.coreos.com").Plan(context.Background(), viewWith(Coverage{}, running, deploymentWith("operators", "etcd-operator", 1), operatorObject()))
	require.Len(t, findings, 1, "the Operator of a running operator is not left behind")
	assert.Equal(t, running.Ref(), findings[0].Object)
	assert.Equal(t, "unmanaged: no Subscription, but it runs", findings[0].Reason)
}

// TestOperatorLeftoversPolicyRules: get and delete on the kinds opted in, and no other.
func TestOperatorLeftoversPolicyRules(t *testing.T) {
	tests := []struct {
		name string
		args OperatorLeftoversArgs
		want []rbacv1.PolicyRule
	}{
		{name: "reporting only"},
		{name: "InstallPlans opted in", args: OperatorLeftoversArgs{Delete: []string{"InstallPlan.operators.coreos.com"}}, want: []rbacv1.PolicyRule{
			{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"installplans"}, Verbs: []string{"get", "delete"}},
		}},
		{name: "its opt-in in the cluster: OLM's own kinds", args: OperatorLeftovers{}.OptInArgs().(OperatorLeftoversArgs), want: []rbacv1.PolicyRule{
			{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"clusterserviceversions", "installplans", "operators", "operatorconditions"}, Verbs: []string{"get", "delete"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policyRulesOf(t, OperatorLeftoversName, tt.args, Settings{}))
		})
	}
}
