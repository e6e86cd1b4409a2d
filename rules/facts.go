package rules

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Fact is something an action rests on that may change while the sweeper runs: a CSV's absence,
// an operator's death, a node's loss. Right before the first write that rests on it, the engine
// reads again, live, what the fact names, and asks the fact whether it still holds, as the
// garbage collector re-reads an owner before it deletes a dependent. Findings that rest on the
// same fact (the same Key) share one check.
type Fact interface {
	// Key identifies the fact: two facts with the same key are the same fact.
	Key() string
	// Reads are the live requests that check the fact.
	Reads() []Read
	// Holds says whether the fact still holds in view, which holds exactly what Reads returned,
	// at the server's time, with a line of evidence either way.
	Holds(view *View) (bool, string)
}

// Lasting is a Fact that, once it holds, holds for good: an object of a UID being deleted or gone
// (a deletion is never undone, a UID never comes back). The engine checks it once, live, and
// trusts it for the rest of the run; every other fact is read again before each write.
type Lasting interface {
	Lasting() bool
}

// Read is one live request of a check: the object Name of a resource in Namespace, or, without
// Name, the list of its objects in Namespace (all namespaces if empty) that match Selector. In the
// view a fact is checked against, a resource read by name is not Observed, one listed in a
// namespace is Observed there only, and a Selector is taken to select all a fact needs.
type Read struct {
	Resource  schema.GroupResource
	Namespace string
	Name      string
	Selector  string
	// Fields are the paths of the content the check reads (as in ContentRequest); nil reads
	// metadata only.
	Fields []string
}

// Key identifies the read: two reads with the same key are the same request.
func (r Read) Key() string {
	return fmt.Sprintf("%s|%s|%s|%s|%s", r.Resource, r.Namespace, r.Name, r.Selector, strings.Join(r.Fields, ","))
}

// ObjectAbsent is the fact that an object of a resource does not exist: any object of that name
// there now, whatever its UID, breaks it.
type ObjectAbsent struct {
	Resource        Resource
	Namespace, Name string
}

// Key implements Fact.
func (f ObjectAbsent) Key() string { return "absent " + objectKey(f.Resource, f.Namespace, f.Name) }

// Reads implements Fact.
func (f ObjectAbsent) Reads() []Read {
	return []Read{{Resource: f.Resource.GroupResource(), Namespace: f.Namespace, Name: f.Name}}
}

// Holds implements Fact.
func (f ObjectAbsent) Holds(view *View) (bool, string) {
	name := objectName(f.Resource, f.Namespace, f.Name)
	if _, exists := view.Get(f.Resource.GroupResource(), f.Namespace, f.Name); exists {
		return false, fmt.Sprintf("re-checked live: %s exists now", name)
	}
	return true, fmt.Sprintf("re-checked live: %s is still absent", name)
}

// ObjectTerminating is the fact that the object of a UID is being deleted, or is gone.
type ObjectTerminating struct {
	Resource        Resource
	Namespace, Name string
	UID             types.UID
}

// Key implements Fact.
func (f ObjectTerminating) Key() string {
	return "terminating " + objectKey(f.Resource, f.Namespace, f.Name) + " " + string(f.UID)
}

// Reads implements Fact.
func (f ObjectTerminating) Reads() []Read {
	return []Read{{Resource: f.Resource.GroupResource(), Namespace: f.Namespace, Name: f.Name}}
}

// Lasting implements Lasting: a deletion is never undone, and a UID never comes back.
func (ObjectTerminating) Lasting() bool { return true }

// Holds implements Fact.
func (f ObjectTerminating) Holds(view *View) (bool, string) {
	name := objectName(f.Resource, f.Namespace, f.Name)
	obj, exists := view.Get(f.Resource.GroupResource(), f.Namespace, f.Name)
	switch {
	case !exists:
		return true, fmt.Sprintf("re-checked live: %s is gone", name)
	case obj.UID != f.UID:
		return false, fmt.Sprintf("re-checked live: %s was re-created", name)
	case obj.DeletionTimestamp == nil:
		return false, fmt.Sprintf("re-checked live: %s is no longer being deleted", name)
	}
	return true, fmt.Sprintf("re-checked live: %s is still terminating", name)
}

// objectName names an object for a human: "ClusterServiceVersion operators/etcd.v1".
func objectName(r Resource, namespace, name string) string {
	if namespace == "" {
		return r.Kind + " " + name
	}
	return r.Kind + " " + namespace + "/" + name
}

// objectKey names an object unambiguously, by resource and group.
func objectKey(r Resource, namespace, name string) string {
	return r.GroupResource().String() + " " + namespace + "/" + name
}

// factOf is a Fact made of a key, reads and a check: the shape of the facts a rule re-decides
// from fresh reads, with its own decision function.
type factOf struct {
	key   string
	reads []Read
	holds func(view *View) (bool, string)
}

func (f factOf) Key() string                     { return f.key }
func (f factOf) Reads() []Read                   { return slices.Clone(f.reads) }
func (f factOf) Holds(view *View) (bool, string) { return f.holds(view) }
