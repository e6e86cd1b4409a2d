package rules

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// FinalizerOwner says which workloads remove the finalizers matching Pattern. It is an entry of
// the "finalizers" section of the config file.
type FinalizerOwner struct {
	// Pattern is a glob (path.Match) over finalizer names, such as
	// "*.logging.banzaicloud.io/finalizer".
	Pattern string `json:"pattern"`
	// Controllers are the workloads that serve the finalizers; any one of them running is enough.
	Controllers []Controller `json:"controllers"`
}

// Controller identifies workloads by kind, and by name or label selector, in one namespace or any.
type Controller struct {
	// Kind is Deployment, StatefulSet or DaemonSet.
	Kind string `json:"kind"`
	// Namespace restricts the match to one namespace; empty means any.
	Namespace string `json:"namespace,omitempty"`
	// Name matches the workload's name. Exactly one of Name and Selector is set.
	Name string `json:"name,omitempty"`
	// Selector is a label selector ("app.kubernetes.io/name=logging-operator") on the workload.
	Selector string `json:"selector,omitempty"`
}

// workloads are the kinds a Controller can be, by Kind.
var workloads = resourcesByKind(Deployments, StatefulSets, DaemonSets)

// DefaultFinalizerOwners are the controller mappings operator-sweeper ships, checked against the
// upstream sources: logging-operator (its chart labels the Deployment
// app.kubernetes.io/name=logging-operator), OLM v0 (olm-operator alone adds and removes
// operators.coreos.com/csv-cleanup) and OLM v1 (catalogd owns ClusterCatalog's
// delete-server-cache, formerly under catalogd.operatorframework.io; operator-controller the
// rest of olm.operatorframework.io). A config file's entries come first, and replace a default of
// the same pattern.
func DefaultFinalizerOwners() []FinalizerOwner {
	olmOperator := Controller{Kind: "Deployment", Name: "olm-operator"}
	catalogd := Controller{Kind: "Deployment", Name: "catalogd-controller-manager"}
	return []FinalizerOwner{
		{Pattern: "*.logging.banzaicloud.io/finalizer", Controllers: []Controller{{Kind: "Deployment", Selector: "app.kubernetes.io/name=logging-operator"}}},
		{Pattern: "operators.coreos.com/csv-cleanup", Controllers: []Controller{olmOperator}},
		// No other OLM v0 finalizer exists today; should one appear, either component may own it.
		{Pattern: "operators.coreos.com/*", Controllers: []Controller{olmOperator, {Kind: "Deployment", Name: "catalog-operator"}}},
		{Pattern: "olm.operatorframework.io/delete-server-cache", Controllers: []Controller{catalogd}},
		{Pattern: "catalogd.operatorframework.io/*", Controllers: []Controller{catalogd}},
		{Pattern: "olm.operatorframework.io/*", Controllers: []Controller{{Kind: "Deployment", Name: "operator-controller-controller-manager"}}},
	}
}

// finalizerResources are the resources the shipped mappings' finalizers are on, which
// orphaned-finalizers patches. A mapping added in the config file for another operator needs its
// resources added to the ClusterRole by hand: finalizer names do not say which kinds carry them.
var finalizerResources = []rbacv1.PolicyRule{
	policyRule("logging.banzaicloud.io", []string{"loggings", "syslogngconfigs", "fluentdconfigs"}, "get", "patch"),
	policyRule(ClusterServiceVersions.Group, []string{ClusterServiceVersions.Resource}, "get", "patch"),
	policyRule("olm.operatorframework.io", []string{"clusterextensions", "clustercatalogs", "clusterobjectsets"}, "get", "patch"),
	policyRule("catalogd.operatorframework.io", []string{"clustercatalogs"}, "get", "patch"),
}

// FinalizerMappings are the controller mappings of a run, validated and compiled once: the
// configured ones first, in their order, then the shipped ones whose pattern is not configured.
type FinalizerMappings struct {
	mappings []finalizerMapping
}

type finalizerMapping struct {
	FinalizerOwner
	controllers []controllerMatcher
}

// controllerMatcher is a Controller with its kind resolved and its selector parsed.
type controllerMatcher struct {
	Controller
	resource Resource
	selector labels.Selector // nil when matched by name
}

// NewFinalizerMappings validates the configured mappings, naming each bad one by its config key
// (finalizers[i].…), and merges them with the shipped ones.
func NewFinalizerMappings(configured []FinalizerOwner) (FinalizerMappings, error) {
	var m FinalizerMappings
	var errs []error
	for i, owner := range configured {
		compiled, err := compileMapping(fmt.Sprintf("finalizers[%d]", i), owner)
		errs = append(errs, err)
		m.mappings = append(m.mappings, compiled)
	}
	for i, owner := range DefaultFinalizerOwners() {
		if slices.ContainsFunc(configured, func(c FinalizerOwner) bool { return c.Pattern == owner.Pattern }) {
			continue
		}
		compiled, err := compileMapping(fmt.Sprintf("shipped mapping %d", i), owner)
		errs = append(errs, err)
		m.mappings = append(m.mappings, compiled)
	}
	if err := errors.Join(errs...); err != nil {
		return FinalizerMappings{}, err
	}
	return m, nil
}

