package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedeventsv1 "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

// ReportingController names the sweeper in the Events it records.
const ReportingController = "operator-sweeper.io/operator-sweeper"

// The numbers that keep Events in proportion to what an admin reads, not to what was written: a
// group of alike writes (one rule, one action, one kind, one namespace) of up to eventsPerObject
// objects has an Event on each, a larger one a single Event on its first object, in its namespace,
// with the count and the first eventNames names. Thousands of releases of an uninstalled
// operator's objects, which vanish right after, make one Event per kind and namespace.
const (
	eventsPerObject = 3
	eventNames      = 5
	// maxNote is the most an Event's note holds (events.k8s.io/v1 validation).
	maxNote = 1024
)

// EventLog collects the writes of a run that were applied, and records them as Events once the
// writes are done, through client-go's events recorder (events.k8s.io/v1). It is safe for
// concurrent use.
type EventLog struct {
	mu     sync.Mutex
	groups map[eventGroup]*appliedGroup
	order  []eventGroup
}

// eventGroup is what alike writes share.
type eventGroup struct {
	rule, action, reason string
	namespace            string
	apiVersion, kind     string
}

// appliedGroup is a group's first objects, in the order they were written (no more than its Events
// name: a release of thousands holds five), how many it has, and the note of the first.
type appliedGroup struct {
	objects []rules.ObjectRef
	count   int
	note    string
}

// Add logs a write applied to obj by rule: action, for reason (the finding's). Reason is one word,
// OperatorSweeper<Action>; note says what was done and why.
func (l *EventLog) Add(rule string, obj rules.ObjectRef, action rules.Action, why string) {
	g := eventGroup{rule: rule, action: action.Type(), reason: "OperatorSweeper" + action.Type(), namespace: obj.Namespace,
		apiVersion: obj.APIVersion(), kind: obj.Kind}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.groups == nil {
		l.groups = map[eventGroup]*appliedGroup{}
	}
	group, ok := l.groups[g]
	if !ok {
		group = &appliedGroup{note: action.String() + ": " + why}
		l.groups[g] = group
		l.order = append(l.order, g)
	}
	if len(group.objects) < max(eventsPerObject, eventNames) {
		group.objects = append(group.objects, obj)
	}
	group.count++
}

// Len is how many Events Record would record.
func (l *EventLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events())
}

// Record records the logged writes as Events through client-go's events broadcaster, and waits
// up to timeout for them to be written: the process may end right after. An Event that cannot be
// written is logged, never fatal.
func (l *EventLog) Record(ctx context.Context, client typedeventsv1.EventsV1Interface, logger *slog.Logger, timeout time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.order) == 0 || client == nil {
		return
	}
	sink := &countingSink{EventSink: &events.EventSinkImpl{Interface: client}, logger: logger}
	broadcaster := events.NewBroadcaster(sink)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		logger.WarnContext(ctx, "events not recorded", "error", err)
		return
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, ReportingController)
	recorded := l.events()
	for _, e := range recorded {
		if sink.expect() >= maxQueued && !sink.wait(ctx) {
			break // the broadcaster's queue drops what overflows it: let it drain first
		}
		recorder.Eventf(e.regarding, nil, "Normal", e.reason, e.action, "%s", truncateNote(e.note))
	}
	if !sink.wait(ctx) {
		logger.WarnContext(ctx, "events not all recorded before the time-out", "events", len(recorded), "timeout", timeout.String())
	}
}

// events are the Events to record, one per object regarded, reason and action: the broadcaster
// would make Events alike in these a series, keeping the first's note only, so their notes are
// joined here instead.
func (l *EventLog) events() []anEvent {
	type key struct {
		regarding      types.UID
		namespace      string
		name           string
		reason, action string
	}
	at := map[key]int{}
	var out []anEvent
	for _, g := range l.order {
		for _, e := range eventsOf(g, l.groups[g]) {
			k := key{e.regarding.UID, e.regarding.Namespace, e.regarding.Name, e.reason, e.action}
			if i, ok := at[k]; ok {
				out[i].note += "; " + e.note
				continue
			}
			at[k] = len(out)
			out = append(out, e)
		}
	}
	return out
}

// maxQueued bounds the Events handed to the broadcaster and not yet written: its queue holds a
// thousand, and drops what comes beyond.
const maxQueued = 500

// anEvent is one Event to record.
type anEvent struct {
	regarding      *metav1.PartialObjectMetadata
	reason, action string
	note           string
}

// eventsOf are a group's Events: one per object up to eventsPerObject, else one for the group, on
// its first object.
func eventsOf(g eventGroup, group *appliedGroup) []anEvent {
	if group.count <= eventsPerObject {
		out := make([]anEvent, 0, len(group.objects))
		for _, obj := range group.objects {
			out = append(out, anEvent{regardingObject(obj), g.reason, g.action, group.note})
		}
		return out
	}
	shown := group.objects[:min(eventNames, len(group.objects))]
	names := make([]string, 0, len(shown))
	for _, obj := range shown {
		names = append(names, obj.Name)
	}
	listed := strings.Join(names, ", ")
	if more := group.count - len(shown); more > 0 {
		listed += fmt.Sprintf(" and %d more", more)
	}
	where := "cluster-scoped"
	if g.namespace != "" {
		where = "in namespace " + g.namespace
	}
	note := fmt.Sprintf("rule %s, %s of %d %s objects %s (%s); the first's: %s",
		g.rule, g.action, group.count, g.kind, where, listed, group.note)
	return []anEvent{{regardingObject(group.objects[0]), g.reason, g.action, note}}
}

// regardingObject is what an Event about obj refers to.
func regardingObject(obj rules.ObjectRef) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: obj.APIVersion(), Kind: obj.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, ResourceVersion: obj.ResourceVersion},
	}
}

// truncateNote cuts a note to what an Event holds, at a character's boundary.
func truncateNote(note string) string {
	if len(note) <= maxNote {
		return note
	}
	const ellipsis = "…"
	cut := maxNote - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + ellipsis
}

// countingSink is the events sink, counting the Events written (or given up on), so that Record
// can wait for them: the broadcaster writes in goroutines of its own.
type countingSink struct {
	events.EventSink
	logger  *slog.Logger
	mu      sync.Mutex
	pending int
	done    chan struct{}
}

// expect counts one more Event to be written, and returns how many were pending before it.
func (s *countingSink) expect() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == 0 {
		s.done = make(chan struct{})
	}
	s.pending++
	return s.pending - 1
}

func (s *countingSink) finished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending--
	if s.pending == 0 {
		close(s.done)
	}
}

// Create implements events.EventSink: it writes the Event, and counts it done when written or
// refused by the server (the broadcaster tries again only when the server could not be reached).
func (s *countingSink) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	created, err := s.EventSink.Create(ctx, event)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		s.finished()
	case errors.As(err, &status):
		s.logger.WarnContext(ctx, "event not recorded", "regarding", event.Regarding.Namespace+"/"+event.Regarding.Name,
			"reason", event.Reason, "error", err)
		s.finished()
	}
	return created, err
}

// Patch implements events.EventSink: a series of Events alike, counted as Create.
func (s *countingSink) Patch(ctx context.Context, event *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	patched, err := s.EventSink.Patch(ctx, event, data)
	var status apierrors.APIStatus
	if err == nil || (errors.As(err, &status) && !apierrors.IsNotFound(err)) {
		s.finished()
	}
	return patched, err
}

// wait waits until every Event expected is written or given up on, or ctx ends.
func (s *countingSink) wait(ctx context.Context) bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
