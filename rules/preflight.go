package rules

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// PreflightName is the rule of `operator-sweeper preflight`, which a sweep never runs: it is not
// in the registry.
const PreflightName = "preflight"

// Uninstall is what `operator-sweeper preflight` is asked about: an operator, as what an
// uninstall of it removes.
type Uninstall struct {
	// Target names it as given: "helm/logging/logging-operator", "deployment/olm/olm-operator".
	Target string
	// Workloads are its Deployments, StatefulSets and DaemonSets: what runs its controllers.
	Workloads []ObjectKey
	// CRDs, Services, webhook configurations and APIServices go with it.
	CRDs                  []string
	Services              []ObjectKey
	WebhookConfigurations []ObjectKey
	APIServices           []string
	// DeletedCRDs are those of its CRDs the uninstall deletes, and their custom resources with
	// them: Helm deletes the CRDs of a chart's templates, not those of its crds/ directory; OLM
	// keeps a CSV's.
	DeletedCRDs []string
	// CSV is the ClusterServiceVersion of an OLM operator, whose csv-cleanup finalizer OLM
	// removes once it deleted what it labelled as the CSV's.
	CSV *ObjectKey
}

// ObjectKey names an object of a resource.
type ObjectKey struct {
	Resource        schema.GroupResource
	Namespace, Name string
}

// String is "resource.group namespace/name".
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Resource.String() + " " + k.Name
	}
	return k.Resource.String() + " " + k.Namespace + "/" + k.Name
}

// Preflight finds what an uninstall would leave blocked: the custom resources carrying a finalizer
// only its controllers remove, the webhook configurations and APIServices that call Services of
// its pods, its CRDs, and the namespaces whose deletion would stick. Draining, it plans to delete
// those custom resources while the operator runs to finalize them.
type Preflight struct {
	uninstall Uninstall
	mappings  FinalizerMappings
	// drain plans the deletes; drainProtected, of what guards data too.
	drain, drainProtected bool
}

// NewPreflight builds the rule of a preflight of u.
func NewPreflight(u Uninstall, settings Settings, drain, drainProtected bool) Preflight {
	return Preflight{uninstall: u, mappings: settings.Finalizers, drain: drain, drainProtected: drainProtected}
}

var (
	_ ContentReader = Preflight{}
	_ WholeReader   = Preflight{}
	_ Authorized    = Preflight{}
)

// Name implements Rule.
func (Preflight) Name() string { return PreflightName }

// ReadsContent implements ContentReader: the workloads' pod templates, the Services' selectors,
// what webhooks and APIServices call, the CRDs' names.
func (Preflight) ReadsContent() []ContentRequest {
	template := []string{"spec.replicas", "spec.template.metadata.labels", "spec.template.spec.containers", "spec.template.spec.initContainers", "status"}
	return []ContentRequest{
		{Resource: Deployments.GroupResource(), Fields: template},
		{Resource: StatefulSets.GroupResource(), Fields: template},
		{Resource: DaemonSets.GroupResource(), Fields: append(template, "status.desiredNumberScheduled")},
		{Resource: Leases.GroupResource(), Fields: leaseFields},
		{Resource: Services.GroupResource(), Fields: []string{"spec.selector"}},
		{Resource: ValidatingWebhookConfigurations.GroupResource(), Fields: []string{"webhooks"}},
		{Resource: MutatingWebhookConfigurations.GroupResource(), Fields: []string{"webhooks"}},
		{Resource: APIServices.GroupResource(), Fields: []string{"spec.service", "spec.group", "spec.version"}},
		{Resource: CustomResourceDefinitions.GroupResource(), Fields: []string{"spec.group", "spec.names"}},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: csvCRDFields},
	}
}

// ReadsWhole implements WholeReader: what it reads in full, the namespaces and EndpointSlices that
// say whether a Service serves, and what OLM made for a CSV.
func (r Preflight) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), groupResources(Namespaces, EndpointSlices), groupResources(csvCleanupResources...))
}

// Writes implements Authorized: a drain deletes custom resources of any kind.
func (Preflight) Writes() []Write { return []Write{{Action: Delete{}.Type(), Resource: AnyResource}} }

// MayHaveWritten implements Authorized: a custom resource that held a finalizer. A custom
// resource is one of no built-in API group (Plan asks more: that a CRD in the view serves it).
func (Preflight) MayHaveWritten(_ string, obj *unstructured.Unstructured, _ []string) error {
	if builtInGroup(schema.FromAPIVersionAndKind(obj.GetAPIVersion(), obj.GetKind()).Group) {
		return fmt.Errorf("%s %s is not a custom resource, which a drain never deletes", obj.GetKind(), obj.GetName())
	}
	if !slices.ContainsFunc(obj.GetFinalizers(), func(f string) bool { return !BuiltIn(f) }) {
		return fmt.Errorf("%s %s held no finalizer of an operator, which a drain alone deletes", obj.GetKind(), obj.GetName())
	}
	return nil
}

