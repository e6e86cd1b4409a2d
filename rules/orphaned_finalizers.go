package rules

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OrphanedFinalizers releases objects stuck Terminating on a finalizer whose operator is gone:
// logging-operator's CRs after `helm uninstall` (F4), OLM's CSVs after OLM itself was removed
// (F1). It never touches a built-in finalizer, an object terminating for less than
// --min-terminating-age, or a finalizer whose controller is still there: running (left alone) or
// scaled to 0 (a warning: scale it up instead). Who owns a finalizer is decided, first answer
// wins, by
//
//  1. the controller mappings (Settings.Finalizers): a matching workload exists, or none does;
//  2. the object's CRD: a ClusterServiceVersion that owns it, Helm ownership with or without
//     its release's records, OLM labels without such a CSV nor Helm metadata; only for
//     finalizers in the CRD's own API domain, so that a third party's finalizer on someone
//     else's CR is never released;
//  3. otherwise nobody knows: the finding is informational and nothing is done.
//
// The action removes exactly the orphaned finalizers. OLM's csv-cleanup finalizer stands for the
// RBAC and webhook configurations OLM would have deleted; its release depends on their deletion
// (rule olm-rbac) in the same run.
type OrphanedFinalizers struct {
	args     OrphanedFinalizersArgs
	minAge   time.Duration
	mappings FinalizerMappings
}

// OrphanedFinalizersName is the name of rule orphaned-finalizers.
const OrphanedFinalizersName = "orphaned-finalizers"

// OrphanedFinalizersArgs are the arguments of orphaned-finalizers: rules.orphaned-finalizers in
// the config file. Its threshold is --min-terminating-age; its controller mappings, the
// "finalizers" section.
type OrphanedFinalizersArgs struct {
	// HelmSQLStorage says some Helm releases are kept in SQL (the sql driver), which the sweeper
	// cannot read: a release without a record in Secrets or ConfigMaps is then undecided.
	HelmSQLStorage bool `json:"helm-sql-storage,omitempty"`
}

// NewOrphanedFinalizers builds orphaned-finalizers.
func NewOrphanedFinalizers(args OrphanedFinalizersArgs, settings Settings) (OrphanedFinalizers, error) {
	args.HelmSQLStorage = args.HelmSQLStorage || settings.HelmSQLStorage
	return OrphanedFinalizers{args: args, minAge: settings.MinTerminatingAge, mappings: settings.Finalizers}, nil
}

var (
	_ ContentReader    = OrphanedFinalizers{}
	_ WholeReader      = OrphanedFinalizers{}
	_ AnnotationReader = OrphanedFinalizers{}
	_ Authorized       = OrphanedFinalizers{}
)

// Name implements Rule.
func (OrphanedFinalizers) Name() string { return OrphanedFinalizersName }

// Writes implements Authorized: it releases finalizers of objects of any kind.
func (OrphanedFinalizers) Writes() []Write {
	return []Write{{Action: RemoveFinalizers{}.Type(), Resource: AnyResource}}
}

// MayHaveWritten implements Authorized: it releases finalizers of any object; which ones, restore
// checks against the pre-image.
func (OrphanedFinalizers) MayHaveWritten(string, *unstructured.Unstructured, []string) error {
	return nil
}

// Admission implements Authorized: it only removes finalizers, which the policy fences for every
// rule (and never those the catalog says guard).
func (OrphanedFinalizers) Admission() Admission { return Admission{} }

// PolicyRules implements Authorized: get and patch on the resources of the finalizers the
// catalog and the config file let it release (consequence local or cascades).
func (r OrphanedFinalizers) PolicyRules() []rbacv1.PolicyRule {
	return r.mappings.releasePolicy()
}

// ReadsContent implements ContentReader: workloads, Leases and the CRDs a CSV owns.
func (OrphanedFinalizers) ReadsContent() []ContentRequest {
	return append(workloadContent(), ContentRequest{Resource: ClusterServiceVersions.GroupResource(), Fields: csvCRDFields})
}

// ReadsWhole implements WholeReader: whether a finalizer's owner is gone rests on the workloads
// and Leases of its controller mapping, or on its object's CRD, the CSVs that may own it and the
// records of the CRD's Helm release; a CSV's csv-cleanup, on what OLM made for the CSV.
func (r OrphanedFinalizers) ReadsWhole() []schema.GroupResource {
	return slices.Concat(contentResources(r.ReadsContent()), groupResources(CustomResourceDefinitions), helmRecords(), groupResources(csvCleanupResources...))
}

