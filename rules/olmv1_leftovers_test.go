package rules

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fixtures of the olmv1-leftovers tests: ClusterExtension etcd, installed in namespace
// etcd-system, whose RBAC, Deployment, ServiceAccount, ConfigMap and CRD widgets.acme.io OLM v1
// labelled as its own.

const (
	olmv1OptIn    = "rules.olmv1-leftovers.delete"
	olmv1CERDName = "clusterextensions.olm.operatorframework.io"
)

// ceOwned labels an object as applied by OLM v1 for ClusterExtension name.
func ceOwned(name string) func(*Object) {
	return withLabels("olm.operatorframework.io/owner-kind", "ClusterExtension", "olm.operatorframework.io/owner-name", name)
}

// ceOwnerLine is the evidence that an object is labelled as ClusterExtension name's.
func ceOwnerLine(name string) string {
	return "labelled olm.operatorframework.io/owner-kind=ClusterExtension, olm.operatorframework.io/owner-name=" + name
}

// ceRef is an ownerReference to ClusterExtension name, as OLM v1 sets it.
func ceRef(apiVersion, name string) func(*Object) {
	return ownedBy(metav1.OwnerReference{APIVersion: apiVersion, Kind: "ClusterExtension", Name: name, UID: "ce-uid"})
}

// clusterExtension is a ClusterExtension with content.
func clusterExtension(name string, content map[string]any, opts ...func(*Object)) *Object {
	return object(ClusterExtensions, "", name, append([]func(*Object){withContent(content)}, opts...)...)
}

// olmv1View is a view of objects over every test resource and served, but those coverage says
// were not listed.
func olmv1View(coverage Coverage, served []Resource, objects ...*Object) *View {
	var listed []Resource
	for _, r := range append(slices.Clone(allTestResources), served...) {
		if !slices.Contains(coverage.Unlisted, r.GroupResource()) {
			listed = append(listed, r)
		}
	}
	return NewView(testNow, listed, coverage, objects)
}

// olmv1Want is a finding of olmv1-leftovers, exactly, with its facts by Key.
type olmv1Want struct {
	Object    ObjectRef
	Severity  Severity
	Reason    string
	Evidence  []string
	Action    Action
	OptIn     string
	Facts     []string
	BlockedBy []ObjectRef
}

// olmv1Got is what olmv1Want compares of findings; what the rule never sets must be empty.
func olmv1Got(t *testing.T, findings []Finding) []olmv1Want {
	t.Helper()
	var got []olmv1Want
	for _, f := range findings {
		assert.Empty(t, f.Rule, "set by the engine")
		assert.Empty(t, f.DependsOn, f.Object.String())
		assert.Nil(t, f.Held, f.Object.String())
		w := olmv1Want{Object: f.Object, Severity: f.Severity, Reason: f.Reason, Evidence: f.Evidence, Action: f.Action, OptIn: f.OptIn, BlockedBy: f.BlockedBy}
		for _, fact := range f.Facts {
			w.Facts = append(w.Facts, fact.Key())
		}
		got = append(got, w)
	}
	return got
}

// planOLMv1 plans olmv1-leftovers, opted in to deleting or not.
func planOLMv1(t *testing.T, optIn bool, view *View) []Finding {
	t.Helper()
	rule, err := NewOLMv1Leftovers(OLMv1LeftoversArgs{Delete: optIn}, Settings{})
	require.NoError(t, err)
	return rule.Plan(context.Background(), view)
}

// asUnstructured is obj as restore would read it from a pre-image.
func asUnstructured(obj *Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(obj.Ref().APIVersion())
	u.SetKind(obj.Resource.Kind)
	u.SetNamespace(obj.Namespace)
	u.SetName(obj.Name)
	u.SetLabels(obj.Labels)
	return u
}