// Admission implements Authorized: none. A drain runs as whoever runs preflight, not as the
// sweeper's ServiceAccount, which the policy fences.
func (Preflight) Admission() Admission { return Admission{} }

// builtInGroup reports whether group is one of Kubernetes' own API groups, which no CRD serves:
// those of client-go's scheme, and the API server's extension and aggregation groups.
func builtInGroup(group string) bool {
	return group == "" || group == CustomResourceDefinitions.Group || group == APIServices.Group || scheme.Scheme.IsGroupRegistered(group)
}

// PolicyRules implements Authorized: what a drain needs besides the walk, which depends on the
// operator; see the drain's example RBAC.
func (Preflight) PolicyRules() []rbacv1.PolicyRule { return nil }

// operatorWorkload is a workload of the uninstall as the view has it.
type operatorWorkload struct {
	*Object
	podLabels labels.Set
}

func (w operatorWorkload) String() string {
	return fmt.Sprintf("%s %s/%s", w.Resource.Kind, w.Namespace, w.Name)
}

// Plan implements Rule.
func (r Preflight) Plan(_ context.Context, view *View) []Finding {
	u := r.uninstall
	var workloads []operatorWorkload
	for _, key := range u.Workloads {
		if obj, ok := view.Get(key.Resource, key.Namespace, key.Name); ok {
			podLabels, _, _ := unstructured.NestedStringMap(obj.Content, "spec", "template", "metadata", "labels")
			workloads = append(workloads, operatorWorkload{obj, podLabels})
		}
	}
	served := r.servedMappings(view, workloads)
	crds := r.crdsOf(view)
	p := &preflightPlan{view: view, uninstall: u, workloads: workloads}
	p.customResources(r, served, crds)
	p.callers(ValidatingWebhookConfigurations, MutatingWebhookConfigurations)
	p.apiServices()
	p.crds(crds)
	p.namespaces()
	p.csvCleanup()
	return p.findings
}

// servedMapping is a controller mapping whose finalizers only the uninstall's workloads remove.
type servedMapping struct {
	mapping *finalizerMapping
	by      operatorWorkload // the workload that serves it
}

// servedMappings are the mappings the uninstall's workloads serve and no other running workload
// does: a mapping another workload also serves stays served after it. (A Lease is not asked: the
// operator's own holds one while it runs.)
func (r Preflight) servedMappings(view *View, workloads []operatorWorkload) []servedMapping {
	ours := func(w *Object) bool {
		return slices.ContainsFunc(workloads, func(o operatorWorkload) bool { return o.Object == w })
	}
	var served []servedMapping
	for i := range r.mappings.mappings {
		m := &r.mappings.mappings[i]
		i := slices.IndexFunc(workloads, func(w operatorWorkload) bool {
			return slices.ContainsFunc(m.controllers, func(c controllerMatcher) bool { return c.matchesWorkload(w.Object) })
		})
		others := slices.ContainsFunc(m.controllers, func(c controllerMatcher) bool {
			return slices.ContainsFunc(c.matches(view), func(w *Object) bool { return !ours(w) && desiredReplicas(w) > 0 })
		})
		if i >= 0 && !others {
			served = append(served, servedMapping{m, workloads[i]})
		}
	}
	return served
}

// crdsOf are the CRDs that go with the uninstall, by name: those it installs, those a Helm
// release of its workloads or a CSV that owns them says are its.
func (r Preflight) crdsOf(view *View) map[string]*Object {
	crds := map[string]*Object{}
	for _, name := range r.uninstall.CRDs {
		if crd, ok := view.Get(CustomResourceDefinitions.GroupResource(), "", name); ok {
			crds[name] = crd
		}
	}
	return crds
}

// preflightPlan collects the findings of a preflight.
type preflightPlan struct {
	view      *View
	uninstall Uninstall
	workloads []operatorWorkload
	findings  []Finding
	// blockedIn counts the custom resources left blocked by namespace, and blockedBy the CRDs.
	blockedIn  map[string]int
	blockedCRD map[string]int
}

func (p *preflightPlan) add(f Finding) {
	f.Severity = SeverityWarning
	p.findings = append(p.findings, f)
}

