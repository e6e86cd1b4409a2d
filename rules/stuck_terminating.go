package rules

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	findings := make([]Finding, 0, view.CountTerminating(r.minAge))
	var contents map[string]namespaceContents // counted once, on the first stuck namespace
	texts := newStuckTexts(r.minAge)
	for obj, age := range view.Terminating(r.minAge) {
		var blockedBy []ObjectRef
		waitingOn := texts.waitingOn(obj)
		evidence := []string{texts.since.of(obj, age), waitingOn.evidence}
		if obj.DeletionGracePeriodSeconds != nil {
			evidence = append(evidence, texts.gracePeriod(*obj.DeletionGracePeriodSeconds))
		}
		reason := texts.reason(obj, age, waitingOn.reason)
		if obj.Resource.GroupResource() == Namespaces.GroupResource() {
			if contents == nil {
				contents = countNamespaceContents(view)
			}
			c := contents[obj.Name]
			atLeast, its := "", "its "
			if !view.Complete(obj.Name) {
				atLeast, its = "at least ", ""
			}
			reason = fmt.Sprintf("terminating for %s, waiting on %s%s%d remaining objects (%d terminating)", duration.HumanDuration(age), its, atLeast, c.objects, c.terminating)
			if len(obj.Finalizers) > 0 {
				// Its own metadata.finalizers (not spec.finalizers' "kubernetes", which the
				// namespace controller removes once it is empty): a controller's, like any object's.
				reason = fmt.Sprintf("terminating for %s, %s of its own, and on %s%s%d remaining objects (%d terminating)",
					duration.HumanDuration(age), waitingOn.reason, its, atLeast, c.objects, c.terminating)
			}
			evidence = append(evidence, fmt.Sprintf("%s%d objects remain in the namespace, %d of them terminating", atLeast, c.objects, c.terminating))
			if atLeast != "" {
				evidence = append(evidence, "not every resource was listed in the namespace: there may be more")
			}
			conditions, apiServices := namespaceConditions(view, obj)
			evidence = append(evidence, conditions...)
			blockedBy = append(apiServices, c.held...)
		}
		findings = append(findings, Finding{
			Symptom:   true,
			Severity:  SeverityInfo,
			Object:    obj.Ref(),
			Reason:    reason,
			Evidence:  evidence,
			BlockedBy: blockedBy,
		})
	}
	return findings
}

// stuckTexts makes the texts of stuck objects once for each set of finalizers and each deletion
// time: thousands of objects an operator left stuck share them.
type stuckTexts struct {
	since   *sinceTexts
	waiting map[string]waitingTexts // by the finalizers, joined
	grace   map[int64]string
	reasons map[reasonKey]string
}

// waitingTexts say what an object waits on: "waiting on <finalizers>" in its reason, and its
// evidence "finalizers: <finalizers>".
type waitingTexts struct{ reason, evidence string }

type reasonKey struct {
	deleted   int64 // Unix seconds
	waitingOn string
}

func newStuckTexts(threshold time.Duration) *stuckTexts {
	return &stuckTexts{since: newSinceTexts(threshold), waiting: map[string]waitingTexts{}, grace: map[int64]string{}, reasons: map[reasonKey]string{}}
}

// waitingOn says what obj waits on.
func (t *stuckTexts) waitingOn(obj *Object) waitingTexts {
	if len(obj.Finalizers) == 0 {
		return waitingTexts{"no finalizers", "no finalizers in metadata"}
	}
	joined := strings.Join(obj.Finalizers, ", ")
	texts, ok := t.waiting[joined]
	if !ok {
		texts = waitingTexts{"waiting on " + joined, "finalizers: " + joined}
		t.waiting[joined] = texts
	}
	return texts
}

func (t *stuckTexts) gracePeriod(seconds int64) string {
	text, ok := t.grace[seconds]
	if !ok {
		text = fmt.Sprintf("deletionGracePeriodSeconds %d", seconds)
		t.grace[seconds] = text
	}
	return text
}

// reason is "terminating for <age>, <waitingOn>".
func (t *stuckTexts) reason(obj *Object, age time.Duration, waitingOn string) string {
	key := reasonKey{obj.DeletionTimestamp.Unix(), waitingOn}
	text, ok := t.reasons[key]
	if !ok {
		text = fmt.Sprintf("terminating for %s, %s", duration.HumanDuration(age), waitingOn)
		t.reasons[key] = text
	}
	return text
}