func TestOLMv1Leftovers(t *testing.T) {
	owned := ceOwned("etcd")
	served := []Resource{ClusterExtensions}
	gone := "ClusterExtension etcd no longer exists"
	olmGone := "ClusterExtension etcd no longer exists: OLM v1 is not installed (no CRD " + olmv1CERDName + ")"
	absentCE := ObjectAbsent{ClusterExtensions, "", "etcd"}.Key()
	absentCRD := ObjectAbsent{CustomResourceDefinitions, "", olmv1CERDName}.Key()

	clusterRole := object(ClusterRoles, "", "etcd-manager", owned)
	clusterBinding := object(ClusterRoleBindings, "", "etcd-manager", owned)
	role := object(Roles, "etcd-system", "etcd-leader", owned)
	binding := object(RoleBindings, "etcd-system", "etcd-leader", owned)
	deployment := object(Deployments, "etcd-system", "etcd-operator", owned)
	serviceAccount := object(ServiceAccounts, "etcd-system", "etcd-operator", owned)
	configMap := object(ConfigMaps, "etcd-system", "etcd-config", owned)
	namespace := object(Namespaces, "", "etcd-system")
	leftovers := []*Object{clusterRole, clusterBinding, role, binding, deployment, serviceAccount, configMap, namespace}

	// deleted is the finding of a labelled RBAC object of gone ClusterExtension etcd.
	deleted := func(obj *Object, why, fact string) olmv1Want {
		return olmv1Want{
			Object:   obj.Ref(),
			Severity: SeverityWarning,
			Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; its " + obj.Resource.Kind + " is left behind",
			Evidence: []string{ceOwnerLine("etcd"), why},
			Action:   Delete{},
			OptIn:    olmv1OptIn,
			Facts:    []string{fact, "no workloads of ClusterExtension etcd"},
		}
	}
	// reported is the finding of another labelled object of gone ClusterExtension etcd.
	reported := func(obj *Object, evidence ...string) olmv1Want {
		return olmv1Want{
			Object:   obj.Ref(),
			Severity: SeverityWarning,
			Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; its " + obj.Resource.Kind + " is left behind",
			Evidence: append([]string{ceOwnerLine("etcd"), gone}, evidence...),
		}
	}
	// kept is the finding of a labelled RBAC object of gone ClusterExtension etcd while its
	// Deployment exists: it may still run with it.
	kept := func(obj *Object) olmv1Want {
		return reported(obj, "kept while Deployment etcd-system/etcd-operator, applied for the same ClusterExtension, exists: it may run with it (delete it first)")
	}
	// collected is the finding of a labelled object the garbage collector deletes.
	collected := func(obj *Object) olmv1Want {
		return olmv1Want{
			Object:   obj.Ref(),
			Severity: SeverityInfo,
			Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; the garbage collector deletes its " + obj.Resource.Kind,
			Evidence: []string{ceOwnerLine("etcd"), gone, "it has an ownerReference to the ClusterExtension: the garbage collector deletes it"},
		}
	}
	// holding is the finding of a namespace that holds leftovers.
	holding := func(obj *Object, counts string) olmv1Want {
		return olmv1Want{
			Object:   obj.Ref(),
			Severity: SeverityInfo,
			Reason:   "holds what OLM v1 applied for ClusterExtensions that no longer exist: the operator's namespace, perhaps",
			Evidence: []string{"objects left behind in it: " + counts},
		}
	}

	crd := object(CustomResourceDefinitions, "", "widgets.acme.io", owned)
	var widgetObjects []*Object
	for i := 1; i <= 6; i++ {
		widgetObjects = append(widgetObjects, object(widgets, "shop", fmt.Sprintf("w%d", i)))
	}
	crdKept := func(evidence ...string) olmv1Want {
		return reported(crd, evidence...)
	}

	tests := []struct {
		name     string
		coverage Coverage
		served   []Resource // listed besides allTestResources
		objects  []*Object
		want     []olmv1Want
	}{
		// 1. Leftovers of a gone ClusterExtension.
		{
			name:    "ClusterExtension gone: RBAC deleted, the rest reported, the namespace counted",
			served:  served,
			objects: slices.DeleteFunc(slices.Clone(leftovers), func(o *Object) bool { return o == deployment }),
			want: []olmv1Want{ // in the view's order: by resource, namespace, name
				deleted(clusterBinding, gone, absentCE),
				deleted(clusterRole, gone, absentCE),
				reported(configMap),
				deleted(binding, gone, absentCE),
				deleted(role, gone, absentCE),
				reported(serviceAccount),
				holding(namespace, "4 of ClusterExtension etcd"),
			},
		},
		{
			name:    "ClusterExtension gone, its Deployment still there: RBAC kept, everything reported",
			served:  served,
			objects: leftovers,
			want: []olmv1Want{
				kept(clusterBinding),
				kept(clusterRole),
				reported(configMap),
				reported(deployment),
				kept(binding),
				kept(role),
				reported(serviceAccount),
				holding(namespace, "5 of ClusterExtension etcd"),
			},
		},
		{
			name:    "ClusterExtension present: nothing",
			served:  served,
			objects: append([]*Object{clusterExtension("etcd", nil)}, leftovers...),
		},
		{
			name:    "ClusterExtension present and terminating: nothing",
			served:  served,
			objects: append([]*Object{clusterExtension("etcd", nil, terminatingFor(time.Hour, "olm.operatorframework.io/cleanup-unpack-cache"))}, leftovers...),
		},
		{
			name:   "objects being deleted: nothing",
			served: served,
			objects: []*Object{
				object(ClusterRoles, "", "etcd-manager", owned, terminatingFor(time.Minute)),
				object(ConfigMaps, "etcd-system", "etcd-config", owned, terminatingFor(time.Minute)),
				namespace,
			},
		},
		{
			name:   "owner-kind not ClusterExtension: nothing",
			served: served,
			objects: []*Object{
				object(ClusterRoles, "", "etcd-manager", withLabels("olm.operatorframework.io/owner-kind", "ClusterCatalog", "olm.operatorframework.io/owner-name", "etcd")),
				object(ClusterRoles, "", "no-kind", withLabels("olm.operatorframework.io/owner-name", "etcd")),
			},
		},
		{
			name:    "owner-name empty: nothing",
			served:  served,
			objects: []*Object{object(ClusterRoles, "", "etcd-manager", ceOwned(""))},
		},
		{
			name:   "ownerReference to the ClusterExtension: the garbage collector's",
			served: served,
			objects: []*Object{
				object(ClusterRoles, "", "etcd-manager", owned, ceRef("olm.operatorframework.io/v1", "etcd")),
				object(ConfigMaps, "etcd-system", "etcd-config", owned, ceRef("olm.operatorframework.io/v1", "etcd")),
			},
			want: []olmv1Want{
				collected(object(ClusterRoles, "", "etcd-manager")),
				collected(object(ConfigMaps, "etcd-system", "etcd-config")),
			},
		},
		{
			name:    "ownerReference to a ClusterExtension of another group: deleted",
			served:  served,
			objects: []*Object{object(ClusterRoles, "", "etcd-manager", owned, ceRef("example.com/v1", "etcd"))},
			want:    []olmv1Want{deleted(object(ClusterRoles, "", "etcd-manager"), gone, absentCE)},
		},
		{
			name:    "namespace being deleted: not counted",
			served:  served,
			objects: []*Object{configMap, object(Namespaces, "", "etcd-system", terminatingFor(time.Minute, "kubernetes"))},
			want:    []olmv1Want{reported(configMap)},
		},
		{
			name:    "namespace not in the view: not counted",
			served:  served,
			objects: []*Object{configMap},
			want:    []olmv1Want{reported(configMap)},
		},
		{
			name:   "two gone ClusterExtensions in one namespace: counted apart",
			served: served,
			objects: []*Object{configMap, deployment, namespace,
				object(ConfigMaps, "etcd-system", "zookeeper-config", ceOwned("zookeeper"))},
			want: []olmv1Want{
				reported(configMap),
				{
					Object:   object(ConfigMaps, "etcd-system", "zookeeper-config").Ref(),
					Severity: SeverityWarning,
					Reason:   "applied by OLM v1 for ClusterExtension zookeeper, which no longer exists; its ConfigMap is left behind",
					Evidence: []string{ceOwnerLine("zookeeper"), "ClusterExtension zookeeper no longer exists"},
				},
				reported(deployment),
				holding(namespace, "2 of ClusterExtension etcd, 1 of ClusterExtension zookeeper"),
			},
		},

		// 2. OLM v1 gone, or not looked at.
		{
			name:    "OLM v1 not installed: gone, on the CRD's absence",
			objects: []*Object{clusterRole, configMap},
			want: []olmv1Want{
				deleted(clusterRole, olmGone, absentCRD),
				{
					Object:   configMap.Ref(),
					Severity: SeverityWarning,
					Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; its ConfigMap is left behind",
					Evidence: []string{ceOwnerLine("etcd"), olmGone},
				},
			},
		},
		{
			name:    "OLM v1 not installed: an ownerReference to a ClusterExtension the garbage collector cannot resolve",
			objects: []*Object{object(ClusterRoles, "", "etcd-manager", owned, ceRef("olm.operatorframework.io/v1", "etcd"))},
			want:    []olmv1Want{deleted(clusterRole, olmGone, absentCRD)},
		},
		{
			name:     "ClusterExtension list failed: unknown, nothing",
			coverage: Coverage{Failed: []schema.GroupResource{ClusterExtensions.GroupResource()}},
			served:   served,
			objects:  leftovers,
		},
		{
			name:     "ClusterExtensions left out of the walk: unknown, nothing",
			coverage: Coverage{Unlisted: []schema.GroupResource{ClusterExtensions.GroupResource()}},
			served:   served,
			objects:  leftovers,
		},
		{
			name:     "OLM v1's API group not discovered: unknown, nothing",
			coverage: Coverage{UndiscoveredGroups: []string{"olm.operatorframework.io"}},
			objects:  leftovers,
		},

		// 3. CRDs.
		{
			name:    "CRD with custom resources: kept, blocked by the first five",
			served:  served,
			objects: append([]*Object{crd}, widgetObjects...),
			want: []olmv1Want{{
				Object:   crd.Ref(),
				Severity: SeverityWarning,
				Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; kept: it has 6 custom resources, which would be deleted with it",
				Evidence: []string{ceOwnerLine("etcd"), gone,
					"6 custom resources: Widget.acme.io shop/w1, Widget.acme.io shop/w2, Widget.acme.io shop/w3, Widget.acme.io shop/w4, Widget.acme.io shop/w5",
					"delete them first (their own findings say what holds them), or keep the CRD for the operator's next install"},
				BlockedBy: []ObjectRef{widgetObjects[0].Ref(), widgetObjects[1].Ref(), widgetObjects[2].Ref(), widgetObjects[3].Ref(), widgetObjects[4].Ref()},
			}},
		},
		{
			name:    "CRD with one custom resource: kept",
			served:  served,
			objects: []*Object{crd, widgetObjects[0]},
			want: []olmv1Want{{
				Object:   crd.Ref(),
				Severity: SeverityWarning,
				Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; kept: it has 1 custom resources, which would be deleted with it",
				Evidence: []string{ceOwnerLine("etcd"), gone, "1 custom resources: Widget.acme.io shop/w1",
					"delete them first (their own findings say what holds them), or keep the CRD for the operator's next install"},
				BlockedBy: []ObjectRef{widgetObjects[0].Ref()},
			}},
		},
		{
			name:    "CRD without custom resources: deleted, on two facts",
			served:  served,
			objects: []*Object{crd},
			want: []olmv1Want{{
				Object:   crd.Ref(),
				Severity: SeverityWarning,
				Reason:   "applied by OLM v1 for ClusterExtension etcd, which no longer exists; its CustomResourceDefinition is left behind",
				Evidence: []string{ceOwnerLine("etcd"), gone, "it has no custom resource (widgets.acme.io listed in every namespace)"},
				Action:   Delete{},
				OptIn:    olmv1OptIn,
				Facts:    []string{absentCE, "no objects of widgets.acme.io"},
			}},
		},
		{
			name:     "CRD whose custom resources' list failed: kept",
			coverage: Coverage{Failed: []schema.GroupResource{widgets.GroupResource()}},
			served:   served,
			objects:  []*Object{crd},
			want:     []olmv1Want{crdKept("its custom resources (widgets.acme.io) were not all listed: kept")},
		},
		{
			name:     "CRD whose custom resources were listed in some namespaces: kept",
			coverage: Coverage{Namespaces: []string{"shop"}},
			served:   served,
			objects:  []*Object{crd},
			want:     []olmv1Want{crdKept("its custom resources (widgets.acme.io) were not all listed: kept")},
		},
		{
			name:     "CRD whose custom resources were left out: kept",
			coverage: Coverage{Unlisted: []schema.GroupResource{widgets.GroupResource()}},
			served:   served,
			objects:  []*Object{crd},
			want:     []olmv1Want{crdKept("its custom resources (widgets.acme.io) were not all listed: kept")},
		},
		{
			name:    "CRD with an ownerReference to the ClusterExtension: the garbage collector's",
			served:  served,
			objects: []*Object{object(CustomResourceDefinitions, "", "widgets.acme.io", owned, ceRef("olm.operatorframework.io/v1", "etcd")), widgetObjects[0]},
			want:    []olmv1Want{collected(crd)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := olmv1View(tt.coverage, tt.served, tt.objects...)
			for _, optIn := range []bool{false, true} {
				want := slices.Clone(tt.want)
				for i := range want {
					if optIn {
						want[i].OptIn = "" // opted in: nothing waits
					}
				}
				findings := planOLMv1(t, optIn, view)
				require.Equal(t, want, olmv1Got(t, findings), "opted in: %v", optIn)
				rule, _ := NewOLMv1Leftovers(OLMv1LeftoversArgs{Delete: optIn}, Settings{})
				for _, f := range findings {
					if f.Action == nil {
						continue
					}
					// Restore accepts what the rule deletes, with the finding's evidence.
					obj, ok := view.ByUID(f.Object.UID)
					require.True(t, ok)
					assert.NoError(t, rule.MayHaveWritten(f.Action.Type(), asUnstructured(obj), f.Evidence), f.Object.String())
				}
			}
		})
	}
}

