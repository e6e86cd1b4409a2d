package rules

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// FinalizerOwner says which controllers remove the finalizers matching Pattern, and what a
// finalizer stands for: what its controller does before it removes it, and so what releasing it
// loses. It is an entry of the "finalizers" section of the config file, and of the catalog
// (rules/catalog), which adds where it was checked upstream.
type FinalizerOwner struct {
	// Pattern is a glob (path.Match) over finalizer names, such as
	// "*.logging.banzaicloud.io/finalizer".
	Pattern string `json:"pattern"`
	// Resources, if set, restricts the entry to objects of these resources: globs over
	// "<plural>.<group>" ("*.source.toolkit.fluxcd.io"), or "<plural>" for the core group, for
	// finalizers that several controllers share by name (Flux's finalizers.fluxcd.io). The catalog
	// names them always: they are what the RBAC to release a finalizer is derived from.
	Resources []string `json:"resources,omitempty"`
	// Controllers are the workloads that serve the finalizers; any one of them running is enough.
	// A config entry without controllers only classifies a finalizer (its Consequence): whether
	// its owner is gone is then decided by the object's CRD.
	Controllers []Controller `json:"controllers,omitempty"`
	// Leases are globs over the names of the leader-election Leases (coordination.k8s.io, any
	// namespace) the controller holds: one renewed recently proves it alive, wherever it runs.
	Leases []string `json:"leases,omitempty"`
	// Consequence says what releasing the finalizer without its controller loses: local,
	// cascades or guards. Empty is unknown: the finalizer is never released.
	Consequence Consequence `json:"consequence,omitempty"`
	// StandsFor says what the controller does before it removes the finalizer: what a release
	// skips ("the EC2 instance the NodeClaim launched"; "the status of the Prometheus").
	StandsFor string `json:"stands-for,omitempty"`
	// Remedy says what to do before a guarded finalizer may be removed by hand ("terminate the
	// instance named in status.providerID, then remove the finalizer").
	Remedy string `json:"remedy,omitempty"`
	// Source is where the entry was checked upstream; the catalog's entries name it.
	Source *Source `json:"source,omitempty"`

	// Protect is the former spelling of consequence: guards.
	Protect bool `json:"protect,omitempty"`
	// Guards is the former spelling of stands-for, with protect: true.
	Guards string `json:"guards,omitempty"`
	// Cascades is the former spelling of consequence: cascades, with what it stands for.
	Cascades string `json:"cascades,omitempty"`
}

// Consequence is what releasing a finalizer without its controller loses.
type Consequence string

const (
	// ConsequenceUnknown: nobody said. Such a finalizer is reported, never released.
	ConsequenceUnknown Consequence = ""
	// ConsequenceLocal: the controller cleans up inside the cluster only (status, caches, its own
	// objects the garbage collector would take anyway): released once its controller is gone.
	ConsequenceLocal Consequence = "local"
	// ConsequenceCascades: the controller deletes what the object deployed (an Argo CD
	// Application's resources, a CSV's operator): released once its controller is gone, and what
	// it deployed is left in place; preflight --drain deletes such objects only with
	// --drain-protected.
	ConsequenceCascades Consequence = "cascades"
	// ConsequenceGuards: the finalizer stands for something outside the cluster, or for data (an
	// instance, a load balancer, a bucket, a DNS record, a backup, a volume): never released.
	ConsequenceGuards Consequence = "guards"
)

// Releasable says whether a finalizer of this consequence may be released once its controller
// is proven gone.
func (c Consequence) Releasable() bool {
	return c == ConsequenceLocal || c == ConsequenceCascades
}

// Source is where a catalog entry was checked: a repository, a release of it, and the files that
// add and remove the finalizer, name the workload and elect the leader.
type Source struct {
	// Repository is the upstream repository, as "github.com/<owner>/<name>".
	Repository string `json:"repository"`
	// Release is the tag the files were read at.
	Release string `json:"release"`
	// Files are paths in the repository at that release.
	Files []string `json:"files"`
}

