package rules

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fixtures of the preflight tests: an operator acme/acme-operator whose pods are labelled
// app=acme-operator, serving the finalizer widgets.acme.io/finalizer by a configured mapping, and
// Gizmos, the custom resources of CRD gizmos.example.com.

const (
	pfTarget     = "Deployment acme/acme-operator"
	pfFinalizer  = "widgets.acme.io/finalizer"
	pfGizmoCRD   = "gizmos.example.com"
	pfGizmoFinal = "gizmos.example.com/finalizer"
)

var pfGizmos = Resource{GroupVersionResource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"}, Kind: "Gizmo", Namespaced: true}

// pfMapping maps pfFinalizer to the Deployments labelled app.kubernetes.io/name=acme-operator.
var pfMapping = FinalizerOwner{
	Pattern:     pfFinalizer,
	Controllers: []Controller{{Kind: "Deployment", Selector: "app.kubernetes.io/name=acme-operator"}},
}

// pfWorkload is a Deployment labelled app.kubernetes.io/name=acme-operator, whose pods are
// labelled podLabels, wanting replicas pods of which ready are ready.
func pfWorkload(namespace, name string, replicas, ready int64, podLabels map[string]any) *Object {
	return object(Deployments, namespace, name, withLabels("app.kubernetes.io/name", "acme-operator"), withContent(map[string]any{
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"metadata": map[string]any{"labels": podLabels}},
		},
		"status": map[string]any{"readyReplicas": ready},
	}))
}

// pfOperator is the operator of the uninstall, running one ready replica.
func pfOperator() *Object {
	return pfWorkload("acme", "acme-operator", 1, 1, map[string]any{"app": "acme-operator", "pod-template-hash": "abc"})
}

// pfUninstall is the uninstall of pfOperator.
func pfUninstall() Uninstall {
	return Uninstall{Target: pfTarget, Workloads: []ObjectKey{{Resource: Deployments.GroupResource(), Namespace: "acme", Name: "acme-operator"}}}
}

// pfHelm is the uninstall of Helm release acme/acme, which installs pfOperator and CRD
// gizmos.example.com, deleted with it if deleted is set.
func pfHelm(deleted bool) Uninstall {
	u := pfUninstall()
	u.Target = "Helm release acme/acme"
	u.CRDs = []string{pfGizmoCRD}
	if deleted {
		u.DeletedCRDs = []string{pfGizmoCRD}
	}
	return u
}

func withFinalizers(finalizers ...string) func(*Object) {
	return func(o *Object) { o.Finalizers = finalizers }
}

func pfWidget(namespace, name string, finalizers ...string) *Object {
	return object(widgets, namespace, name, withFinalizers(finalizers...))
}

func pfGizmo(namespace, name string, finalizers ...string) *Object {
	return object(pfGizmos, namespace, name, withFinalizers(finalizers...))
}

func pfCRD(name, group, plural string) *Object {
	return object(CustomResourceDefinitions, "", name, withContent(map[string]any{"spec": map[string]any{
		"group": group, "names": map[string]any{"plural": plural, "kind": "Gizmo"},
	}}))
}

// pfService is Service namespace/name selecting selector.
func pfService(namespace, name string, selector map[string]any) *Object {
	return object(Services, namespace, name, withContent(map[string]any{"spec": map[string]any{"selector": selector}}))
}

// pfAPIService is APIService v1.<group>, calling Service namespace/service (local if empty).
func pfAPIService(group, namespace, service string) *Object {
	spec := map[string]any{"group": group, "version": "v1"}
	if service != "" {
		spec["service"] = map[string]any{"namespace": namespace, "name": service}
	}
	return object(APIServices, "", "v1."+group, withContent(map[string]any{"spec": spec}))
}

// pfView is a view of objects, with the CRD of each custom resource among them that objects do
// not hold: a preflight drains only what a CRD serves.
func pfView(objects ...*Object) *View {
	return NewView(testNow, append(slices.Clone(allTestResources), pfGizmos), Coverage{}, withCRDs(objects))
}

// withCRDs is objects and the CRDs of the custom resources among them that objects do not hold.
func withCRDs(objects []*Object) []*Object {
	out := slices.Clone(objects)
	for _, obj := range objects {
		gr := obj.Resource.GroupResource()
		name := gr.Resource + "." + gr.Group
		if builtInGroup(gr.Group) || slices.ContainsFunc(out, func(o *Object) bool {
			return o.Resource.GroupResource() == CustomResourceDefinitions.GroupResource() && o.Name == name
		}) {
			continue
		}
		out = append(out, pfCRD(name, gr.Group, gr.Resource))
	}
	return out
}