// TestOLMv1LeftoversFacts checks what the facts of a CRD's deletion read and say.
func TestOLMv1LeftoversFacts(t *testing.T) {
	crd := object(CustomResourceDefinitions, "", "widgets.acme.io", ceOwned("etcd"))
	findings := planOLMv1(t, true, olmv1View(Coverage{}, []Resource{ClusterExtensions}, crd))
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Facts, 2)
	absent, empty := findings[0].Facts[0], findings[0].Facts[1]

	assert.Equal(t, ObjectAbsent{ClusterExtensions, "", "etcd"}, absent)
	assert.Equal(t, "absent clusterextensions.olm.operatorframework.io /etcd", absent.Key())

	assert.Equal(t, "no objects of widgets.acme.io", empty.Key())
	assert.Equal(t, []Read{{Resource: widgets.GroupResource()}}, empty.Reads())
	holds, evidence := empty.Holds(freshView([]Resource{widgets}, Coverage{}))
	assert.True(t, holds)
	assert.Equal(t, "re-checked live: no widgets.acme.io exists", evidence)
	holds, evidence = empty.Holds(freshView([]Resource{widgets}, Coverage{}, object(widgets, "shop", "w1"), object(widgets, "other", "w2")))
	assert.False(t, holds)
	assert.Equal(t, "re-checked live: 2 widgets.acme.io exist now", evidence)

	// OLM v1 gone: the fact is the CRD of ClusterExtensions' absence.
	findings = planOLMv1(t, true, olmv1View(Coverage{}, nil, object(ClusterRoles, "", "r", ceOwned("etcd"))))
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Facts, 2)
	assert.Equal(t, ObjectAbsent{CustomResourceDefinitions, "", olmv1CERDName}, findings[0].Facts[0])

	// And no workload of the extension is there to run with the RBAC, read again live.
	workloads := findings[0].Facts[1]
	assert.Equal(t, "no workloads of ClusterExtension etcd", workloads.Key())
	selector := "olm.operatorframework.io/owner-kind=ClusterExtension,olm.operatorframework.io/owner-name=etcd"
	assert.Equal(t, []Read{{Resource: Deployments.GroupResource(), Selector: selector}, {Resource: StatefulSets.GroupResource(), Selector: selector},
		{Resource: DaemonSets.GroupResource(), Selector: selector}}, workloads.Reads())
	holds, _ = workloads.Holds(freshView([]Resource{Deployments, StatefulSets, DaemonSets}, Coverage{}))
	assert.True(t, holds)
	holds, evidence = workloads.Holds(freshView([]Resource{Deployments, StatefulSets, DaemonSets}, Coverage{}, object(Deployments, "etcd-system", "etcd-operator", ceOwned("etcd"))))
	assert.False(t, holds, "a workload applied since")
	assert.Equal(t, "re-checked live: Deployment etcd-system/etcd-operator of ClusterExtension etcd exists now", evidence)
	assert.Equal(t, []Read{{Resource: CustomResourceDefinitions.GroupResource(), Name: olmv1CERDName}}, findings[0].Facts[0].Reads())
	holds, _ = findings[0].Facts[0].Holds(freshView([]Resource{CustomResourceDefinitions}, Coverage{}))
	assert.True(t, holds)
	holds, evidence = findings[0].Facts[0].Holds(freshView([]Resource{CustomResourceDefinitions}, Coverage{}, object(CustomResourceDefinitions, "", olmv1CERDName)))
	assert.False(t, holds, "OLM v1 re-installed since")
	assert.Equal(t, "re-checked live: CustomResourceDefinition "+olmv1CERDName+" exists now", evidence)

	// The CRD there but not served yet (not established): OLM v1 may well be installed.
	findings = planOLMv1(t, true, olmv1View(Coverage{}, nil, object(ClusterRoles, "", "r", ceOwned("etcd")), object(CustomResourceDefinitions, "", olmv1CERDName)))
	assert.Empty(t, findings)
}