// customResources finds the objects that hold a finalizer only the uninstall's controllers
// remove: by a mapping it serves, or in the API domain of a CRD that goes with it. A finding says
// how many of its kind in its namespace do, so that the report groups them by namespace and kind.
func (p *preflightPlan) customResources(r Preflight, served []servedMapping, crds map[string]*Object) {
	p.blockedIn, p.blockedCRD = map[string]int{}, map[string]int{}
	type blocked struct {
		finding Finding
		held    []string
	}
	var found []blocked
	perKind := map[string]int{} // by namespace and resource
	// Custom resources only: those of a resource a CRD serves. A CRD's name is its plural and
	// group (the API server validates it so).
	custom := map[schema.GroupResource]bool{}
	for _, crd := range p.view.List(CustomResourceDefinitions.GroupResource()) {
		plural, group, _ := strings.Cut(crd.Name, ".")
		custom[schema.GroupResource{Group: group, Resource: plural}] = true
	}
	// A drain acts only on a whole view of the workloads: another instance of the operator, not
	// listed, would make the mapping look served by the uninstall alone.
	drainable := !slices.ContainsFunc([]Resource{Deployments, StatefulSets, DaemonSets}, func(w Resource) bool {
		return !p.view.Observed(w.GroupResource(), "")
	})
	for obj := range p.view.Objects() {
		if !custom[obj.Resource.GroupResource()] {
			continue
		}
		var why, held []string
		var by *operatorWorkload // the workload a drain's delete waits on
		guarded, domainOnly := "", false
		crdName := obj.Resource.Resource + "." + obj.Resource.Group
		for _, f := range obj.Finalizers {
			if BuiltIn(f) {
				continue
			}
			if i := slices.IndexFunc(served, func(s servedMapping) bool {
				ok, _ := path.Match(s.mapping.Pattern, f) // validated
				return ok && s.mapping.covers(obj.Resource.GroupResource())
			}); i >= 0 {
				s := served[i]
				held = append(held, f)
				why = append(why, fmt.Sprintf("%s: controller mapping %q, served by %s and by nothing else", f, s.mapping.key(), s.by))
				// What deleting it sets off (cascades), or what it guards: drained only on request.
				if m, ok := r.mappings.consequenceOf(f, obj.Resource.GroupResource()); ok && m.Consequence != ConsequenceLocal {
					guarded = cmp.Or(guarded, m.StandsFor)
				}
				by = &s.by
				continue
			}
			if _, mapped := r.mappings.ownerOf(f, obj.Resource.GroupResource()); mapped {
				continue // another workload serves it, or it is no finalizer of the uninstall's
			}
			domain, _, _ := strings.Cut(f, "/")
			if _, ours := crds[crdName]; ours && obj.Resource.Group != "" && sameDomain(domain, obj.Resource.Group) {
				held = append(held, f)
				domainOnly = true
				why = append(why, fmt.Sprintf("%s: in the API domain of CRD %s, which goes with %s", f, crdName, p.uninstall.Target))
			}
		}
		if len(held) == 0 {
			continue
		}
		p.blockedIn[obj.Namespace]++
		p.blockedCRD[crdName]++
		perKind[obj.Namespace+"/"+crdName]++
		f := Finding{Object: obj.Ref(), Evidence: why}
		switch {
		case !r.drain:
		// What a drain cannot delete is held, not left out: it would stay blocked, and the drain
		// says so rather than finish as if all were drained.
		case !drainable:
			f.Action = Delete{}
			f.Held = &Held{Reason: HeldNotDrainable, Detail: "not drained: Deployments, StatefulSets and DaemonSets were not all listed, so another instance of the operator may serve it"}
		case domainOnly || by == nil:
			// A CRD's domain does not say which install finalizes an object: another instance may.
			f.Action = Delete{}
			f.Held = &Held{Reason: HeldNotDrainable, Detail: "not drained: only a controller mapping says which workload finalizes it (add one to the config)"}
		default:
			f.Action = Delete{}
			f.Facts = []Fact{r.operatorRuns(*by)}
			if guarded != "" && !r.drainProtected {
				f.OptIn = "drain-protected"
				f.Evidence = append(f.Evidence, fmt.Sprintf("its controller deletes %s with it, or it guards that: drained only with --drain-protected", guarded))
			} else {
				f.Evidence = append(f.Evidence, "drained: deleted while "+by.String()+" runs, which removes its finalizer after its own cleanup")
			}
		}
		found = append(found, blocked{f, held})
	}
	for _, b := range found {
		obj := b.finding.Object
		held := strings.Join(b.held, ", ")
		b.finding.Reason = fmt.Sprintf("holds %s, which only %s removes: uninstalled first, it stays Terminating once deleted", held, p.uninstall.Target)
		if n := perKind[obj.Namespace+"/"+obj.Resource.Resource+"."+obj.Resource.Group]; n > 1 {
			where := "cluster-scoped"
			if obj.Namespace != "" {
				where = "in namespace " + obj.Namespace
			}
			b.finding.Reason = fmt.Sprintf("one of %d %s %s that hold %s, which only %s removes: uninstalled first, they stay Terminating once deleted",
				n, obj.Resource.GroupResource(), where, held, p.uninstall.Target)
		}
		p.add(b.finding)
	}
}

