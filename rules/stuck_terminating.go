package rules

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
)

// StuckTerminating answers the admin's first question, "what is stuck?": every object whose
// deletion has been pending for longer than --min-terminating-age, with the finalizers it is waiting on. A
// Namespace waits on its contents instead, so for one the finding counts what is left in it. The
// rule only reports; deciding whether a finalizer may be released is the job of other rules.
type StuckTerminating struct {
	minAge time.Duration
}

// StuckTerminatingName is the name of rule stuck-terminating.
const StuckTerminatingName = "stuck-terminating"

// StuckTerminatingArgs are the arguments of stuck-terminating: none but enabled. Its threshold
// is --min-terminating-age.
type StuckTerminatingArgs struct{}

// NewStuckTerminating builds stuck-terminating.
func NewStuckTerminating(_ StuckTerminatingArgs, settings Settings) (StuckTerminating, error) {
	return StuckTerminating{minAge: settings.MinTerminatingAge}, nil
}

// Name implements Rule.
func (StuckTerminating) Name() string { return StuckTerminatingName }

// Plan implements Rule.
func (r StuckTerminating) Plan(_ context.Context, view *View) []Finding {
	var findings []Finding
	var contents map[string]namespaceContents // counted once, on the first stuck namespace
	for obj, age := range view.Terminating(r.minAge) {
		waitingOn := "waiting on " + strings.Join(obj.Finalizers, ", ")
		evidence := []string{terminatingSince(obj, age, r.minAge), "finalizers: " + strings.Join(obj.Finalizers, ", ")}
		if len(obj.Finalizers) == 0 {
			waitingOn = "no finalizers"
			evidence[1] = "no finalizers in metadata"
		}
		if obj.DeletionGracePeriodSeconds != nil {
			evidence = append(evidence, fmt.Sprintf("deletionGracePeriodSeconds %d", *obj.DeletionGracePeriodSeconds))
		}
		if obj.Resource.GroupResource() == Namespaces.GroupResource() {
			if contents == nil {
				contents = countNamespaceContents(view)
			}
			c := contents[obj.Name]
			atLeast, its := "", "its "
			if !view.Complete(obj.Name) {
				atLeast, its = "at least ", ""
			}
			waitingOn = fmt.Sprintf("waiting on %s%s%d remaining objects (%d terminating)", its, atLeast, c.objects, c.terminating)
			evidence = append(evidence, fmt.Sprintf("%s%d objects remain in the namespace, %d of them terminating", atLeast, c.objects, c.terminating))
			if atLeast != "" {
				evidence = append(evidence, "not every resource was listed in the namespace: there may be more")
			}
			evidence = append(evidence, namespaceConditions(obj)...)
		}
		findings = append(findings, Finding{
			Severity: SeverityInfo,
			Object:   obj.Ref(),
			Reason:   fmt.Sprintf("terminating for %s, %s", duration.HumanDuration(age), waitingOn),
			Evidence: evidence,
		})
	}
	return findings
}

// namespaceConditions are what the namespace controller says keeps a namespace: its conditions
// that are True (NamespaceContentRemaining, NamespaceFinalizersRemaining, a discovery failure).
func namespaceConditions(ns *Object) []string {
	var out []string
	conditions, _, _ := unstructured.NestedSlice(ns.Content, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["status"] == "True" {
			out = append(out, fmt.Sprintf("namespace condition %v: %v", m["type"], m["message"]))
		}
	}
	return out
}

// ReadsContent implements ContentReader: the conditions of Namespaces, which say what keeps one.
func (StuckTerminating) ReadsContent() []ContentRequest {
	return []ContentRequest{{Resource: Namespaces.GroupResource(), Fields: []string{"status.conditions"}}}
}

var _ ContentReader = StuckTerminating{}

// terminatingSince is the evidence of how long an object has been terminating.
func terminatingSince(obj *Object, age, threshold time.Duration) string {
	return fmt.Sprintf("deletionTimestamp %s: terminating for %s (threshold %s)",
		obj.DeletionTimestamp.UTC().Format(time.RFC3339), duration.HumanDuration(age), threshold)
}

type namespaceContents struct{ objects, terminating int }

// countNamespaceContents counts each object once: Events are served by two API groups.
func countNamespaceContents(view *View) map[string]namespaceContents {
	contents := map[string]namespaceContents{}
	seen := map[types.UID]bool{}
	for obj := range view.Objects() {
		if obj.Namespace == "" || seen[obj.UID] {
			continue
		}
		seen[obj.UID] = true
		c := contents[obj.Namespace]
		c.objects++
		if obj.DeletionTimestamp != nil {
			c.terminating++
		}
		contents[obj.Namespace] = c
	}
	return contents
}