func TestOLMv1LeftoversMigrationBlockers(t *testing.T) {
	const (
		ocMessage   = "CustomResourceDefinition 'foo.example.com' already exists in namespace '' and cannot be managed by operator-controller"
		helmMessage = `Unable to continue with install: CustomResourceDefinition "foo.example.com" in namespace "" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"`
		reason      = "its install fails on OLM v1's single-owner rule: CustomResourceDefinition foo.example.com exists, and OLM v1 did not apply it"
		advice      = "OLM v1 installs only what it applies itself: once nothing else manages CustomResourceDefinition foo.example.com, back up what it holds, delete it, and let the ClusterExtension install it again (a CRD's custom resources go with it: back them up and restore them after)"
		v0Label     = "CustomResourceDefinition foo.example.com was installed by OLM v0 (label operators.coreos.com/foo.ns)"
		unowned     = "no ClusterServiceVersion owns it any more: the OLM v0 operator is gone, its CRD left behind"
	)
	condition := func(conditionType, status, message string) map[string]any {
		return map[string]any{"type": conditionType, "status": status, "reason": "Retrying", "message": message}
	}
	ce := func(conditions ...any) *Object {
		return clusterExtension("foo", map[string]any{"status": map[string]any{"conditions": conditions}})
	}
	blocked := ce(condition("Installed", "False", "no bundle installed"), condition("Progressing", "True", ocMessage))
	blockedLine := "condition Progressing=True: " + ocMessage
	v0CRD := object(CustomResourceDefinitions, "", "foo.example.com", withLabels("operators.coreos.com/foo.ns", ""))
	plainCRD := object(CustomResourceDefinitions, "", "foo.example.com")
	helmCRD := object(CustomResourceDefinitions, "", "foo.example.com", withLabels("app.kubernetes.io/managed-by", "Helm"),
		withAnnotations("meta.helm.sh/release-name", "foo", "meta.helm.sh/release-namespace", "foo-system"))
	finding := func(obj *Object, blockedBy []ObjectRef, evidence ...string) olmv1Want {
		return olmv1Want{Object: obj.Ref(), Severity: SeverityWarning, Reason: reason, Evidence: evidence, BlockedBy: blockedBy}
	}

	tests := []struct {
		name     string
		coverage Coverage
		objects  []*Object
		want     []olmv1Want
	}{
		{
			name:    "CRD left by OLM v0: no CSV owns it",
			objects: []*Object{blocked, v0CRD},
			want:    []olmv1Want{finding(blocked, []ObjectRef{v0CRD.Ref()}, blockedLine, v0Label, unowned, advice)},
		},
		{
			name:    "CRD of an OLM v0 operator still installed",
			objects: []*Object{blocked, v0CRD, csv("ns", "x", []string{"foo.example.com"})},
			want: []olmv1Want{finding(blocked, []ObjectRef{v0CRD.Ref()}, blockedLine, v0Label,
				"ClusterServiceVersion ns/x owns it: the OLM v0 operator is still installed; delete its Subscription and CSV first (the CRD and its custom resources stay)", advice)},
		},
		{
			name:    "unlabelled CRD a CSV owns",
			objects: []*Object{blocked, plainCRD, csv("ns", "x", []string{"foo.example.com"}), csv("ns", "y", []string{"bar.example.com"})},
			want: []olmv1Want{finding(blocked, []ObjectRef{plainCRD.Ref()}, blockedLine,
				"ClusterServiceVersion ns/x owns it: the OLM v0 operator is still installed; delete its Subscription and CSV first (the CRD and its custom resources stay)", advice)},
		},
		{
			name:    "a copied CSV does not own it",
			objects: []*Object{blocked, v0CRD, csv("shop", "x", []string{"foo.example.com"}, withLabels("olm.copiedFrom", "ns"))},
			want:    []olmv1Want{finding(blocked, []ObjectRef{v0CRD.Ref()}, blockedLine, v0Label, unowned, advice)},
		},
		{
			name: "Helm's wording, a CRD of a Helm release",
			objects: []*Object{
				ce(condition("Progressing", "True", helmMessage)),
				helmCRD,
			},
			want: []olmv1Want{finding(blocked, []ObjectRef{helmCRD.Ref()}, "condition Progressing=True: "+helmMessage,
				"CustomResourceDefinition foo.example.com belongs to Helm release foo-system/foo", advice)},
		},
		{
			name:    "a CRD that carries no mark",
			objects: []*Object{blocked, plainCRD},
			want: []olmv1Want{finding(blocked, []ObjectRef{plainCRD.Ref()}, blockedLine,
				"CustomResourceDefinition foo.example.com carries no mark of OLM v0 or Helm: applied by hand, or by another tool", advice)},
		},
		{
			name:    "conflicting object not in the view: no BlockedBy",
			objects: []*Object{blocked},
			want:    []olmv1Want{finding(blocked, nil, blockedLine, "CustomResourceDefinition foo.example.com is not in the view")},
		},
		{
			name: "a namespaced object in the way",
			objects: []*Object{
				ce(condition("Progressing", "True", "ServiceAccount 'foo-sa' already exists in namespace 'foo-system' and cannot be managed by operator-controller")),
				object(ServiceAccounts, "foo-system", "foo-sa"),
				object(ServiceAccounts, "other", "foo-sa"),
			},
			want: []olmv1Want{{
				Object:   blocked.Ref(),
				Severity: SeverityWarning,
				Reason:   "its install fails on OLM v1's single-owner rule: ServiceAccount foo-sa exists, and OLM v1 did not apply it",
				Evidence: []string{
					"condition Progressing=True: ServiceAccount 'foo-sa' already exists in namespace 'foo-system' and cannot be managed by operator-controller",
					"ServiceAccount foo-system/foo-sa carries no mark of OLM v0 or Helm: applied by hand, or by another tool",
					"OLM v1 installs only what it applies itself: once nothing else manages ServiceAccount foo-system/foo-sa, back up what it holds, delete it, and let the ClusterExtension install it again (a CRD's custom resources go with it: back them up and restore them after)",
				},
				BlockedBy: []ObjectRef{object(ServiceAccounts, "foo-system", "foo-sa").Ref()},
			}},
		},
		{
			name: "unrelated conditions: nothing",
			objects: []*Object{
				ce(condition("Installed", "True", "Installed bundle foo.v1.0.0 successfully"), condition("Progressing", "True", "Desired state reached")),
				v0CRD,
			},
		},
		{name: "no conditions: nothing", objects: []*Object{clusterExtension("foo", nil), v0CRD}},
		{
			name:    "two conditions with the same message: one finding",
			objects: []*Object{ce(condition("Progressing", "True", ocMessage), condition("Installed", "False", ocMessage)), v0CRD},
			want:    []olmv1Want{finding(blocked, []ObjectRef{v0CRD.Ref()}, blockedLine, v0Label, unowned, advice)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := olmv1View(tt.coverage, []Resource{ClusterExtensions}, tt.objects...)
			require.Equal(t, tt.want, olmv1Got(t, planOLMv1(t, false, view)))
		})
	}
}