// callers finds the webhook configurations of kinds whose webhooks call a Service of the
// uninstall's pods, or that go with it.
func (p *preflightPlan) callers(kinds ...Resource) {
	for _, kind := range kinds {
		for _, obj := range p.view.List(kind.GroupResource()) {
			ours := slices.Contains(p.uninstall.WebhookConfigurations, ObjectKey{kind.GroupResource(), "", obj.Name})
			var evidence []string
			hooks, _, _ := unstructured.NestedSlice(obj.Content, "webhooks")
			for _, h := range hooks {
				hook, _ := h.(map[string]any)
				call := judgeWebhook(p.view, hook)
				if call.service == "" {
					continue
				}
				if served := p.serves(call.namespace, call.service); served != "" {
					evidence = append(evidence, fmt.Sprintf("webhook %s (failurePolicy %s) calls Service %s/%s, which %s; once it is gone, it %s %s",
						call.name, call.failurePolicy, call.namespace, call.service, served, refusesOrIgnores(call.failurePolicy), matchedRequests(hook)))
				}
			}
			if len(evidence) == 0 && !ours {
				continue
			}
			if ours {
				evidence = append(evidence, fmt.Sprintf("%s %s goes with %s", kind.Kind, obj.Name, p.uninstall.Target))
			}
			p.add(Finding{Object: obj.Ref(), Reason: fmt.Sprintf("its webhooks call %s: left behind, they refuse or skip what they match", p.uninstall.Target), Evidence: evidence})
		}
	}
}

// refusesOrIgnores says what a webhook does with what it matches once its Service is gone.
func refusesOrIgnores(failurePolicy string) string {
	if failurePolicy == "Ignore" {
		return "lets through unchecked"
	}
	return "refuses"
}

// apiServices finds the aggregated APIServices served by the uninstall's pods, or that go with it.
func (p *preflightPlan) apiServices() {
	for _, obj := range p.view.List(APIServices.GroupResource()) {
		namespace := nestedString(obj, "spec", "service", "namespace")
		name := nestedString(obj, "spec", "service", "name")
		var evidence []string
		if served := p.serves(namespace, name); name != "" && served != "" {
			evidence = append(evidence, fmt.Sprintf("it calls Service %s/%s, which %s", namespace, name, served))
		}
		if slices.Contains(p.uninstall.APIServices, obj.Name) {
			evidence = append(evidence, fmt.Sprintf("APIService %s goes with %s", obj.Name, p.uninstall.Target))
		}
		if len(evidence) == 0 {
			continue
		}
		evidence = append(evidence, fmt.Sprintf("once unavailable, discovery of %s/%s fails, and no namespace can finish its deletion",
			nestedString(obj, "spec", "group"), nestedString(obj, "spec", "version")))
		p.add(Finding{Object: obj.Ref(), Reason: fmt.Sprintf("served by %s: left behind, it is unavailable and blocks every namespace deletion", p.uninstall.Target), Evidence: evidence})
	}
}

// serves says how the Service namespace/name belongs to the uninstall: it selects the pods of one
// of its workloads, or goes with it; "" if it does not.
func (p *preflightPlan) serves(namespace, name string) string {
	if slices.Contains(p.uninstall.Services, ObjectKey{Services.GroupResource(), namespace, name}) {
		return "goes with " + p.uninstall.Target
	}
	svc, ok := p.view.Get(Services.GroupResource(), namespace, name)
	if !ok {
		return ""
	}
	selector, found, _ := unstructured.NestedStringMap(svc.Content, "spec", "selector")
	if !found || len(selector) == 0 {
		return ""
	}
	for _, w := range p.workloads {
		if w.Namespace == namespace && labels.SelectorFromSet(selector).Matches(w.podLabels) {
			return "selects the pods of " + w.String()
		}
	}
	return ""
}

