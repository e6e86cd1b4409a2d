package sweeper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Confirmer checks, live, the facts an action rests on, right before the write: the way the
// garbage collector re-reads an owner before it deletes a dependent. A fact checked, or a read
// sent, less than MaxAge ago is not checked or sent again: findings that rest on the same fact in
// a row share one check.
type Confirmer struct {
	// Observed is the view the rules planned from: it says which resources were walked.
	Observed *rules.View
	Clients  *Clients
	// Clock is the server's.
	Clock    clock.PassiveClock
	PageSize int64
	// MaxAge is how long a check is good for; 0 means 5 seconds.
	MaxAge time.Duration

	reads map[string]readResult
	facts map[string]factResult
}

type readResult struct {
	at      time.Time
	objects []*rules.Object
	// resource is what was read; served is false when the server does not serve it (none exist).
	resource rules.Resource
	served   bool
	err      error
}

type factResult struct {
	at       time.Time
	holds    bool
	evidence string
}

// Confirm checks facts, in order, and returns whether they all still hold and a line of evidence
// for each checked. It stops at the first that does not hold, or cannot be checked (a read
// failed, or its resource was not walked).
func (c *Confirmer) Confirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	return c.confirm(ctx, facts, c.maxAge())
}

// Reconfirm is Confirm without the checks made before: for an action re-planned because its
// object changed, which says the cluster moved.
func (c *Confirmer) Reconfirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	return c.confirm(ctx, facts, 0)
}

func (c *Confirmer) maxAge() time.Duration {
	if c.MaxAge == 0 {
		return 5 * time.Second
	}
	return c.MaxAge
}

func (c *Confirmer) confirm(ctx context.Context, facts []rules.Fact, maxAge time.Duration) (bool, []string) {
	if c.facts == nil {
		c.facts, c.reads = map[string]factResult{}, map[string]readResult{}
	}
	evidence := make([]string, 0, len(facts))
	for _, fact := range facts {
		res, checked := c.facts[fact.Key()]
		if !checked || c.Clock.Since(res.at) >= maxAge {
			res = c.check(ctx, fact, maxAge)
			c.facts[fact.Key()] = res
		}
		evidence = append(evidence, res.evidence)
		if !res.holds {
			return false, evidence
		}
	}
	return true, evidence
}

// check reads what fact names and asks it whether it still holds, in a view of only what was
// read: every other resource counts as not listed.
func (c *Confirmer) check(ctx context.Context, fact rules.Fact, maxAge time.Duration) factResult {
	now := c.Clock.Now()
	var resources []rules.Resource
	var objects []*rules.Object
	scopes := map[schema.GroupResource][]rules.Read{}
	for _, read := range fact.Reads() {
		res := c.read(ctx, read, maxAge)
		if res.err != nil {
			return factResult{at: now, evidence: fmt.Sprintf("could not re-check live [%s]: %v; not acted on", fact.Key(), res.err)}
		}
		if !res.served {
			continue
		}
		if !slices.Contains(resources, res.resource) {
			resources = append(resources, res.resource)
		}
		scopes[read.Resource] = append(scopes[read.Resource], read)
		objects = append(objects, res.objects...)
	}
	coverage := readCoverage(scopes)
	narrowed := c.Observed.Narrowed(slices.Collect(maps.Keys(scopes)))
	coverage.Unlisted, coverage.UndiscoveredGroups = narrowed.Unlisted, narrowed.UndiscoveredGroups
	holds, evidence := fact.Holds(rules.NewView(c.Clock.Now(), resources, coverage, uniqueObjects(objects)))
	return factResult{at: now, holds: holds, evidence: evidence}
}

// readCoverage says what the reads of each resource hold: a list across all namespaces holds
// every object; lists in some namespaces hold those; reads of single objects hold no more.
func readCoverage(scopes map[schema.GroupResource][]rules.Read) rules.Coverage {
	coverage := rules.Coverage{ListedIn: map[schema.GroupResource][]string{}}
	for gr, reads := range scopes {
		var namespaces []string
		all := false
		for _, read := range reads {
			switch {
			case read.Name != "":
			case read.Namespace == "":
				all = true
			default:
				namespaces = append(namespaces, read.Namespace)
			}
		}
		switch {
		case all:
		case len(namespaces) > 0:
			coverage.ListedIn[gr] = namespaces
		default:
			coverage.Partial = append(coverage.Partial, gr)
		}
	}
	return coverage
}

// uniqueObjects keeps one object per resource and UID: two reads may return the same object.
func uniqueObjects(objects []*rules.Object) []*rules.Object {
	type key struct {
		gr  schema.GroupResource
		uid types.UID
	}
	seen := map[key]bool{}
	return slices.DeleteFunc(objects, func(obj *rules.Object) bool {
		k := key{obj.Resource.GroupResource(), obj.UID}
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

// read sends one read, unless it was sent less than maxAge ago.
func (c *Confirmer) read(ctx context.Context, read rules.Read, maxAge time.Duration) readResult {
	if res, done := c.reads[read.Key()]; done && c.Clock.Since(res.at) < maxAge {
		return res
	}
	res := c.send(ctx, read)
	res.at = c.Clock.Now()
	c.reads[read.Key()] = res
	return res
}

func (c *Confirmer) send(ctx context.Context, read rules.Read) readResult {
	r, listed := c.Observed.Listed(read.Resource)
	switch {
	case !listed && c.Observed.Observed(read.Resource, ""):
		// Not served when the cluster was walked; it may be now (a CRD installed meanwhile).
		var served bool
		var err error
		if r, served, err = c.discover(ctx, read.Resource); err != nil || !served {
			return readResult{err: err}
		}
	case !listed:
		return readResult{err: fmt.Errorf("%s were not walked (filtered out, or their API group not discovered)", read.Resource)}
	}
	// A read by name is a list with a field selector: the walk's list on every resource is all
	// the RBAC a confirmation needs.
	opts := metav1.ListOptions{LabelSelector: read.Selector}
	if read.Name != "" {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", read.Name).String()
	}
	res := readResult{resource: r, served: true}
	task := listTask{resource: r, namespace: read.Namespace, content: read.Fields != nil, fields: read.Fields}
	res.err = eachObject(ctx, c.Clients, c.PageSize, task, opts, func(obj *rules.Object) { res.objects = append(res.objects, obj) })
	return res
}

// discover asks the server, live, whether it serves a resource, and in which version.
func (c *Confirmer) discover(ctx context.Context, gr schema.GroupResource) (rules.Resource, bool, error) {
	groups, err := c.Clients.Discovery.ServerGroupsWithContext(ctx)
	if err != nil {
		return rules.Resource{}, false, fmt.Errorf("discover whether %s are served: %w", gr, err)
	}
	for _, g := range groups.Groups {
		if g.Name != gr.Group {
			continue
		}
		list, err := c.Clients.Discovery.ServerResourcesForGroupVersionWithContext(ctx, g.PreferredVersion.GroupVersion)
		if err != nil {
			return rules.Resource{}, false, fmt.Errorf("discover whether %s are served: %w", gr, err)
		}
		for _, r := range list.APIResources {
			if r.Name == gr.Resource {
				gv := schema.GroupVersion{Group: g.Name, Version: g.PreferredVersion.Version}
				return rules.Resource{GroupVersionResource: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced}, true, nil
			}
		}
	}
	return rules.Resource{}, false, nil
}