// TestOLMv1LeftoversMigrationBlockerCSVsUnlisted: with CSVs not all listed, nothing says no CSV
// owns the CRD.
func TestOLMv1LeftoversMigrationBlockerCSVsUnlisted(t *testing.T) {
	ce := clusterExtension("foo", map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
		"type": "Progressing", "status": "True",
		"message": "CustomResourceDefinition 'foo.example.com' already exists in namespace '' and cannot be managed by operator-controller",
	}}}})
	crd := object(CustomResourceDefinitions, "", "foo.example.com", withLabels("operators.coreos.com/foo.ns", ""))
	for _, coverage := range []Coverage{
		{Failed: []schema.GroupResource{ClusterServiceVersions.GroupResource()}},
		{Namespaces: []string{"shop"}},
	} {
		findings := planOLMv1(t, false, olmv1View(coverage, []Resource{ClusterExtensions}, ce, crd))
		require.Len(t, findings, 1)
		assert.NotContains(t, findings[0].Evidence, "no ClusterServiceVersion owns it any more: the OLM v0 operator is gone, its CRD left behind", "%+v", coverage)
		assert.Contains(t, findings[0].Evidence, "ClusterServiceVersions were not all listed: whether the OLM v0 operator is still installed is unknown", "%+v", coverage)
	}
}