// Controller identifies workloads by kind, and by name, label selector or container image, in one
// namespace or any.
type Controller struct {
	// Kind is Deployment, StatefulSet or DaemonSet.
	Kind string `json:"kind"`
	// Namespace restricts the match to one namespace; empty means any.
	Namespace string `json:"namespace,omitempty"`
	// Name matches the workload's name. Exactly one of Name, Selector and Image is set.
	Name string `json:"name,omitempty"`
	// Selector is a label selector ("app.kubernetes.io/name=logging-operator") on the workload.
	Selector string `json:"selector,omitempty"`
	// Image is a glob over the repository of a container's image (no tag or digest), or over
	// the part of it after any "/": "*/logging-operator" matches
	// ghcr.io/kube-logging/logging-operator:5.0.0, "*logging-operator" a mirrored
	// rancher/mirrored-kube-logging-logging-operator as well.
	Image string `json:"image,omitempty"`
}

// workloads are the kinds a Controller can be, by Kind.
var workloads = resourcesByKind(Deployments, StatefulSets, DaemonSets)

// FinalizerMappings are the controller mappings of a run, validated and compiled once: the
// configured ones first, in their order, then the shipped ones whose pattern is not configured.
type FinalizerMappings struct {
	mappings []finalizerMapping
}

type finalizerMapping struct {
	FinalizerOwner
	controllers []controllerMatcher
	// id is the mapping's key, made once.
	id string
}

// controllerMatcher is a Controller with its kind resolved and its selector parsed.
type controllerMatcher struct {
	Controller
	resource Resource
	selector labels.Selector // nil unless matched by selector
}

// NewFinalizerMappings validates the configured mappings, naming each bad one by its config key
// (finalizers[i].…), and merges them with the catalog's: a configured mapping replaces the
// catalog's of the same pattern and resources, and keeps its consequence when it names none; a
// catalog entry that guards stays guards, and a configured one may only add controllers and
// Leases to it: what guards something outside the cluster cannot be configured away.
func NewFinalizerMappings(configured []FinalizerOwner) (FinalizerMappings, error) {
	shipped, err := DefaultFinalizerOwners()
	if err != nil {
		return FinalizerMappings{}, err
	}
	var m FinalizerMappings
	var errs []error
	shippedKeys := make(map[string]int, len(shipped)) // index in shipped, by key
	for i, owner := range shipped {
		shippedKeys[keyOf(owner)] = i
	}
	configuredKeys := map[string]bool{}
	for i, owner := range configured {
		key := fmt.Sprintf("finalizers[%d]", i)
		owner, err := normalized(key, owner)
		errs = append(errs, err)
		if j, ok := shippedKeys[keyOf(owner)]; ok {
			owner = configuredOver(shipped[j], owner)
		}
		configuredKeys[keyOf(owner)] = true
		compiled, err := compileMapping(key, owner)
		errs = append(errs, err)
		m.mappings = append(m.mappings, compiled)
	}
	for _, owner := range shipped {
		if configuredKeys[keyOf(owner)] {
			continue
		}
		compiled, err := compileMapping("catalog entry "+keyOf(owner), owner)
		errs = append(errs, err)
		m.mappings = append(m.mappings, compiled)
	}
	if err := errors.Join(errs...); err != nil {
		return FinalizerMappings{}, err
	}
	return m, nil
}