// ReadsAnnotations implements AnnotationReader: the Helm release a CRD belongs to.
func (OrphanedFinalizers) ReadsAnnotations() []string { return []string{helmAnnotations} }

// csvCRDFields are what rules read of a CSV to tell which CRDs it owns or requires.
var csvCRDFields = []string{"spec.customresourcedefinitions"}

// csvCleanupFinalizer is OLM v0's finalizer on a CSV (OLM ≥ v0.27): before releasing it, OLM
// deletes the cluster-scoped RBAC labelled as the CSV's.
const csvCleanupFinalizer = "operators.coreos.com/csv-cleanup"

type decision int

const (
	undecided decision = iota
	alive
	scaledDown
	orphaned
	// protected: orphaned, but guarding something outside the cluster, or data.
	protected
	// unclassified: orphaned, but what the finalizer stands for is unknown.
	unclassified
)

// verdict is the decision about one finalizer of one object.
type verdict struct {
	finalizer string
	decision  decision
	evidence  []string
	// owners keep an alive or scaled-down finalizer: "Deployment olm/olm-operator",
	// "ClusterServiceVersion operators/etcd.v0.9.4", "Helm release logging/logging-operator".
	owners []string
	// installer is the operator the evidence names first: a workload of the controller mapping
	// that matches none, or the Helm release of the object's CRD.
	installer *Installer
	// dependsOn are objects to delete before an orphaned finalizer may be released.
	dependsOn []ObjectRef
	// facts are what an orphaned verdict rests on, to be read again before the release.
	facts []Fact
	// standsFor and remedy say, for a finalizer whose owner is gone, what it stands for and what
	// to do before it may be removed by hand.
	standsFor, remedy string
}

// planCache caches what one Plan asks of the view for many objects: each controller mapping's
// status, the CSVs owning each CRD, and the findings themselves: an operator uninstalled leaves
// thousands of objects of a few kinds on the same finalizers, and their findings differ only in
// the object and how long it has been terminating.
type planCache struct {
	view        *View
	controllers map[string]controllerStatus // by mapping key
	crds        *crdIndex                   // built on first use
	findings    map[findingKey]Finding      // by resource and finalizers
	since       *sinceTexts
}

// findingKey is what a finding of orphaned-finalizers depends on, but for its object: the
// object's resource and finalizers. (A CSV's csv-cleanup depends on the CSV's own RBAC.)
type findingKey struct {
	resource   *Resource
	finalizers string
}

func newPlanCache(view *View) *planCache {
	return &planCache{view: view, controllers: map[string]controllerStatus{}}
}

func (f *planCache) controllersOf(mapping *finalizerMapping) controllerStatus {
	status, ok := f.controllers[mapping.key()]
	if !ok {
		status = controllersOf(f.view, mapping)
		f.controllers[mapping.key()] = status
	}
	return status
}

// owningCSVs names the ClusterServiceVersions (not OLM's copies in other namespaces) that own a CRD.
func (f *planCache) owningCSVs(crdName string) []string {
	if f.crds == nil {
		index := indexCRDs(f.view)
		f.crds = &index
	}
	var names []string
	for _, csv := range f.crds.owners[crdName] {
		names = append(names, "ClusterServiceVersion "+csv.Namespace+"/"+csv.Name)
	}
	return names
}

// Plan implements Rule.
func (r OrphanedFinalizers) Plan(_ context.Context, view *View) []Finding {
	findings := make([]Finding, 0, view.CountTerminating(r.minAge))
	cache := newPlanCache(view)
	cache.findings, cache.since = map[findingKey]Finding{}, newSinceTexts(r.minAge)
	for obj, age := range view.Terminating(r.minAge) {
		if f, ok := r.findingOf(cache, obj, age); ok {
			findings = append(findings, f)
		}
	}
	return findings
}

// findingOf is the finding about obj, if it holds a finding that is not Kubernetes' own: made
// once for each resource and set of finalizers, then given each object and its age.
func (r OrphanedFinalizers) findingOf(cache *planCache, obj *Object, age time.Duration) (Finding, bool) {
	key := findingKey{obj.Resource, strings.Join(obj.Finalizers, ",")}
	template, known := cache.findings[key]
	if !known || obj.Resource.GroupResource() == ClusterServiceVersions.GroupResource() {
		var verdicts []verdict
		for _, f := range obj.Finalizers {
			if !BuiltIn(f) {
				verdicts = append(verdicts, r.decide(cache, obj, f))
			}
		}
		if len(verdicts) == 0 {
			return Finding{}, false
		}
		template = r.finding(verdicts)
		if obj.Resource.GroupResource() != ClusterServiceVersions.GroupResource() {
			cache.findings[key] = template
		}
	}
	f := template
	f.Object = obj.Ref()
	f.Evidence = append(append(make([]string, 0, 1+len(template.Evidence)), cache.since.of(obj, age)), template.Evidence...)
	return f, true
}