func TestOLMv1LeftoversUnusedInstallers(t *testing.T) {
	subject := func(kind, name, namespace string) map[string]any {
		s := map[string]any{"kind": kind, "name": name}
		if namespace != "" {
			s["namespace"] = namespace
		}
		return s
	}
	bindingOf := func(r Resource, namespace, name, roleKind, role string, subjects ...any) *Object {
		return object(r, namespace, name, withContent(map[string]any{
			"subjects": subjects,
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": roleKind, "name": role},
		}))
	}
	installer := clusterExtension("foo", map[string]any{"spec": map[string]any{
		"namespace": "foo-system", "serviceAccount": map[string]any{"name": "installer"},
	}})
	admin := bindingOf(ClusterRoleBindings, "", "b", "ClusterRole", "cluster-admin",
		subject("User", "alice", ""), subject("ServiceAccount", "installer", "foo-system"))
	local := bindingOf(RoleBindings, "foo-system", "installer", "Role", "installer-role", subject("ServiceAccount", "installer", ""))
	decoys := []*Object{
		bindingOf(ClusterRoleBindings, "", "no-namespace", "ClusterRole", "view", subject("ServiceAccount", "installer", "")),
		bindingOf(ClusterRoleBindings, "", "other-namespace", "ClusterRole", "view", subject("ServiceAccount", "installer", "other")),
		bindingOf(ClusterRoleBindings, "", "a-user", "ClusterRole", "view", subject("User", "installer", "foo-system")),
		bindingOf(RoleBindings, "other", "installer", "Role", "installer-role", subject("ServiceAccount", "installer", "")),
		bindingOf(RoleBindings, "foo-system", "other-sa", "Role", "installer-role", subject("ServiceAccount", "other", "")),
	}
	objectSets := []Resource{ClusterExtensions, ClusterObjectSets}

	tests := []struct {
		name    string
		served  []Resource
		objects []*Object
		want    []olmv1Want
	}{
		{
			name:    "ClusterObjectSets served: the bindings that still grant the installer rights",
			served:  objectSets,
			objects: append([]*Object{installer, admin, local}, decoys...),
			want: []olmv1Want{{
				Object:   installer.Ref(),
				Severity: SeverityInfo,
				Reason:   "its installer ServiceAccount foo-system/installer is no longer used, and 2 bindings still grant it rights",
				Evidence: []string{
					"spec.serviceAccount names ServiceAccount foo-system/installer; this OLM v1 serves ClusterObjectSets, and such releases ignore it (operator-controller#2770): it installs with its own ServiceAccount",
					"ClusterRoleBinding b grants ClusterRole cluster-admin",
					"RoleBinding installer grants Role installer-role",
					"drop spec.serviceAccount from the ClusterExtension; once nothing else runs as the ServiceAccount, delete it and these bindings",
				},
			}},
		},
		{
			name:    "ClusterObjectSets not served: the installer is used, nothing",
			served:  []Resource{ClusterExtensions},
			objects: append([]*Object{installer, admin, local}, decoys...),
		},
		{
			name:    "no binding grants the installer rights: nothing",
			served:  objectSets,
			objects: append([]*Object{installer}, decoys...),
		},
		{
			name:    "no spec.serviceAccount: nothing",
			served:  objectSets,
			objects: []*Object{clusterExtension("foo", map[string]any{"spec": map[string]any{"namespace": "foo-system"}}), admin, local},
		},
		{
			name:   "ClusterExtension being deleted: nothing",
			served: objectSets,
			objects: []*Object{clusterExtension("foo", installer.Content, terminatingFor(time.Minute, "olm.operatorframework.io/cleanup-unpack-cache")),
				admin, local},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := olmv1View(Coverage{}, tt.served, tt.objects...)
			require.Equal(t, tt.want, olmv1Got(t, planOLMv1(t, false, view)))
		})
	}
}