// ofObjects are the findings about objects: not those about the CRDs withCRDs added.
func ofObjects(objects []*Object, findings []Finding) []Finding {
	return slices.DeleteFunc(slices.Clone(findings), func(f Finding) bool {
		return !slices.ContainsFunc(objects, func(o *Object) bool { return o.Ref() == f.Object })
	})
}

// pfWant is a finding the preflight must make, exactly: its object, reason, every line of its
// evidence in order, whether it plans to drain the object, and the opt-in the delete waits for.
type pfWant struct {
	object   *Object
	reason   string
	evidence []string
	drained  bool
	optIn    string
	// held is why the drain's delete is held back (it is planned, never sent).
	held string
}

func TestPreflightPlan(t *testing.T) {
	const (
		holds      = "holds " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, it stays Terminating once deleted"
		served     = pfFinalizer + `: controller mapping "` + pfFinalizer + `", served by ` + pfTarget + " and by nothing else"
		drainedBy  = "drained: deleted while Deployment acme/acme-operator runs, which removes its finalizer after its own cleanup"
		helmTarget = "Helm release acme/acme"
		inDomain   = pfGizmoFinal + ": in the API domain of CRD " + pfGizmoCRD + ", which goes with " + helmTarget
		hookReason = "its webhooks call " + pfTarget + ": left behind, they refuse or skip what they match"
		hookCalls  = "CREATE, UPDATE of pods, pods.apps, deployments, deployments.apps"
		apiReason  = "served by " + pfTarget + ": left behind, it is unavailable and blocks every namespace deletion"
		apiGone    = "once unavailable, discovery of widgets.acme.io/v1 fails, and no namespace can finish its deletion"
		csvReason  = "holds operators.coreos.com/csv-cleanup, which OLM's olm-operator removes once it deleted what it labelled as this CSV's: delete the CSV while OLM runs"
		csvAfter   = "deleted once OLM is gone, the CSV stays Terminating (rules orphaned-finalizers and olm-rbac then release it)"
	)
	acmePods := map[string]any{"app": "acme-operator"}
	otherPods := map[string]any{"app": "other"}
	widget := pfWidget("shop", "w1", pfFinalizer)
	gizmo := pfGizmo("shop", "g1", pfGizmoFinal)
	gizmoCRD := pfCRD(pfGizmoCRD, "example.com", "gizmos")
	protected := FinalizerOwner{
		Pattern:     "volumes.acme.io/protect",
		Controllers: []Controller{{Kind: "Deployment", Name: "acme-operator"}},
		Protect:     true,
		Guards:      "volumes",
	}
	protectedWidget := pfWidget("shop", "pv", "volumes.acme.io/protect")
	protectedEvidence := `volumes.acme.io/protect: controller mapping "volumes.acme.io/protect", served by ` + pfTarget + " and by nothing else"
	hooks := webhookConfig(ValidatingWebhookConfigurations, "acme-hooks", webhook("validate.acme.io", "", "acme", "acme-webhook"))
	mutating := webhookConfig(MutatingWebhookConfigurations, "acme-defaults", webhook("default.acme.io", "Ignore", "acme", "acme-webhook"))
	urlHooks := webhookConfig(ValidatingWebhookConfigurations, "acme-hosted", webhook("hosted.acme.io", "", "", ""))
	listedHooks := func() Uninstall {
		u := pfUninstall()
		u.WebhookConfigurations = []ObjectKey{{Resource: ValidatingWebhookConfigurations.GroupResource(), Name: "acme-hosted"}}
		return u
	}
	withService := func() Uninstall {
		u := pfUninstall()
		u.Services = []ObjectKey{{Resource: Services.GroupResource(), Namespace: "acme", Name: "acme-webhook"}}
		return u
	}
	listedAPI := func() Uninstall {
		u := pfUninstall()
		u.APIServices = []string{"v1.widgets.acme.io"}
		return u
	}
	csvKey := &ObjectKey{Resource: ClusterServiceVersions.GroupResource(), Namespace: "operators", Name: "acme.v1"}
	withCSV := func() Uninstall {
		u := pfUninstall()
		u.CSV = csvKey
		return u
	}
	csvLabels := withLabels("olm.owner", "acme.v1", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion")
	acmeRole := object(ClusterRoles, "", "acme-role", csvLabels)
	csvWithCleanup := csv("operators", "acme.v1", nil, withFinalizers(csvCleanupFinalizer))

	tests := []struct {
		name                  string
		uninstall             Uninstall
		mappings              []FinalizerOwner
		drain, drainProtected bool
		objects               []*Object
		want                  []pfWant
	}{
		// Custom resources, by a mapping the operator serves.
		{
			name:      "a mapping only the operator serves: its finalizer holds the CR",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects:   []*Object{pfOperator(), widget},
			want:      []pfWant{{object: widget, reason: holds, evidence: []string{served}}},
		},
		{
			name:      "another running workload serves the mapping too: it stays served",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects:   []*Object{pfOperator(), pfWorkload("other", "acme-operator", 2, 2, acmePods), widget},
		},
		{
			name:      "another workload serves the mapping, scaled to 0: only the operator runs it",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects:   []*Object{pfOperator(), pfWorkload("other", "acme-operator", 0, 0, acmePods), widget},
			want:      []pfWant{{object: widget, reason: holds, evidence: []string{served}}},
		},
		{
			name: "two workloads of the uninstall serve the mapping: still only the uninstall's",
			uninstall: func() Uninstall {
				u := pfUninstall()
				u.Workloads = append(u.Workloads, ObjectKey{Resource: Deployments.GroupResource(), Namespace: "acme", Name: "acme-operator-2"})
				return u
			}(),
			mappings: []FinalizerOwner{pfMapping},
			objects:  []*Object{pfOperator(), pfWorkload("acme", "acme-operator-2", 1, 1, acmePods), widget},
			want:     []pfWant{{object: widget, reason: holds, evidence: []string{served}}},
		},
		{
			name:      "a mapping of some other workload: not the operator's",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{{Pattern: pfFinalizer, Controllers: []Controller{{Kind: "Deployment", Name: "other-operator"}}}},
			objects:   []*Object{pfOperator(), widget},
		},
		{
			name:      "the operator's workload is not in the view: it serves nothing",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects:   []*Object{widget},
		},
		{
			name:      "a mapping restricted to other resources does not cover the CR",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{{Pattern: pfFinalizer, Resources: []string{"things.acme.io"}, Controllers: pfMapping.Controllers}},
			objects:   []*Object{pfOperator(), widget},
		},
		{
			name:      "built-in finalizers never, even matched by a mapping the operator serves",
			uninstall: pfHelm(true),
			mappings: []FinalizerOwner{
				{Pattern: "*", Controllers: pfMapping.Controllers},
				{Pattern: "*/*", Controllers: pfMapping.Controllers},
			},
			objects: []*Object{pfOperator(),
				pfWidget("shop", "builtin", "kubernetes", "foregroundDeletion", "orphan", "kubernetes.io/pvc-protection", "batch.k8s.io/cleanup"),
				pfGizmo("shop", "builtin", "kubernetes", "foregroundDeletion", "orphan", "kubernetes.io/pv-protection"),
			},
		},
		// Custom resources, by the API domain of a CRD that goes with the uninstall.
		{
			name:      "a finalizer in the API domain of a CRD of the release",
			uninstall: pfHelm(false),
			objects:   []*Object{pfOperator(), gizmoCRD, gizmo},
			want: []pfWant{
				{
					object:   gizmo,
					reason:   "holds " + pfGizmoFinal + ", which only " + helmTarget + " removes: uninstalled first, it stays Terminating once deleted",
					evidence: []string{inDomain},
				},
				{
					object:   gizmoCRD,
					reason:   "1 of its 1 custom resources hold a finalizer only " + helmTarget + " removes: deleted after it, the CRD never goes",
					evidence: []string{"CRD gizmos.example.com has 1 custom resources"},
				},
			},
		},
		{
			name:      "a finalizer of another domain: not tied to the release",
			uninstall: pfHelm(false),
			objects:   []*Object{pfOperator(), gizmoCRD, pfGizmo("shop", "g1", "example.org/cleanup", "gizmos.example.org/finalizer")},
		},
		{
			name:      "a CR of a CRD that is not the release's",
			uninstall: pfHelm(false),
			objects:   []*Object{pfOperator(), gizmoCRD, pfWidget("shop", "w1", "acme.io/finalizer", "widgets.acme.io/cleanup")},
		},
		// Grouping.
		{
			name:      "several CRs of a resource in a namespace: one of N",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects: []*Object{pfOperator(), pfWidget("shop", "a", pfFinalizer), pfWidget("shop", "b", pfFinalizer),
				pfWidget("shop", "c", pfFinalizer), pfWidget("lab", "d", pfFinalizer)},
			want: []pfWant{
				{object: pfWidget("shop", "a", pfFinalizer), reason: "one of 3 widgets.acme.io in namespace shop that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: pfWidget("shop", "b", pfFinalizer), reason: "one of 3 widgets.acme.io in namespace shop that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: pfWidget("shop", "c", pfFinalizer), reason: "one of 3 widgets.acme.io in namespace shop that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: pfWidget("lab", "d", pfFinalizer), reason: holds, evidence: []string{served}},
			},
		},
		{
			name:      "several cluster-scoped CRs of a resource: one of N, cluster-scoped",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects: []*Object{pfOperator(), object(loggings, "", "a", withFinalizers(pfFinalizer)), object(loggings, "", "b", withFinalizers(pfFinalizer)),
				pfWidget("shop", "w1", pfFinalizer)},
			want: []pfWant{
				{object: object(loggings, "", "a"), reason: "one of 2 loggings.logging.banzaicloud.io cluster-scoped that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: object(loggings, "", "b"), reason: "one of 2 loggings.logging.banzaicloud.io cluster-scoped that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: widget, reason: holds, evidence: []string{served}},
			},
		},
		{
			name:      "a CR held both by a mapping and by the CRD domain: both finalizers named",
			uninstall: pfHelm(false),
			mappings:  []FinalizerOwner{{Pattern: "cleanup.acme.io", Controllers: pfMapping.Controllers}},
			objects:   []*Object{pfOperator(), gizmoCRD, pfGizmo("shop", "g1", "kubernetes", "cleanup.acme.io", pfGizmoFinal)},
			want: []pfWant{
				{
					object: gizmo,
					reason: "holds cleanup.acme.io, " + pfGizmoFinal + ", which only " + helmTarget + " removes: uninstalled first, it stays Terminating once deleted",
					evidence: []string{
						`cleanup.acme.io: controller mapping "cleanup.acme.io", served by ` + pfTarget + " and by nothing else",
						inDomain,
					},
				},
				{
					object:   gizmoCRD,
					reason:   "1 of its 1 custom resources hold a finalizer only " + helmTarget + " removes: deleted after it, the CRD never goes",
					evidence: []string{"CRD gizmos.example.com has 1 custom resources"},
				},
			},
		},
		// Drain.
		{
			name:      "drain: a Delete resting on the operator running",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			drain:     true,
			objects:   []*Object{pfOperator(), widget},
			want:      []pfWant{{object: widget, reason: holds, evidence: []string{served, drainedBy}, drained: true}},
		},
		{
			// Deleted, it may stay Terminating: held, so that the drain says it is left blocked.
			name:      "drain: a CR tied by the CRD's API domain alone is held, not drained",
			uninstall: pfHelm(false),
			drain:     true,
			objects:   []*Object{pfOperator(), gizmoCRD, gizmo},
			want: []pfWant{
				{
					object:   gizmo,
					reason:   "holds " + pfGizmoFinal + ", which only " + helmTarget + " removes: uninstalled first, it stays Terminating once deleted",
					evidence: []string{inDomain},
					held:     HeldNotDrainable,
				},
				{
					object:   gizmoCRD,
					reason:   "1 of its 1 custom resources hold a finalizer only " + helmTarget + " removes: deleted after it, the CRD never goes",
					evidence: []string{"CRD gizmos.example.com has 1 custom resources"},
				},
			},
		},
		{
			name:      "protected mapping, not draining: reported",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{protected},
			objects:   []*Object{pfOperator(), protectedWidget},
			want: []pfWant{{object: protectedWidget, reason: "holds volumes.acme.io/protect, which only " + pfTarget + " removes: uninstalled first, it stays Terminating once deleted",
				evidence: []string{protectedEvidence}}},
		},
		{
			// The delete waits for the opt-in: the engine skips it (opt-in), nothing is sent.
			name:      "protected mapping, draining: not drained without --drain-protected",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{protected},
			drain:     true,
			objects:   []*Object{pfOperator(), protectedWidget},
			want: []pfWant{{object: protectedWidget, reason: "holds volumes.acme.io/protect, which only " + pfTarget + " removes: uninstalled first, it stays Terminating once deleted",
				evidence: []string{protectedEvidence, "its controller deletes volumes with it, or it guards that: drained only with --drain-protected"},
				drained:  true, optIn: "drain-protected"}},
		},
		{
			name:           "protected mapping, draining with --drain-protected: drained",
			uninstall:      pfUninstall(),
			mappings:       []FinalizerOwner{protected},
			drain:          true,
			drainProtected: true,
			objects:        []*Object{pfOperator(), protectedWidget},
			want: []pfWant{{object: protectedWidget, reason: "holds volumes.acme.io/protect, which only " + pfTarget + " removes: uninstalled first, it stays Terminating once deleted",
				evidence: []string{protectedEvidence, drainedBy}, drained: true}},
		},
		// Webhook configurations.
		{
			name:      "a webhook calling a Service of the operator's pods, failurePolicy Fail",
			uninstall: pfUninstall(),
			objects:   []*Object{pfOperator(), pfService("acme", "acme-webhook", acmePods), hooks},
			want: []pfWant{{object: hooks, reason: hookReason, evidence: []string{
				"webhook validate.acme.io (failurePolicy Fail) calls Service acme/acme-webhook, which selects the pods of " + pfTarget + "; once it is gone, it refuses " + hookCalls,
			}}},
		},
		{
			name:      "a mutating webhook calling a Service of the operator's pods, failurePolicy Ignore",
			uninstall: pfUninstall(),
			objects:   []*Object{pfOperator(), pfService("acme", "acme-webhook", acmePods), mutating},
			want: []pfWant{{object: mutating, reason: hookReason, evidence: []string{
				"webhook default.acme.io (failurePolicy Ignore) calls Service acme/acme-webhook, which selects the pods of " + pfTarget + "; once it is gone, it lets through unchecked " + hookCalls,
			}}},
		},
		{
			name:      "a webhook whose Service selects other pods",
			uninstall: pfUninstall(),
			objects:   []*Object{pfOperator(), pfService("acme", "acme-webhook", otherPods), hooks, mutating},
		},
		{
			name:      "a webhook whose Service in another namespace selects pods labelled alike",
			uninstall: pfUninstall(),
			objects: []*Object{pfOperator(), pfService("other", "acme-webhook", acmePods),
				webhookConfig(ValidatingWebhookConfigurations, "other-hooks", webhook("validate.other.io", "", "other", "acme-webhook"))},
		},
		{
			name:      "a webhook whose Service has no selector, or is gone",
			uninstall: pfUninstall(),
			objects: []*Object{pfOperator(), object(Services, "acme", "acme-webhook"), hooks,
				webhookConfig(ValidatingWebhookConfigurations, "gone-hooks", webhook("gone.acme.io", "", "acme", "gone"))},
		},
		{
			name:      "a webhook calling a Service of the release, whatever it selects",
			uninstall: withService(),
			objects:   []*Object{pfOperator(), pfService("acme", "acme-webhook", otherPods), hooks},
			want: []pfWant{{object: hooks, reason: hookReason, evidence: []string{
				"webhook validate.acme.io (failurePolicy Fail) calls Service acme/acme-webhook, which goes with " + pfTarget + "; once it is gone, it refuses " + hookCalls,
			}}},
		},
		{
			name:      "a webhook configuration that goes with the uninstall, called by URL",
			uninstall: listedHooks(),
			objects:   []*Object{pfOperator(), urlHooks},
			want:      []pfWant{{object: urlHooks, reason: hookReason, evidence: []string{"ValidatingWebhookConfiguration acme-hosted goes with " + pfTarget}}},
		},
		{
			name:      "a mutating configuration of the listed name is another object",
			uninstall: listedHooks(),
			objects:   []*Object{pfOperator(), webhookConfig(MutatingWebhookConfigurations, "acme-hosted", webhook("hosted.acme.io", "", "", ""))},
		},
		// APIServices.
		{
			name:      "an APIService calling a Service of the operator's pods",
			uninstall: pfUninstall(),
			objects:   []*Object{pfOperator(), pfService("acme", "acme-api", acmePods), pfAPIService("widgets.acme.io", "acme", "acme-api")},
			want: []pfWant{{object: pfAPIService("widgets.acme.io", "acme", "acme-api"), reason: apiReason, evidence: []string{
				"it calls Service acme/acme-api, which selects the pods of " + pfTarget, apiGone,
			}}},
		},
		{
			name:      "an APIService that goes with the uninstall",
			uninstall: listedAPI(),
			objects:   []*Object{pfOperator(), pfAPIService("widgets.acme.io", "elsewhere", "api")},
			want: []pfWant{{object: pfAPIService("widgets.acme.io", "elsewhere", "api"), reason: apiReason, evidence: []string{
				"APIService v1.widgets.acme.io goes with " + pfTarget, apiGone,
			}}},
		},
		{
			name:      "unrelated APIServices: local, or served by other pods",
			uninstall: pfUninstall(),
			objects: []*Object{pfOperator(), pfService("metrics", "metrics-server", otherPods),
				pfAPIService("metrics.k8s.io", "metrics", "metrics-server"), pfAPIService("apps", "", "")},
		},
		// CRDs.
		{
			name:      "a CRD the uninstall deletes, with instances: their data is lost",
			uninstall: pfHelm(true),
			objects:   []*Object{pfOperator(), gizmoCRD, pfGizmo("shop", "a"), pfGizmo("lab", "b")},
			want: []pfWant{{object: gizmoCRD, reason: "the uninstall deletes it, and its 2 custom resources with it: their data is lost",
				evidence: []string{"CRD gizmos.example.com has 2 custom resources"}}},
		},
		{
			name:      "a CRD the uninstall deletes, without instances",
			uninstall: pfHelm(true),
			objects:   []*Object{pfOperator(), gizmoCRD},
		},
		{
			name:      "a CRD kept by the uninstall, its CRs without finalizers",
			uninstall: pfHelm(false),
			objects:   []*Object{pfOperator(), gizmoCRD, pfGizmo("shop", "a")},
		},
		{
			name:      "a CRD not of the uninstall whose CRs it blocks: of its N custom resources",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects: []*Object{pfOperator(), pfCRD("widgets.acme.io", "acme.io", "widgets"), widget,
				pfWidget("shop", "free"), pfWidget("lab", "free")},
			want: []pfWant{
				{object: widget, reason: holds, evidence: []string{served}},
				{object: pfCRD("widgets.acme.io", "acme.io", "widgets"), reason: "1 of its 3 custom resources hold a finalizer only " + pfTarget + " removes: deleted after it, the CRD never goes",
					evidence: []string{"CRD widgets.acme.io has 3 custom resources"}},
			},
		},
		// Namespaces.
		{
			name:      "namespaces holding blocked CRs, with their counts",
			uninstall: pfUninstall(),
			mappings:  []FinalizerOwner{pfMapping},
			objects: []*Object{pfOperator(), object(Namespaces, "", "shop"), object(Namespaces, "", "lab"), object(Namespaces, "", "empty"),
				pfWidget("shop", "a", pfFinalizer), pfWidget("shop", "b", pfFinalizer), pfWidget("lab", "c", pfFinalizer), pfWidget("lab", "free")},
			want: []pfWant{
				{object: pfWidget("shop", "a"), reason: "one of 2 widgets.acme.io in namespace shop that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: pfWidget("shop", "b"), reason: "one of 2 widgets.acme.io in namespace shop that hold " + pfFinalizer + ", which only " + pfTarget + " removes: uninstalled first, they stay Terminating once deleted", evidence: []string{served}},
				{object: pfWidget("lab", "c"), reason: holds, evidence: []string{served}},
				{object: object(Namespaces, "", "lab"), reason: "1 of its custom resources hold a finalizer only " + pfTarget + " removes: deleted after it, the namespace stays Terminating",
					evidence: []string{"1 custom resources in namespace lab would be left Terminating"}},
				{object: object(Namespaces, "", "shop"), reason: "2 of its custom resources hold a finalizer only " + pfTarget + " removes: deleted after it, the namespace stays Terminating",
					evidence: []string{"2 custom resources in namespace shop would be left Terminating"}},
			},
		},
		// OLM's csv-cleanup.
		{
			name:      "a CSV holding csv-cleanup, with a ClusterRole labelled as its",
			uninstall: withCSV(),
			objects: []*Object{pfOperator(), csvWithCleanup, acmeRole,
				object(ClusterRoles, "", "other-role", withLabels("olm.owner", "other.v1", "olm.owner.namespace", "operators", "olm.owner.kind", "ClusterServiceVersion"))},
			want: []pfWant{{object: csvWithCleanup, reason: csvReason, evidence: []string{"csv-cleanup deletes, then releases the CSV: ClusterRole acme-role", csvAfter}}},
		},
		{
			name:      "a CSV holding csv-cleanup, nothing labelled as its any more",
			uninstall: withCSV(),
			objects:   []*Object{pfOperator(), csvWithCleanup},
			want: []pfWant{{object: csvWithCleanup, reason: csvReason,
				evidence: []string{"nothing is labelled as this CSV's any more: csv-cleanup has nothing left to delete", csvAfter}}},
		},
		{
			name:      "a CSV without the finalizer",
			uninstall: withCSV(),
			objects:   []*Object{pfOperator(), csv("operators", "acme.v1", nil), acmeRole},
		},
		{
			name:      "the CSV is not in the view",
			uninstall: withCSV(),
			objects:   []*Object{pfOperator(), acmeRole},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := NewPreflight(tt.uninstall, Settings{Finalizers: shippedMappings(t, tt.mappings...)}, tt.drain, tt.drainProtected)
			findings := rule.Plan(context.Background(), pfView(tt.objects...))
			assertPreflightFindings(t, tt.uninstall, tt.want, ofObjects(tt.objects, findings))
		})
	}
}

// assertPreflightFindings checks that findings are exactly want, in any order.
func assertPreflightFindings(t *testing.T, u Uninstall, want []pfWant, findings []Finding) {
	t.Helper()
	var wantRefs, gotRefs []ObjectRef
	for _, w := range want {
		wantRefs = append(wantRefs, w.object.Ref())
	}
	for _, f := range findings {
		gotRefs = append(gotRefs, f.Object)
	}
	require.ElementsMatch(t, wantRefs, gotRefs, "the objects of the findings")
	for _, w := range want {
		i := slices.IndexFunc(findings, func(f Finding) bool { return f.Object == w.object.Ref() })
		f := findings[i]
		name := w.object.Ref().String()
		assert.Equal(t, SeverityWarning, f.Severity, name)
		assert.Equal(t, w.reason, f.Reason, name)
		assert.Equal(t, w.evidence, f.Evidence, name)
		assert.Equal(t, w.optIn, f.OptIn, name)
		if w.held != "" {
			assert.Equal(t, Delete{}, f.Action, name)
			if assert.NotNil(t, f.Held, name) {
				assert.Equal(t, w.held, f.Held.Reason, name)
			}
			assert.Empty(t, f.Facts, name)
			continue
		}
		assert.Nil(t, f.Held, name)
		if !w.drained {
			assert.Nil(t, f.Action, name)
			assert.Empty(t, f.Facts, name)
			continue
		}
		assert.Equal(t, Delete{}, f.Action, name)
		if assert.Len(t, f.Facts, 1, name) {
			assert.Equal(t, "runs Deployment acme/acme-operator", f.Facts[0].Key(), name)
		}
	}
}

// TestPreflightOwnWorkloadsNeverDrained: a drain never touches the operator itself, nor anything
// that is not a custom resource, even when it carries a finalizer of a mapping the operator
// serves (Kyverno's, on its own Deployments).
func TestPreflightOwnWorkloadsNeverDrained(t *testing.T) {
	mapping := FinalizerOwner{Pattern: "acme.io/*", Controllers: pfMapping.Controllers}
	operator := pfOperator()
	operator.Finalizers = []string{"acme.io/webhooks"}
	cm := object(ConfigMaps, "acme", "acme-config", withFinalizers("acme.io/webhooks"))
	rule := NewPreflight(pfUninstall(), Settings{Finalizers: shippedMappings(t, mapping)}, true, true)
	widget := pfWidget("shop", "w1", "acme.io/webhooks")
	findings := rule.Plan(context.Background(), pfView(operator, cm, widget))
	var about []ObjectRef
	for _, f := range findings {
		about = append(about, f.Object)
	}
	assert.NotContains(t, about, operator.Ref(), "the operator itself is not a custom resource")
	assert.NotContains(t, about, cm.Ref(), "a ConfigMap is not a custom resource")
	assert.Contains(t, about, widget.Ref(), "a custom resource with the same finalizer is drained")
}

// TestPreflightMayHaveWrittenWhatItDrains: restore trusts what a drain deleted (docs/preflight.md:
// "operator-sweeper restore can create what a drain deleted again"), so MayHaveWritten accepts
// every object Plan drains. A GatewayClass is a custom resource of a CRD in a *.k8s.io group.
func TestPreflightMayHaveWrittenWhatItDrains(t *testing.T) {
	gatewayClasses := Resource{GroupVersionResource: schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}, Kind: "GatewayClass"}
	mapping := FinalizerOwner{Pattern: "gateway.acme.io/*", Controllers: pfMapping.Controllers}
	class := object(gatewayClasses, "", "acme", withFinalizers("gateway.acme.io/cleanup"))
	view := NewView(testNow, append(slices.Clone(allTestResources), gatewayClasses), Coverage{}, withCRDs([]*Object{pfOperator(), class}))
	rule := NewPreflight(pfUninstall(), Settings{Finalizers: shippedMappings(t, mapping)}, true, true)
	findings := ofObjects([]*Object{pfOperator(), class}, rule.Plan(context.Background(), view))
	require.Len(t, findings, 1)
	require.Equal(t, Delete{}, findings[0].Action)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("gateway.networking.k8s.io/v1")
	obj.SetKind("GatewayClass")
	obj.SetName("acme")
	obj.SetFinalizers(class.Finalizers)
	assert.NoError(t, rule.MayHaveWritten(Delete{}.Type(), obj, findings[0].Evidence))
}

func TestPreflightOperatorRunsFact(t *testing.T) {
	u := pfUninstall()
	u.Workloads = append(u.Workloads, ObjectKey{Resource: DaemonSets.GroupResource(), Namespace: "acme", Name: "acme-agent"})
	agent := func(ready int64) *Object {
		return object(DaemonSets, "acme", "acme-agent", withContent(map[string]any{"status": map[string]any{"desiredNumberScheduled": int64(2), "numberReady": ready}}))
	}
	rule := NewPreflight(u, Settings{Finalizers: shippedMappings(t, pfMapping)}, true, false)
	objects := []*Object{pfOperator(), agent(0), pfWidget("shop", "w1", pfFinalizer)}
	findings := ofObjects(objects, rule.Plan(context.Background(), pfView(objects...)))
	require.Len(t, findings, 1)
	require.Len(t, findings[0].Facts, 1)
	fact := findings[0].Facts[0]
	// The fact is the workload that serves the finalizer's mapping: another of the uninstall's
	// running does not finalize what is deleted.
	assert.Equal(t, "runs Deployment acme/acme-operator", fact.Key())
	assert.Equal(t, []Read{
		{Resource: Deployments.GroupResource(), Namespace: "acme", Name: "acme-operator", Fields: []string{"spec.replicas", "status"}},
	}, fact.Reads())

	deleting := pfWorkload("acme", "acme-operator", 1, 1, nil)
	terminatingFor(time.Minute)(deleting)
	tests := []struct {
		name     string
		live     []*Object
		holds    bool
		evidence string
	}{
		{"the Deployment has a ready replica", []*Object{pfWorkload("acme", "acme-operator", 1, 1, nil)}, true,
			"re-checked live: Deployment acme/acme-operator runs (1 ready replicas): it finalizes what is deleted"},
		{"only the DaemonSet has ready pods", []*Object{pfWorkload("acme", "acme-operator", 1, 0, nil), agent(2)}, false,
			"re-checked live: Deployment acme/acme-operator does not run: what is deleted would stay Terminating"},
		{"nothing ready", []*Object{pfWorkload("acme", "acme-operator", 1, 0, nil), agent(0)}, false,
			"re-checked live: Deployment acme/acme-operator does not run: what is deleted would stay Terminating"},
		{"the Deployment is being deleted", []*Object{deleting}, false,
			"re-checked live: Deployment acme/acme-operator does not run: what is deleted would stay Terminating"},
		{"gone", nil, false,
			"re-checked live: " + pfTarget + " does not run: what is deleted would stay Terminating"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			holds, evidence := fact.Holds(pfView(tt.live...))
			assert.Equal(t, tt.holds, holds)
			assert.Equal(t, tt.evidence, evidence)
		})
	}
}