func (r OrphanedFinalizers) decide(cache *planCache, obj *Object, finalizer string) verdict {
	v := verdict{finalizer: finalizer}
	if mapping, ok := r.mappings.ownerOf(finalizer, obj.Resource.GroupResource()); ok {
		status := cache.controllersOf(mapping)
		v.evidence = append([]string{fmt.Sprintf("%s: controller mapping %q", finalizer, mapping.key())}, status.evidence...)
		v.owners, v.installer = status.names, status.installer
		switch status.liveness {
		case running:
			v.decision = alive
		case scaledToZero:
			v.decision = scaledDown
		case gone:
			v.decision = orphaned
			v.facts = []Fact{controllersGone(cache.view, mapping)}
		}
	} else {
		v.decision, v.evidence, v.owners, v.installer = r.decideByCRD(cache, obj, finalizer)
		if v.decision == orphaned {
			v.facts = []Fact{r.crdOwnerGone(cache.view, obj, finalizer)}
		}
	}
	if v.decision == orphaned {
		r.classify(&v, obj)
	}
	if v.decision == orphaned && finalizer == csvCleanupFinalizer && obj.Resource.GroupResource() == ClusterServiceVersions.GroupResource() {
		guarded, evidence, known := csvCleanupObjects(cache.view, obj.Namespace, obj.Name)
		v.evidence = append(v.evidence, evidence)
		if !known {
			v.decision = undecided
		}
		v.dependsOn = guarded
	}
	return v
}

// classify decides, for a finalizer whose owner is gone, whether releasing it is safe: knowing
// the owner is gone is not knowing what the finalizer stands for. Only a consequence the catalog
// or the config file names as local or cascades lets it go; one that guards something outside
// the cluster is never released, and one nobody classified is reported with the config entry
// that would classify it.
func (r OrphanedFinalizers) classify(v *verdict, obj *Object) {
	gr := obj.Resource.GroupResource()
	mapping, known := r.mappings.consequenceOf(v.finalizer, gr)
	if !known {
		v.decision, v.facts = unclassified, nil
		v.evidence = append(v.evidence, fmt.Sprintf("%s: neither the catalog nor the config file says what it stands for: its consequence is unknown, so it is not released", v.finalizer))
		v.remedy = classifyEntry(v.finalizer, gr)
		return
	}
	where := "config file"
	if s := mapping.Source; s != nil {
		where = fmt.Sprintf("catalog, checked against %s %s", s.Repository, s.Release)
	}
	v.standsFor, v.remedy = mapping.StandsFor, mapping.Remedy
	if mapping.Consequence == ConsequenceGuards {
		v.decision, v.facts = protected, nil
		v.evidence = append(v.evidence, fmt.Sprintf("%s guards %s (%s): never released", v.finalizer, cmp.Or(mapping.StandsFor, "something outside the cluster"), where))
		return
	}
	v.evidence = append(v.evidence, fmt.Sprintf("%s stands for %s: consequence %s (%s)", v.finalizer, cmp.Or(mapping.StandsFor, "in-cluster cleanup"), mapping.Consequence, where))
}

// classifyEntry is the config file entry that says a finalizer on objects of gr cleans up inside
// the cluster only: what an admin who checked it adds to let the sweeper release it.
func classifyEntry(finalizer string, gr schema.GroupResource) string {
	return fmt.Sprintf(`if it cleans up only inside the cluster, say so in the config file: finalizers: [{pattern: %q, resources: [%q], consequence: local}]`, finalizer, gr.String())
}