func compileMapping(key string, owner FinalizerOwner) (finalizerMapping, error) {
	m := finalizerMapping{FinalizerOwner: owner}
	if _, err := path.Match(owner.Pattern, ""); err != nil || owner.Pattern == "" {
		return m, fmt.Errorf("%s.pattern %q is not a valid glob", key, owner.Pattern)
	}
	if len(owner.Controllers) == 0 {
		return m, fmt.Errorf("%s (%s) has no controllers: name at least one workload that removes these finalizers", key, owner.Pattern)
	}
	var errs []error
	for j, c := range owner.Controllers {
		key := fmt.Sprintf("%s.controllers[%d]", key, j)
		matcher := controllerMatcher{Controller: c}
		var ok bool
		if matcher.resource, ok = workloads[c.Kind]; !ok {
			errs = append(errs, fmt.Errorf("%s.kind %q is not Deployment, StatefulSet or DaemonSet", key, c.Kind))
		}
		if (c.Name == "") == (c.Selector == "") {
			errs = append(errs, fmt.Errorf("%s: set exactly one of name and selector", key))
		} else if c.Selector != "" {
			selector, err := labels.Parse(c.Selector)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.selector %q: %w", key, c.Selector, err))
			}
			matcher.selector = selector
		}
		m.controllers = append(m.controllers, matcher)
	}
	return m, errors.Join(errs...)
}

// Owners returns the mappings as configured, in the order they are checked.
func (m FinalizerMappings) Owners() []FinalizerOwner {
	owners := make([]FinalizerOwner, 0, len(m.mappings))
	for _, mapping := range m.mappings {
		owners = append(owners, mapping.FinalizerOwner)
	}
	return owners
}

// ownerOf returns the first mapping whose pattern matches the finalizer.
func (m FinalizerMappings) ownerOf(finalizer string) (*finalizerMapping, bool) {
	for i := range m.mappings {
		if ok, _ := path.Match(m.mappings[i].Pattern, finalizer); ok { // validated
			return &m.mappings[i], true
		}
	}
	return nil, false
}

// liveness is what the view says about a finalizer's controllers.
type liveness int

const (
	// unknown: some workloads that could be the controller were not observed.
	unknown liveness = iota
	// gone: no workload matches.
	gone
	// scaledToZero: matching workloads exist, none wants a pod.
	scaledToZero
	// running: a matching workload wants at least one pod, or is being deleted and may still run.
	running
)

// controllerStatus is the liveness of a mapping's controllers, with the facts behind it.
type controllerStatus struct {
	liveness liveness
	evidence []string
	// names are the matching workloads, "Deployment olm/olm-operator".
	names []string
}

// controllersOf checks a mapping's controllers against the view: any running one makes the
// finalizer alive; otherwise any scaled to zero makes it a warning; otherwise, if every place a
// controller could be was observed, the controller is gone.
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
			continue
		}
		for _, w := range matches {
			name := fmt.Sprintf("%s %s/%s", c.Kind, w.Namespace, w.Name)
			status.names = append(status.names, name)
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

func (c controllerMatcher) describe() string {
	where := "in any namespace"
	if c.Namespace != "" {
		where = "in namespace " + c.Namespace
	}
	if c.Name != "" {
		return fmt.Sprintf("name %s %s", c.Name, where)
	}
	return c.Selector + " " + where
}

func (c controllerMatcher) matches(view *View) []*Object {
	candidates := view.List(c.resource.GroupResource())
	if c.Namespace != "" {
		candidates = view.InNamespace(c.resource.GroupResource(), c.Namespace)
	}
	var out []*Object
	for _, w := range candidates {
		if (c.selector == nil && w.Name == c.Name) || (c.selector != nil && c.selector.Matches(labels.Set(w.Labels))) {
			out = append(out, w)
		}
	}
	return out
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

// workloadContent is what controller mappings read of workloads: how many pods they want.
func workloadContent() []ContentRequest {
	return []ContentRequest{
		{Resource: Deployments.GroupResource(), Fields: []string{"spec.replicas"}},
		{Resource: StatefulSets.GroupResource(), Fields: []string{"spec.replicas"}},
		{Resource: DaemonSets.GroupResource(), Fields: []string{"status.desiredNumberScheduled"}},
	}
}

// builtIn reports whether Kubernetes itself owns a finalizer: the sweeper never touches those.
func builtIn(finalizer string) bool {
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