func TestPreflightMayHaveWritten(t *testing.T) {
	obj := func(apiVersion, kind string, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("shop")
		u.SetName("x")
		u.SetFinalizers(finalizers)
		return u
	}
	tests := []struct {
		name    string
		obj     *unstructured.Unstructured
		wantErr string // "" for none
	}{
		{"a custom resource with an operator's finalizer", obj("acme.io/v1", "Widget", "kubernetes", pfFinalizer), ""},
		{"a custom resource with a finalizer in its own domain", obj("example.com/v1", "Gizmo", pfGizmoFinal), ""},
		{"a ConfigMap", obj("v1", "ConfigMap", pfFinalizer), "ConfigMap x is not a custom resource, which a drain never deletes"},
		{"a Deployment", obj("apps/v1", "Deployment", pfFinalizer), "Deployment x is not a custom resource, which a drain never deletes"},
		{"a kind of a k8s.io group", obj("networking.k8s.io/v1", "Ingress", pfFinalizer), "Ingress x is not a custom resource, which a drain never deletes"},
		{"a custom resource with built-in finalizers only", obj("acme.io/v1", "Widget", "kubernetes", "foregroundDeletion", "kubernetes.io/pvc-protection"),
			"Widget x held no finalizer of an operator, which a drain alone deletes"},
		{"a custom resource without finalizers", obj("acme.io/v1", "Widget"), "Widget x held no finalizer of an operator, which a drain alone deletes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Preflight{}.MayHaveWritten(Delete{}.Type(), tt.obj, nil)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestPreflightAuthorized(t *testing.T) {
	rule := NewPreflight(pfUninstall(), Settings{Finalizers: shippedMappings(t)}, true, false)
	assert.Equal(t, PreflightName, rule.Name())
	assert.Equal(t, []Write{{Action: "Delete", Resource: AnyResource}}, rule.Writes())
	assert.Nil(t, rule.PolicyRules(), "a drain's RBAC depends on the operator")
	var read []schema.GroupResource
	for _, req := range rule.ReadsContent() {
		read = append(read, req.Resource)
	}
	for _, r := range []Resource{Deployments, StatefulSets, DaemonSets, Services, ValidatingWebhookConfigurations, MutatingWebhookConfigurations, APIServices, CustomResourceDefinitions, ClusterServiceVersions} {
		assert.Contains(t, read, r.GroupResource())
	}
}

func TestObjectKeyString(t *testing.T) {
	assert.Equal(t, "deployments.apps acme/acme-operator", ObjectKey{Resource: Deployments.GroupResource(), Namespace: "acme", Name: "acme-operator"}.String())
	assert.Equal(t, "apiservices.apiregistration.k8s.io v1.widgets.acme.io", ObjectKey{Resource: APIServices.GroupResource(), Name: "v1.widgets.acme.io"}.String())
}