// decideByCRD asks the object's CRD who installed it, and whether that installer is still there:
// a ClusterServiceVersion that owns the CRD, or an installed Helm release, proves it alive; Helm
// ownership metadata, if there is any, decides the rest; OLM labels only when there is none. It
// returns the decision, the evidence, who keeps the finalizer alive, and the Helm release that
// installed the CRD, if its metadata names one.
func (r OrphanedFinalizers) decideByCRD(cache *planCache, obj *Object, finalizer string) (decision, []string, []string, *Installer) {
	view := cache.view
	noMapping := fmt.Sprintf("%s: no controller mapping matches", finalizer)
	group := obj.Resource.Group
	crdName := obj.Resource.Resource + "." + group
	crd, ok := view.Get(CustomResourceDefinitions.GroupResource(), "", crdName)
	if group == "" || !ok {
		return undecided, []string{noMapping, fmt.Sprintf("%s is not a custom resource: no CRD to ask", obj.Resource)}, nil, nil
	}
	domain, _, _ := strings.Cut(finalizer, "/")
	if !sameDomain(domain, group) {
		return undecided, []string{noMapping, fmt.Sprintf("%s is not in the API domain of CRD %s: it may belong to another controller", finalizer, crdName)}, nil, nil
	}
	evidence := []string{noMapping}

	csvsListed := view.Observed(ClusterServiceVersions.GroupResource(), "")
	if csvsListed {
		if owners := cache.owningCSVs(crdName); len(owners) > 0 {
			return alive, append(evidence, fmt.Sprintf("CRD %s is owned by %s (spec.customresourcedefinitions.owned)", crdName, strings.Join(owners, ", "))), owners, nil
		}
		evidence = append(evidence, fmt.Sprintf("CRD %s has no owning ClusterServiceVersion", crdName))
	} else {
		evidence = append(evidence, "ClusterServiceVersions were not all listed: cannot tell whether one owns CRD "+crdName)
	}

	if releaseNamespace, release, ok := helmOwner(crd); ok {
		state, helmEvidence := helmRelease(view, releaseNamespace, release, r.args.HelmSQLStorage)
		evidence = append(evidence, fmt.Sprintf("CRD %s belongs to Helm release %s/%s (meta.helm.sh annotations)", crdName, releaseNamespace, release), helmEvidence)
		installer := &Installer{Kind: HelmReleaseKind, Namespace: releaseNamespace, Name: release}
		switch {
		case state == helmInstalled:
			return alive, evidence, []string{fmt.Sprintf("Helm release %s/%s", releaseNamespace, release)}, installer
		case state == helmUninstalled && csvsListed:
			return orphaned, evidence, nil, installer
		}
		return undecided, evidence, nil, installer
	}
	if !csvsListed {
		return undecided, evidence, nil, nil
	}
	if label, ok := olmLabel(crd); ok {
		return orphaned, append(evidence, fmt.Sprintf("CRD %s was installed by OLM (label %s) and has no Helm ownership metadata", crdName, label)), nil, nil
	}
	return undecided, append(evidence, fmt.Sprintf("CRD %s has no OLM labels and no Helm ownership metadata", crdName)), nil, nil
}

// crdOwnerGone is the fact that the installer of obj's CRD is gone: read again, the CRD, every
// ClusterServiceVersion and the records of the Helm release the CRD named say the same. A CRD
// whose Helm metadata changed meanwhile does not.
func (r OrphanedFinalizers) crdOwnerGone(view *View, obj *Object, finalizer string) Fact {
	crdName := obj.Resource.Resource + "." + obj.Resource.Group
	reads := []Read{
		{Resource: CustomResourceDefinitions.GroupResource(), Name: crdName},
		{Resource: ClusterServiceVersions.GroupResource(), Fields: csvCRDFields},
	}
	var planned helmMetadata
	if crd, ok := view.Get(CustomResourceDefinitions.GroupResource(), "", crdName); ok {
		planned = helmMetadataOf(crd)
		if planned.ok {
			reads = append(reads, helmReads(planned.namespace, planned.release)...)
		}
	}
	return factOf{
		key:   "installer gone of CRD " + crdName + " for " + finalizer,
		reads: reads,
		holds: func(view *View) (bool, string) {
			if crd, ok := view.Get(CustomResourceDefinitions.GroupResource(), "", crdName); ok && helmMetadataOf(crd) != planned {
				return false, fmt.Sprintf("re-checked live: CRD %s changed its Helm ownership metadata", crdName)
			}
			decision, evidence, _, _ := r.decideByCRD(newPlanCache(view), obj, finalizer)
			if decision == orphaned {
				return true, "re-checked live: " + evidence[len(evidence)-1]
			}
			return false, "re-checked live: " + strings.Join(evidence[1:], "; ")
		},
	}
}