// normalized is a configured mapping in today's spelling: protect and guards become
// consequence: guards and stands-for, cascades becomes consequence: cascades.
func normalized(key string, owner FinalizerOwner) (FinalizerOwner, error) {
	var errs []error
	set := func(c Consequence, standsFor, field string) {
		if owner.Consequence != ConsequenceUnknown && owner.Consequence != c {
			errs = append(errs, fmt.Errorf("%s (%s): %s contradicts consequence: %s", key, owner.Pattern, field, owner.Consequence))
			return
		}
		owner.Consequence = c
		owner.StandsFor = cmp.Or(owner.StandsFor, standsFor)
	}
	if owner.Guards != "" && !owner.Protect {
		errs = append(errs, fmt.Errorf("%s (%s): guards is set without protect: true", key, owner.Pattern))
	}
	if owner.Protect {
		set(ConsequenceGuards, owner.Guards, "protect: true")
	}
	if owner.Cascades != "" {
		set(ConsequenceCascades, owner.Cascades, "cascades")
	}
	owner.Protect, owner.Guards, owner.Cascades = false, "", ""
	return owner, errors.Join(errs...)
}

// configuredOver is a catalog entry as a configured mapping of the same pattern and resources
// makes it. A guarding entry stays guarding: the configured controllers and Leases are added,
// checked first, and it may say more precisely what it guards. Any other is replaced, but keeps
// what it stands for when the configured one does not say.
func configuredOver(shipped, configured FinalizerOwner) FinalizerOwner {
	if shipped.Consequence == ConsequenceGuards {
		merged := shipped
		merged.Controllers = append(slices.Clone(configured.Controllers), shipped.Controllers...)
		merged.Leases = append(slices.Clone(configured.Leases), shipped.Leases...)
		merged.StandsFor = cmp.Or(configured.StandsFor, shipped.StandsFor)
		merged.Remedy = cmp.Or(configured.Remedy, shipped.Remedy)
		return merged
	}
	if configured.Consequence == ConsequenceUnknown {
		configured.Consequence, configured.StandsFor, configured.Remedy, configured.Source = shipped.Consequence, shipped.StandsFor, shipped.Remedy, shipped.Source
	}
	if len(configured.Controllers) == 0 {
		configured.Controllers, configured.Leases = shipped.Controllers, shipped.Leases
	}
	return configured
}

// keyOf identifies a mapping: its pattern, and the resources it is restricted to.
func keyOf(owner FinalizerOwner) string {
	if len(owner.Resources) == 0 {
		return owner.Pattern
	}
	return owner.Pattern + " on " + strings.Join(owner.Resources, ", ")
}

func compileMapping(key string, owner FinalizerOwner) (finalizerMapping, error) {
	m := finalizerMapping{FinalizerOwner: owner, id: keyOf(owner)}
	if _, err := path.Match(owner.Pattern, ""); err != nil || owner.Pattern == "" {
		return m, fmt.Errorf("%s.pattern %q is not a valid glob", key, owner.Pattern)
	}
	if len(owner.Controllers) == 0 && owner.Consequence == ConsequenceUnknown {
		return m, fmt.Errorf("%s (%s) has neither controllers nor a consequence: name the workloads that remove these finalizers, or what releasing them loses (consequence: local, cascades or guards)", key, owner.Pattern)
	}
	var errs []error
	switch owner.Consequence {
	case ConsequenceUnknown, ConsequenceLocal, ConsequenceCascades, ConsequenceGuards:
	default:
		errs = append(errs, fmt.Errorf("%s.consequence %q is not local, cascades or guards", key, owner.Consequence))
	}
	if owner.Remedy != "" && owner.Consequence != ConsequenceGuards {
		errs = append(errs, fmt.Errorf("%s (%s): remedy is for a finalizer whose consequence is guards", key, owner.Pattern))
	}
	for j, c := range owner.Controllers {
		matcher, err := compileController(fmt.Sprintf("%s.controllers[%d]", key, j), c)
		errs = append(errs, err)
		m.controllers = append(m.controllers, matcher)
	}
	for j, lease := range owner.Leases {
		if _, err := path.Match(lease, ""); err != nil || lease == "" {
			errs = append(errs, fmt.Errorf("%s.leases[%d] %q is not a valid glob", key, j, lease))
		}
	}
	for j, resource := range owner.Resources {
		if _, err := path.Match(resource, ""); err != nil || resource == "" {
			errs = append(errs, fmt.Errorf("%s.resources[%d] %q is not a valid glob", key, j, resource))
		}
	}
	return m, errors.Join(errs...)
}