func TestOLMv1LeftoversMayHaveWritten(t *testing.T) {
	evidence := []string{ceOwnerLine("etcd"), "ClusterExtension etcd no longer exists"}
	labelled := object(ClusterRoles, "", "etcd-manager", ceOwned("etcd"))
	tests := []struct {
		name    string
		obj     *Object
		wantErr string
	}{
		{name: "labelled ClusterRole, the finding's ClusterExtension", obj: labelled},
		{name: "labelled RoleBinding", obj: object(RoleBindings, "etcd-system", "etcd-leader", ceOwned("etcd"))},
		{name: "labelled CRD", obj: object(CustomResourceDefinitions, "", "widgets.acme.io", ceOwned("etcd"))},
		{
			name:    "another ClusterExtension's",
			obj:     object(ClusterRoles, "", "etcd-manager", ceOwned("zookeeper")),
			wantErr: "ClusterRole etcd-manager is labelled as ClusterExtension zookeeper's, not as the finding's",
		},
		{
			name:    "a Deployment",
			obj:     object(Deployments, "etcd-system", "etcd-operator", ceOwned("etcd")),
			wantErr: "the rule writes no Deployment.apps",
		},
		{
			name:    "unlabelled",
			obj:     object(ClusterRoles, "", "etcd-manager"),
			wantErr: "ClusterRole etcd-manager is not labelled as a ClusterExtension's by OLM v1 (olm.operatorframework.io/owner-kind, olm.operatorframework.io/owner-name)",
		},
		{
			name:    "labelled as another kind's",
			obj:     object(ClusterRoles, "", "etcd-manager", withLabels("olm.operatorframework.io/owner-kind", "ClusterCatalog", "olm.operatorframework.io/owner-name", "etcd")),
			wantErr: "ClusterRole etcd-manager is not labelled as a ClusterExtension's by OLM v1 (olm.operatorframework.io/owner-kind, olm.operatorframework.io/owner-name)",
		},
	}
	rule, err := NewOLMv1Leftovers(OLMv1LeftoversArgs{}, Settings{})
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rule.MayHaveWritten(Delete{}.Type(), asUnstructured(tt.obj), evidence)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.wantErr)
			}
		})
	}
	assert.Error(t, rule.MayHaveWritten(Delete{}.Type(), asUnstructured(labelled), nil), "no evidence: not the rule's finding")
}

func TestOLMv1LeftoversAuthorization(t *testing.T) {
	reporting, err := NewOLMv1Leftovers(OLMv1LeftoversArgs{}, Settings{})
	require.NoError(t, err)
	deleting, err := NewOLMv1Leftovers(OLMv1LeftoversArgs{Delete: true}, Settings{})
	require.NoError(t, err)

	assert.Equal(t, OLMv1LeftoversName, reporting.Name())
	assert.Equal(t, "olmv1-leftovers", reporting.Name())
	assert.Nil(t, reporting.PolicyRules(), "reporting only: no write")
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "delete"}},
	}, deleting.PolicyRules())
	assert.Equal(t, OLMv1LeftoversArgs{Delete: true}, reporting.OptInArgs(), "its opt-in in the cluster: delete")

	want := []Write{
		{Action: "Delete", Resource: ClusterRoleBindings.GroupResource()},
		{Action: "Delete", Resource: ClusterRoles.GroupResource()},
		{Action: "Delete", Resource: RoleBindings.GroupResource()},
		{Action: "Delete", Resource: Roles.GroupResource()},
		{Action: "Delete", Resource: CustomResourceDefinitions.GroupResource()},
	}
	assert.Equal(t, want, reporting.Writes(), "opted in or not")
	assert.Equal(t, want, deleting.Writes())
	assert.Equal(t, []string{"Delete"}, ActionTypes(reporting))
}

