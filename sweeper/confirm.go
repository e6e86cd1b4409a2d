package sweeper

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// Confirmer checks, live, the facts an action rests on, right before the write: the way the
// garbage collector re-reads an owner before it deletes a dependent. Each distinct fact is checked
// once per run, and each distinct read sent once, shared by every finding that needs it.
type Confirmer struct {
	// Observed is the view the rules planned from: it says which resources were walked.
	Observed *rules.View
	Clients  *Clients
	// Clock is the server's.
	Clock    clock.PassiveClock
	PageSize int64

	reads map[string]readResult
	facts map[string]factResult
}

type readResult struct {
	objects []*rules.Object
	// resource is what was read; served is false when the server does not serve it (none exist).
	resource rules.Resource
	served   bool
	err      error
}

type factResult struct {
	holds    bool
	evidence string
}

// Confirm checks facts, and returns whether they all still hold and a line of evidence for each.
// A fact that cannot be checked (a read failed, or its resource was not walked) does not hold.
func (c *Confirmer) Confirm(ctx context.Context, facts []rules.Fact) (bool, []string) {
	if c.facts == nil {
		c.facts, c.reads = map[string]factResult{}, map[string]readResult{}
	}
	holds := true
	evidence := make([]string, 0, len(facts))
	for _, fact := range facts {
		res, checked := c.facts[fact.Key()]
		if !checked {
			res = c.check(ctx, fact)
			c.facts[fact.Key()] = res
		}
		holds = holds && res.holds
		evidence = append(evidence, res.evidence)
	}
	return holds, evidence
}

// check reads what fact names and asks it whether it still holds.
func (c *Confirmer) check(ctx context.Context, fact rules.Fact) factResult {
	var resources []rules.Resource
	var objects []*rules.Object
	scopes := map[schema.GroupResource][]rules.Read{}
	for _, read := range fact.Reads() {
		res := c.read(ctx, read)
		if res.err != nil {
			return factResult{evidence: fmt.Sprintf("could not re-check live (%v): not acted on", res.err)}
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
	fresh := rules.NewView(c.Clock.Now(), resources, readCoverage(scopes), uniqueObjects(objects))
	holds, evidence := fact.Holds(fresh)
	return factResult{holds: holds, evidence: evidence}
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

// read sends one read, once per run.
func (c *Confirmer) read(ctx context.Context, read rules.Read) readResult {
	if res, done := c.reads[read.Key()]; done {
		return res
	}
	res := c.send(ctx, read)
	c.reads[read.Key()] = res
	return res
}

func (c *Confirmer) send(ctx context.Context, read rules.Read) readResult {
	r, listed := c.Observed.Listed(read.Resource)
	switch {
	case !listed && c.Observed.Observed(read.Resource, ""):
		return readResult{} // not served: there are none
	case !listed:
		return readResult{err: fmt.Errorf("%s were not walked (--%s or --%s)", read.Resource, FlagIncludeResources, FlagExcludeResources)}
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