func compileController(key string, c Controller) (controllerMatcher, error) {
	matcher := controllerMatcher{Controller: c}
	var errs []error
	var ok bool
	if matcher.resource, ok = workloads[c.Kind]; !ok {
		errs = append(errs, fmt.Errorf("%s.kind %q is not Deployment, StatefulSet or DaemonSet", key, c.Kind))
	}
	set := 0
	for _, v := range []string{c.Name, c.Selector, c.Image} {
		if v != "" {
			set++
		}
	}
	switch {
	case set != 1:
		errs = append(errs, fmt.Errorf("%s: set exactly one of name, selector and image", key))
	case c.Selector != "":
		selector, err := labels.Parse(c.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.selector %q: %w", key, c.Selector, err))
		}
		matcher.selector = selector
	case c.Image != "":
		if _, err := path.Match(c.Image, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s.image %q is not a valid glob", key, c.Image))
		}
	}
	return matcher, errors.Join(errs...)
}

// Owners returns the mappings as configured, in the order they are checked.
func (m FinalizerMappings) Owners() []FinalizerOwner {
	owners := make([]FinalizerOwner, 0, len(m.mappings))
	for _, mapping := range m.mappings {
		owners = append(owners, mapping.FinalizerOwner)
	}
	return owners
}

// ownerOf returns the first mapping with controllers whose pattern matches the finalizer on an
// object of resource: who serves it.
func (m FinalizerMappings) ownerOf(finalizer string, resource schema.GroupResource) (*finalizerMapping, bool) {
	for i := range m.mappings {
		if len(m.mappings[i].controllers) > 0 && m.mappings[i].matches(finalizer, resource) {
			return &m.mappings[i], true
		}
	}
	return nil, false
}

// consequenceOf returns the mapping that says what the finalizer on an object of resource stands
// for: the first that guards, so that no mapping checked before it can release what it guards;
// otherwise the first that names a consequence. None: the consequence is unknown.
func (m FinalizerMappings) consequenceOf(finalizer string, resource schema.GroupResource) (*finalizerMapping, bool) {
	var first *finalizerMapping
	for i := range m.mappings {
		mapping := &m.mappings[i]
		if mapping.Consequence == ConsequenceUnknown || !mapping.matches(finalizer, resource) {
			continue
		}
		if mapping.Consequence == ConsequenceGuards {
			return mapping, true
		}
		if first == nil {
			first = mapping
		}
	}
	return first, first != nil
}

// matches reports whether the mapping's pattern matches the finalizer on an object of resource.
func (m *finalizerMapping) matches(finalizer string, resource schema.GroupResource) bool {
	ok, _ := path.Match(m.Pattern, finalizer) // validated
	return ok && m.covers(resource)
}

// covers reports whether the mapping applies to objects of resource.
func (m *finalizerMapping) covers(resource schema.GroupResource) bool {
	return len(m.Resources) == 0 || slices.ContainsFunc(m.Resources, func(glob string) bool {
		ok, _ := path.Match(glob, resource.String()) // validated
		return ok
	})
}

// key identifies the mapping: its pattern, and the resources it is restricted to.
func (m *finalizerMapping) key() string {
	if m.id != "" {
		return m.id
	}
	return keyOf(m.FinalizerOwner)
}

// liveness is what the view says about a finalizer's controllers.
type liveness int

const (
	// unknown: some places a controller could be were not observed, and none of those observed
	// shows it alive.
	unknown liveness = iota
	// gone: no workload matches, no Lease is held: complete negative evidence.
	gone
	// scaledToZero: matching workloads exist, none wants a pod, no Lease is held.
	scaledToZero
	// running: a matching workload wants at least one pod, or is being deleted and may still
	// run, or a Lease of the mapping was renewed recently.
	running
)

