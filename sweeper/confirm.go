package sweeper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Confirmer checks, live, the facts an action rests on, right before the write: the way the
// garbage collector re-reads an owner before it deletes a dependent. A fact that can change back
// (an object absent by name, a controller gone, a node lost) is read again for every check:
// nothing holds it from one check to the next. Only a fact that cannot change back once it holds
// (an object of a UID being deleted or gone: rules.Lasting) is kept for the rest of the run, as
// the garbage collector keeps an owner's UID known absent. Reads are shared by the facts of one
// check only, and dropped after it: one action's (Confirm), or one batch's, whose writes are sent
// right after it (ConfirmBatch). It is safe for concurrent use.
type Confirmer struct {
	// Observed is the view the rules planned from: it says which resources were walked, and which
	// annotations objects keep.
	Observed *rules.View
	Clients  *Clients
	// Clock is the server's.
	Clock    clock.PassiveClock
	PageSize int64

	mu sync.Mutex
	// lasting are the facts that held and cannot change back, by key, with their evidence.
	lasting map[string]string
}

// Confirm checks facts, in order, and returns whether they all still hold and a line of evidence
// for each checked. It stops at the first that does not hold, or cannot be checked (a read
// failed, or its resource was not walked).
func (c *Confirmer) Confirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	return c.newCheck().confirm(ctx, facts)
}

// Reconfirm is Confirm, for an action re-planned because its object changed.
func (c *Confirmer) Reconfirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	return c.Confirm(ctx, facts)
}

// Confirmation is whether the facts of one action hold, and the evidence of each checked.
type Confirmation struct {
	Holds    bool
	Evidence []string
}

// ConfirmBatch is Confirm for the actions of a batch, whose writes are sent right after it: a
// fact several rest on, or a read several facts need, is checked or sent once.
func (c *Confirmer) ConfirmBatch(ctx context.Context, facts [][]rules.Fact) []Confirmation {
	check := c.newCheck()
	out := make([]Confirmation, len(facts))
	for i, f := range facts {
		out[i].Holds, out[i].Evidence = check.confirm(ctx, f)
	}
	return out
}

// aCheck is one check: its reads, and the facts it judged, by key.
type aCheck struct {
	c      *Confirmer
	reads  map[string]readResult
	judged map[string]judged
}

type judged struct {
	holds bool
	line  string
}

func (c *Confirmer) newCheck() *aCheck {
	return &aCheck{c: c, reads: map[string]readResult{}, judged: map[string]judged{}}
}

func (k *aCheck) confirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	evidence := make([]string, 0, len(facts))
	for _, fact := range facts {
		key := fact.Key()
		if line, known := k.c.lastingFact(key); known {
			evidence = append(evidence, line)
			continue
		}
		j, done := k.judged[key]
		if !done {
			j.holds, j.line = k.c.check(ctx, fact, k.reads)
			k.judged[key] = j
		}
		evidence = append(evidence, j.line)
		if !j.holds {
			return false, evidence
		}
		if lasting, ok := fact.(rules.Lasting); ok && lasting.Lasting() {
			k.c.keepLasting(key, j.line)
		}
	}
	return true, evidence
}

func (c *Confirmer) lastingFact(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line, ok := c.lasting[key]
	return line, ok
}

func (c *Confirmer) keepLasting(key, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lasting == nil {
		c.lasting = map[string]string{}
	}
	c.lasting[key] = line
}

type readResult struct {
	objects []*rules.Object
	// resource is what was read; served is false when the server does not serve it (none exist).
	resource rules.Resource
	served   bool
	err      error
}

// check reads what fact names (each read once per Confirm: reads holds those already sent) and
// asks it whether it still holds, in a view of only what was read: every other resource counts as
// not listed.
func (c *Confirmer) check(ctx context.Context, fact rules.Fact, reads map[string]readResult) (bool, string) {
	var resources []rules.Resource
	var objects []*rules.Object
	scopes := map[schema.GroupResource][]rules.Read{}
	for _, read := range fact.Reads() {
		res, sent := reads[read.Key()]
		if !sent {
			res = c.send(ctx, read)
			reads[read.Key()] = res
		}
		if res.err != nil {
			return false, fmt.Sprintf("could not re-check live [%s]: %v; not acted on", fact.Key(), res.err)
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
	coverage.KeptAnnotations = c.Observed.KeptAnnotations()
	return fact.Holds(rules.NewView(c.Clock.Now(), resources, coverage, uniqueObjects(objects)))
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
	// Objects keep the annotations the view's kept: the rules read no others.
	task := listTask{resource: r, namespace: read.Namespace, content: read.Fields != nil, fields: read.Fields, annotations: c.Observed.KeptAnnotations()}
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