// crds finds the CRDs the uninstall deletes with their custom resources, and those whose custom
// resources would keep their deletion from finishing.
func (p *preflightPlan) crds(crds map[string]*Object) {
	names := make([]string, 0, len(crds))
	for name := range crds {
		names = append(names, name)
	}
	for name := range p.blockedCRD {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		crd, ok := p.view.Get(CustomResourceDefinitions.GroupResource(), "", name)
		if !ok {
			continue
		}
		instances := p.instances(crd)
		blocked := p.blockedCRD[name]
		var reason string
		switch _, ours := crds[name]; {
		case ours && slices.Contains(p.uninstall.DeletedCRDs, name) && instances > 0:
			reason = fmt.Sprintf("the uninstall deletes it, and its %d custom resources with it: their data is lost", instances)
		case blocked > 0:
			reason = fmt.Sprintf("%d of its %d custom resources hold a finalizer only %s removes: deleted after it, the CRD never goes", blocked, instances, p.uninstall.Target)
		default:
			continue
		}
		p.add(Finding{Object: crd.Ref(), Reason: reason, Evidence: []string{fmt.Sprintf("CRD %s has %d custom resources", name, instances)}})
	}
}

// instances counts a CRD's custom resources in the view.
func (p *preflightPlan) instances(crd *Object) int {
	group := nestedString(crd, "spec", "group")
	plural := nestedString(crd, "spec", "names", "plural")
	return len(p.view.List(schema.GroupResource{Group: group, Resource: plural}))
}

// namespaces finds the namespaces whose deletion the blocked custom resources would keep from
// finishing.
func (p *preflightPlan) namespaces() {
	names := make([]string, 0, len(p.blockedIn))
	for ns := range p.blockedIn {
		if ns != "" {
			names = append(names, ns)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		ns, ok := p.view.Get(Namespaces.GroupResource(), "", name)
		if !ok {
			continue
		}
		p.add(Finding{Object: ns.Ref(), Reason: fmt.Sprintf("%d of its custom resources hold a finalizer only %s removes: deleted after it, the namespace stays Terminating", p.blockedIn[name], p.uninstall.Target),
			Evidence: []string{fmt.Sprintf("%d custom resources in namespace %s would be left Terminating", p.blockedIn[name], name)}})
	}
}

// csvCleanup finds what OLM's csv-cleanup finalizer of the uninstall's CSV waits on: what OLM
// labelled as the CSV's, which it deletes before it releases the CSV, and only while it runs.
func (p *preflightPlan) csvCleanup() {
	key := p.uninstall.CSV
	if key == nil {
		return
	}
	csv, ok := p.view.Get(key.Resource, key.Namespace, key.Name)
	if !ok || !slices.Contains(csv.Finalizers, csvCleanupFinalizer) {
		return
	}
	refs, waits, sure := csvCleanupObjects(p.view, key.Namespace, key.Name)
	if sure && len(refs) > 0 {
		names := make([]string, len(refs))
		for i, ref := range refs {
			names[i] = ref.Kind + " " + ref.Name
		}
		waits = "csv-cleanup deletes, then releases the CSV: " + strings.Join(names, ", ")
	}
	p.add(Finding{Object: csv.Ref(),
		Reason:   fmt.Sprintf("holds %s, which OLM's olm-operator removes once it deleted what it labelled as this CSV's: delete the CSV while OLM runs", csvCleanupFinalizer),
		Evidence: []string{waits, "deleted once OLM is gone, the CSV stays Terminating (rules orphaned-finalizers and olm-rbac then release it)"}})
}

// operatorRuns is the fact a drain's delete rests on: the workload that removes the finalizer
// still runs, read again, so that what is deleted is finalized.
func (r Preflight) operatorRuns(w operatorWorkload) Fact {
	return factOf{
		key:   "runs " + w.String(),
		reads: []Read{{Resource: w.Resource.GroupResource(), Namespace: w.Namespace, Name: w.Name, Fields: []string{"spec.replicas", "status"}}},
		holds: func(view *View) (bool, string) {
			now, ok := view.Get(w.Resource.GroupResource(), w.Namespace, w.Name)
			if ok && now.DeletionTimestamp == nil && readyReplicas(now) > 0 {
				return true, fmt.Sprintf("re-checked live: %s runs (%d ready replicas): it finalizes what is deleted", w, readyReplicas(now))
			}
			return false, fmt.Sprintf("re-checked live: %s does not run: what is deleted would stay Terminating", w)
		},
	}
}

// readyReplicas is how many of a workload's pods are ready, as its status says.
func readyReplicas(w *Object) int64 {
	field := []string{"status", "readyReplicas"}
	if w.Resource.GroupResource() == DaemonSets.GroupResource() {
		field = []string{"status", "numberReady"}
	}
	n, _, _ := unstructured.NestedInt64(w.Content, field...)
	return n
}