// controllerStatus is the liveness of a mapping's controllers, with the facts behind it.
type controllerStatus struct {
	liveness liveness
	evidence []string
	// names are what keeps the mapping alive: "Deployment olm/olm-operator", "Lease ns/name".
	names []string
	// installer is the first controller that matches no workload, as a preflight of its
	// uninstall would take it: the one its evidence names first as gone.
	installer *Installer
}

// controllersOf checks a mapping's controllers against the view. Positive evidence of life wins:
// a matching workload that runs, or a Lease renewed recently. Otherwise a workload scaled to zero
// makes it a warning. Otherwise, only if every place a controller could be was observed, the
// controller is gone; if not, it is unknown.
func controllersOf(view *View, mapping *finalizerMapping) controllerStatus {
	var status controllerStatus
	anyUnknown, anyScaled := false, false
	for _, c := range mapping.controllers {
		if !view.Observed(c.resource.GroupResource(), c.Namespace) {
			anyUnknown = true
			status.evidence = append(status.evidence, fmt.Sprintf("%ss matching %s were not all listed (filters or errors): cannot tell whether the controller runs", c.Kind, c.describe()))
			continue
		}
		matches := c.matches(view)
		if len(matches) == 0 {
			status.evidence = append(status.evidence, fmt.Sprintf("no %s matches %s", c.Kind, c.describe()))
			if status.installer == nil {
				status.installer = c.installer()
			}
			continue
		}
		for _, w := range matches {
			name := fmt.Sprintf("%s %s/%s", c.Kind, w.Namespace, w.Name)
			replicas := desiredReplicas(w)
			switch {
			case w.DeletionTimestamp != nil:
				status.liveness = running
				status.evidence = append(status.evidence, fmt.Sprintf("%s matches %s and is being deleted; it may still be running", name, c.describe()))
			case replicas > 0:
				status.liveness = running
				status.evidence = append(status.evidence, fmt.Sprintf("%s matches %s and runs (%d desired replicas)", name, c.describe(), replicas))
			default:
				anyScaled = true
				status.evidence = append(status.evidence, fmt.Sprintf("%s matches %s and is scaled to 0", name, c.describe()))
			}
			if !slices.Contains(status.names, name) {
				status.names = append(status.names, name)
			}
		}
	}
	if len(mapping.Leases) > 0 {
		held, observed := leasesOf(view, mapping, &status)
		anyUnknown = anyUnknown || !observed
		if held {
			status.liveness = running
		}
	}
	switch {
	case status.liveness == running:
	case anyScaled:
		status.liveness = scaledToZero
	case anyUnknown:
		status.liveness = unknown
	default:
		status.liveness = gone
	}
	return status
}

// leasesOf adds to status what the mapping's Leases say: whether one is held (renewed within
// max(3 × its duration, 2m) of the view's time), and whether every Lease was observed.
func leasesOf(view *View, mapping *finalizerMapping, status *controllerStatus) (held, observed bool) {
	globs := strings.Join(mapping.Leases, ", ")
	if !view.Observed(Leases.GroupResource(), "") {
		status.evidence = append(status.evidence, fmt.Sprintf("Leases were not all listed (filters or errors): cannot tell whether %s is held", globs))
		return false, false
	}
	found := false
	for _, lease := range mappingLeases(view, mapping) {
		found = true
		name := fmt.Sprintf("Lease %s/%s", lease.Namespace, lease.Name)
		renewed, ok := leaseRenewTime(lease)
		if !ok {
			status.evidence = append(status.evidence, fmt.Sprintf("%s has never been renewed", name))
			continue
		}
		window := max(3*time.Duration(nestedInt(lease, "spec", "leaseDurationSeconds"))*time.Second, 2*time.Minute)
		age := view.Now().Sub(renewed)
		holder := nestedString(lease, "spec", "holderIdentity")
		switch {
		case holder == "":
			status.evidence = append(status.evidence, fmt.Sprintf("%s is released: no holder", name))
		case age <= window:
			held = true
			status.names = append(status.names, name)
			status.evidence = append(status.evidence, fmt.Sprintf("%s is held by %q, renewed %s ago (within %s): the controller runs", name, holder, duration.HumanDuration(max(age, 0)), window))
		default:
			status.evidence = append(status.evidence, fmt.Sprintf("%s was last renewed %s ago by %q (more than %s): not held", name, duration.HumanDuration(age), holder, window))
		}
	}
	if !found {
		status.evidence = append(status.evidence, "no Lease is named "+globs)
	}
	return held, true
}