// namespaceConditions are what the namespace controller says keeps a namespace: its conditions
// that are True (NamespaceContentRemaining and NamespaceFinalizersRemaining, with counts per
// resource and finalizer; NamespaceDeletionDiscoveryFailure and the other failures); and the
// APIServices of the group versions whose discovery failed.
func namespaceConditions(view *View, ns *Object) (evidence []string, apiServices []ObjectRef) {
	conditions, _, _ := unstructured.NestedSlice(ns.Content, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["status"] != "True" {
			continue
		}
		message, _ := m["message"].(string)
		evidence = append(evidence, fmt.Sprintf("namespace condition %v: %s", m["type"], message))
		if m["type"] != "NamespaceDeletionDiscoveryFailure" {
			continue
		}
		for _, gv := range failedGroupVersions(message) {
			name := gv.Version + "." + gv.Group
			if service, ok := view.Get(APIServices.GroupResource(), "", name); ok {
				apiServices = append(apiServices, service.Ref())
			} else {
				evidence = append(evidence, fmt.Sprintf("the discovery of %s failed; its APIService %s was not found", gv, name))
			}
		}
	}
	return evidence, apiServices
}

var failedGroupVersion = regexp.MustCompile(`(?:^|, )([a-z0-9][a-z0-9.-]*)/([a-z0-9][a-z0-9-]*): `)

// failedGroupVersions finds the group versions in a discovery error as the namespace controller
// words it: "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of
// server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request", the
// list "<group>/<version>: <error>" joined by ", " (discovery.ErrGroupDiscoveryFailed). A false
// match names no APIService, and is said so.
func failedGroupVersions(message string) []schema.GroupVersion {
	_, list, found := strings.Cut(message, "server APIs: ")
	if !found {
		return nil
	}
	var out []schema.GroupVersion
	for _, m := range failedGroupVersion.FindAllStringSubmatch(list, -1) {
		if gv := (schema.GroupVersion{Group: m[1], Version: m[2]}); !slices.Contains(out, gv) {
			out = append(out, gv)
		}
	}
	return out
}

// ReadsContent implements ContentReader: the conditions of Namespaces, which say what keeps one.
func (StuckTerminating) ReadsContent() []ContentRequest {
	return []ContentRequest{{Resource: Namespaces.GroupResource(), Fields: []string{"status.conditions"}}}
}

// ReadsWhole implements WholeReader: the namespaces' conditions, and the APIServices a namespace's
// deletion cannot discover.
func (r StuckTerminating) ReadsWhole() []schema.GroupResource {
	return append(contentResources(r.ReadsContent()), APIServices.GroupResource())
}

var (
	_ ContentReader = StuckTerminating{}
	_ WholeReader   = StuckTerminating{}
)

// sinceTexts says how long objects have been terminating, once for each deletion timestamp:
// objects deleted together (a namespace, a DeleteCollection, an operator's uninstall) share it.
type sinceTexts struct {
	threshold time.Duration
	texts     map[int64]string // by deletion time, in Unix seconds
}

func newSinceTexts(threshold time.Duration) *sinceTexts {
	return &sinceTexts{threshold: threshold, texts: map[int64]string{}}
}

// of is the evidence of how long obj, terminating for age, has been.
func (s *sinceTexts) of(obj *Object, age time.Duration) string {
	at := obj.DeletionTimestamp.Unix()
	text, ok := s.texts[at]
	if !ok {
		text = fmt.Sprintf("deletionTimestamp %s: terminating for %s (threshold %s)",
			obj.DeletionTimestamp.UTC().Format(time.RFC3339), duration.HumanDuration(age), s.threshold)
		s.texts[at] = text
	}
	return text
}

type namespaceContents struct {
	objects, terminating int
	// held are the terminating objects that wait on a finalizer.
	held []ObjectRef
}

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
			if len(obj.Finalizers) > 0 {
				c.held = append(c.held, obj.Ref())
			}
		}
		contents[obj.Namespace] = c
	}
	return contents
}