// sameDomain reports whether a finalizer's domain and an API group are the same DNS name or one
// is a subdomain of the other: syslogngconfig.logging.banzaicloud.io and logging.banzaicloud.io.
func sameDomain(a, b string) bool {
	return a == b || strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a)
}

// olmLabel returns the first (in order) label by which OLM marks what it installed.
func olmLabel(obj *Object) (string, bool) {
	for _, key := range slices.Sorted(maps.Keys(obj.Labels)) {
		if strings.HasPrefix(key, "operators.coreos.com/") || key == "olm.owner" || key == "olm.managed" {
			return key, true
		}
	}
	return "", false
}

// finding is what the verdicts about an object's finalizers make of it, but for the object and
// the evidence of how long it has been terminating.
func (r OrphanedFinalizers) finding(verdicts []verdict) Finding {
	var f Finding
	byDecision := map[decision][]verdict{}
	var installer *Installer // the first the evidence names, whichever verdict's (OperatorGone.Installer)
	for _, v := range verdicts {
		byDecision[v.decision] = append(byDecision[v.decision], v)
		f.Evidence = append(f.Evidence, v.evidence...)
		installer = cmp.Or(installer, v.installer)
	}
	if len(byDecision[orphaned])+len(byDecision[protected])+len(byDecision[unclassified]) > 0 {
		// Released or not, its owner is gone: its preflight --drain would have deleted the
		// object while the owner still ran to finalize it.
		f.OperatorGone = &OperatorGone{Installer: installer, Drain: true}
	}
	switch {
	case len(byDecision[orphaned]) > 0:
		release := finalizerNames(byDecision[orphaned])
		f.Severity = SeverityWarning
		f.Reason = "operator gone; releasing " + strings.Join(release, ", ")
		if kept := len(verdicts) - len(release); kept > 0 {
			f.Reason += fmt.Sprintf(" (keeping %d other finalizers)", kept)
		}
		f.Action = RemoveFinalizers{Finalizers: release}
		for _, v := range byDecision[orphaned] {
			f.DependsOn = append(f.DependsOn, v.dependsOn...)
			f.Facts = append(f.Facts, v.facts...)
		}
	case len(byDecision[protected]) > 0:
		f.Severity = SeverityWarning
		var parts []string
		for _, v := range byDecision[protected] {
			parts = append(parts, fmt.Sprintf("%s guards %s: %s", v.finalizer, v.standsFor, v.remedy))
		}
		f.Reason = "operator gone, but not released: " + strings.Join(parts, "; ")
	case len(byDecision[unclassified]) > 0:
		f.Severity = SeverityWarning
		var parts []string
		for _, v := range byDecision[unclassified] {
			parts = append(parts, v.remedy)
		}
		f.Reason = fmt.Sprintf("operator gone, but what %s stands for is unknown: not released; %s",
			strings.Join(finalizerNames(byDecision[unclassified]), ", "), strings.Join(parts, "; "))
	case len(byDecision[scaledDown]) > 0:
		f.Severity = SeverityWarning
		f.Reason = fmt.Sprintf("controller scaled to 0; scale it up instead of removing %s: %s",
			strings.Join(finalizerNames(byDecision[scaledDown]), ", "), strings.Join(ownerNames(byDecision[scaledDown]), ", "))
	case len(byDecision[alive]) > 0:
		f.Severity = SeverityInfo
		f.Reason = fmt.Sprintf("owner still present, it will release %s: %s",
			strings.Join(finalizerNames(byDecision[alive]), ", "), strings.Join(ownerNames(byDecision[alive]), ", "))
		for _, name := range finalizerNames(byDecision[alive]) {
			if cause := knownCause(name); cause != "" {
				// Stuck past --min-terminating-age with its controller running: a known bug.
				f.Severity = SeverityWarning
				f.Evidence = append(f.Evidence, cause)
			}
		}
	default:
		f.Severity = SeverityInfo
		f.Reason = fmt.Sprintf("owner of %s unknown; not touched", strings.Join(finalizerNames(verdicts), ", "))
	}
	return f
}

func finalizerNames(verdicts []verdict) []string {
	names := make([]string, 0, len(verdicts))
	for _, v := range verdicts {
		names = append(names, v.finalizer)
	}
	return names
}

// ownerNames lists, once each, who keeps the verdicts' finalizers.
func ownerNames(verdicts []verdict) []string {
	var names []string
	for _, v := range verdicts {
		for _, o := range v.owners {
			if !slices.Contains(names, o) {
				names = append(names, o)
			}
		}
	}
	return names
}