// mappingLeases are the Leases whose names a mapping's globs match.
func mappingLeases(view *View, mapping *finalizerMapping) []*Object {
	var leases []*Object
	for _, lease := range view.List(Leases.GroupResource()) {
		if slices.ContainsFunc(mapping.Leases, func(glob string) bool { ok, _ := path.Match(glob, lease.Name); return ok }) {
			leases = append(leases, lease)
		}
	}
	return leases
}

// leaseRenewTime is a Lease's spec.renewTime (a MicroTime), or its acquireTime.
func leaseRenewTime(lease *Object) (time.Time, bool) {
	for _, field := range []string{"renewTime", "acquireTime"} {
		if s := nestedString(lease, "spec", field); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

func (c controllerMatcher) describe() string {
	where := "in any namespace"
	if c.Namespace != "" {
		where = "in namespace " + c.Namespace
	}
	switch {
	case c.Name != "":
		return fmt.Sprintf("name %s %s", c.Name, where)
	case c.Image != "":
		return fmt.Sprintf("image %s %s", c.Image, where)
	}
	return c.Selector + " " + where
}

// installer is the workload the controller is, as far as the mapping names it.
func (c controllerMatcher) installer() *Installer {
	return &Installer{Kind: c.Kind, Namespace: c.Namespace, Name: c.Name, Selector: c.Selector, Image: c.Image}
}

func (c controllerMatcher) matches(view *View) []*Object {
	candidates := view.List(c.resource.GroupResource())
	if c.Namespace != "" {
		candidates = view.InNamespace(c.resource.GroupResource(), c.Namespace)
	}
	var out []*Object
	for _, w := range candidates {
		if c.matchesWorkload(w) {
			out = append(out, w)
		}
	}
	return out
}

// matchesWorkload reports whether the controller is the workload w.
func (c controllerMatcher) matchesWorkload(w *Object) bool {
	if c.resource.GroupResource() != w.Resource.GroupResource() || (c.Namespace != "" && c.Namespace != w.Namespace) {
		return false
	}
	switch {
	case c.Name != "":
		return w.Name == c.Name
	case c.selector != nil:
		return c.selector.Matches(labels.Set(w.Labels))
	}
	return c.Image != "" && slices.ContainsFunc(containerImages(w), func(image string) bool { return imageMatches(c.Image, image) })
}

// containerImages are the images of a workload's pod template.
func containerImages(w *Object) []string {
	var images []string
	for _, field := range []string{"initContainers", "containers"} {
		containers, _, _ := unstructured.NestedSlice(w.Content, "spec", "template", "spec", field)
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok {
				if image, ok := m["image"].(string); ok {
					images = append(images, image)
				}
			}
		}
	}
	return images
}

// imageMatches reports whether glob matches the image's repository, without tag or digest, or
// the part of it after any "/".
func imageMatches(glob, image string) bool {
	repository, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repository, ":"); i > strings.LastIndex(repository, "/") {
		repository = repository[:i] // a tag; a colon before the last slash is a registry's port
	}
	for {
		if ok, _ := path.Match(glob, repository); ok {
			return true
		}
		_, rest, found := strings.Cut(repository, "/")
		if !found {
			return false
		}
		repository = rest
	}
}