// TestOLMv1KnownCause: a ClusterExtension stuck on cleanup-contentmanager-cache with
// operator-controller running is operator-controller#2304, which orphaned-finalizers names.
func TestOLMv1KnownCause(t *testing.T) {
	const (
		contentManager = "olm.operatorframework.io/cleanup-contentmanager-cache"
		unpack         = "olm.operatorframework.io/cleanup-unpack-cache"
		controller     = "Deployment olmv1-system/operator-controller-controller-manager"
		since          = "deletionTimestamp 2026-11-23T11:00:00Z: terminating for 60m (threshold 15m0s)"
		runs           = controller + " matches name operator-controller-controller-manager in any namespace and runs (1 desired replicas)"
		noLease        = "no Lease is named 9c4404e7.operatorframework.io"
	)
	cause := knownCause(contentManager)
	assert.Equal(t, "known cause: operator-controller keeps olm.operatorframework.io/cleanup-contentmanager-cache when no handler is registered for it "+
		"(operator-framework/operator-controller#2304, OCPBUGS-62942): check operator-controller's logs for this ClusterExtension, "+
		"restart operator-controller, and upgrade it to a release with the fix; once operator-controller is gone, the sweeper releases it", cause)
	for _, other := range []string{unpack, "olm.operatorframework.io/teardown", "operators.coreos.com/csv-cleanup", ""} {
		assert.Empty(t, knownCause(other), other)
	}

	operatorController := workload(Deployments, "olmv1-system", "operator-controller-controller-manager", 1)
	entry, ok := shippedMappings(t).consequenceOf(contentManager, ClusterExtensions.GroupResource())
	require.True(t, ok, "the catalog classifies %s", contentManager)
	standsFor := entry.StandsFor
	mapping := func(f string) string {
		return f + `: controller mapping "olm.operatorframework.io/* on clusterextensions.olm.operatorframework.io, clusterextensionrevisions.olm.operatorframework.io, clusterobjectsets.olm.operatorframework.io"`
	}
	tests := []struct {
		name    string
		objects []*Object
		want    Finding
	}{
		{
			name:    "cleanup-contentmanager-cache, operator-controller running: a warning naming #2304",
			objects: []*Object{clusterExtension("etcd", nil, terminatingFor(time.Hour, contentManager)), operatorController},
			want: Finding{
				Severity: SeverityWarning,
				Reason:   "owner still present, it will release " + contentManager + ": " + controller,
				Evidence: []string{since, mapping(contentManager), runs, noLease, cause},
			},
		},
		{
			name:    "cleanup-unpack-cache only, operator-controller running: info",
			objects: []*Object{clusterExtension("etcd", nil, terminatingFor(time.Hour, unpack)), operatorController},
			want: Finding{
				Severity: SeverityInfo,
				Reason:   "owner still present, it will release " + unpack + ": " + controller,
				Evidence: []string{since, mapping(unpack), runs, noLease},
			},
		},
		{
			name:    "both, operator-controller running: a warning, the cause once",
			objects: []*Object{clusterExtension("etcd", nil, terminatingFor(time.Hour, unpack, contentManager)), operatorController},
			want: Finding{
				Severity: SeverityWarning,
				Reason:   "owner still present, it will release " + unpack + ", " + contentManager + ": " + controller,
				Evidence: []string{since, mapping(unpack), runs, noLease, mapping(contentManager), runs, noLease, cause},
			},
		},
		{
			name:    "cleanup-contentmanager-cache, operator-controller gone: released, no cause",
			objects: []*Object{clusterExtension("etcd", nil, terminatingFor(time.Hour, contentManager))},
			want: Finding{
				Severity: SeverityWarning,
				Reason:   "operator gone; releasing " + contentManager,
				Evidence: []string{since, mapping(contentManager), "no Deployment matches name operator-controller-controller-manager in any namespace", noLease,
					contentManager + " stands for " + standsFor + ": consequence cascades (catalog, checked against github.com/operator-framework/operator-controller v1.2.0)"},
				Action: RemoveFinalizers{Finalizers: []string{contentManager}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := NewOrphanedFinalizers(OrphanedFinalizersArgs{}, Settings{MinTerminatingAge: 15 * time.Minute, Finalizers: shippedMappings(t)})
			require.NoError(t, err)
			findings := rule.Plan(context.Background(), olmv1View(Coverage{}, []Resource{ClusterExtensions}, tt.objects...))
			require.Len(t, findings, 1)
			got := findings[0]
			assert.Equal(t, tt.objects[0].Ref(), got.Object)
			assert.Equal(t, tt.want.Severity, got.Severity)
			assert.Equal(t, tt.want.Reason, got.Reason)
			assert.Equal(t, tt.want.Evidence, got.Evidence)
			assert.Equal(t, tt.want.Action, got.Action)
		})
	}
}