// desiredReplicas is how many pods a workload wants: spec.replicas (default 1) for Deployments
// and StatefulSets, status.desiredNumberScheduled for DaemonSets. Without content (the rule did
// not ask for it) a workload counts as wanting one.
func desiredReplicas(w *Object) int64 {
	field := []string{"spec", "replicas"}
	if w.Resource.GroupResource() == DaemonSets.GroupResource() {
		field = []string{"status", "desiredNumberScheduled"}
	}
	n, found, err := unstructured.NestedInt64(w.Content, field...)
	if err != nil || !found {
		return 1
	}
	return n
}

// workloadContent is what controller mappings read of workloads and Leases: how many pods a
// workload wants, its images, and when a Lease was renewed.
func workloadContent() []ContentRequest {
	images := []string{"spec.template.spec.containers", "spec.template.spec.initContainers"}
	return []ContentRequest{
		{Resource: Deployments.GroupResource(), Fields: append([]string{"spec.replicas"}, images...)},
		{Resource: StatefulSets.GroupResource(), Fields: append([]string{"spec.replicas"}, images...)},
		{Resource: DaemonSets.GroupResource(), Fields: append([]string{"status.desiredNumberScheduled"}, images...)},
		{Resource: Leases.GroupResource(), Fields: leaseFields},
	}
}

var leaseFields = []string{"spec.holderIdentity", "spec.leaseDurationSeconds", "spec.renewTime", "spec.acquireTime"}

// controllersGone is the fact that a mapping's controllers are gone: read again, every workload
// that could be one is gone and no Lease is held, and none of the mapping's Leases changed since
// view: a Lease renewed meanwhile is held, whatever its holder's clock says.
func controllersGone(view *View, mapping *finalizerMapping) Fact {
	observed := map[string]string{} // resourceVersions of the mapping's Leases, by namespace/name
	for _, lease := range mappingLeases(view, mapping) {
		observed[lease.Namespace+"/"+lease.Name] = lease.ResourceVersion
	}
	var reads []Read
	for _, req := range workloadContent() {
		needed := slices.ContainsFunc(mapping.controllers, func(c controllerMatcher) bool { return c.resource.GroupResource() == req.Resource })
		if needed || (req.Resource == Leases.GroupResource() && len(mapping.Leases) > 0) {
			reads = append(reads, Read{Resource: req.Resource, Fields: req.Fields})
		}
	}
	return factOf{
		key:   "controllers gone " + mapping.key(),
		reads: reads,
		holds: func(view *View) (bool, string) {
			for _, lease := range mappingLeases(view, mapping) {
				if rv, seen := observed[lease.Namespace+"/"+lease.Name]; (!seen || rv != lease.ResourceVersion) && nestedString(lease, "spec", "holderIdentity") != "" {
					return false, fmt.Sprintf("re-checked live: Lease %s/%s was renewed or taken since the sweep looked: a controller of %q runs", lease.Namespace, lease.Name, mapping.Pattern)
				}
			}
			status := controllersOf(view, mapping)
			if status.liveness == gone {
				return true, fmt.Sprintf("re-checked live: no controller of %q runs or holds a Lease", mapping.Pattern)
			}
			return false, fmt.Sprintf("re-checked live: a controller of %q is there now: %s", mapping.Pattern, strings.Join(status.evidence, "; "))
		},
	}
}

// BuiltIn reports whether Kubernetes itself owns a finalizer: the sweeper never touches those.
func BuiltIn(finalizer string) bool {
	switch finalizer {
	case "kubernetes", "orphan", "foregroundDeletion":
		return true
	}
	domain, _, _ := strings.Cut(finalizer, "/")
	for _, k8s := range []string{"kubernetes.io", "k8s.io"} {
		if domain == k8s || strings.HasSuffix(domain, "."+k8s) {
			return true
		}
	}
	return false
}
