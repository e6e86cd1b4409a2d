package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/operator-sweeper/operator-sweeper/rules"
)

func TestEventLogRecord(t *testing.T) {
	release := rules.RemoveFinalizers{Finalizers: []string{"logging.banzaicloud.io/finalizer"}}
	objects := func(kind, namespace string, n int) []rules.ObjectRef {
		out := make([]rules.ObjectRef, n)
		for i := range out {
			out[i] = rules.ObjectRef{Resource: schema.GroupVersionResource{Group: "logging.banzaicloud.io", Version: "v1beta1",
				Resource: strings.ToLower(kind) + "s"}, Kind: kind, Namespace: namespace,
				Name: fmt.Sprintf("%s-%d", strings.ToLower(kind), i), UID: types.UID(fmt.Sprintf("%s-%s-%d", kind, namespace, i))}
		}
		return out
	}
	type event struct{ namespace, kind, name, note string }
	tests := []struct {
		name    string
		written map[string][]rules.ObjectRef // by rule
		want    []event
	}{{
		name:    "a few alike writes: an Event on each object",
		written: map[string][]rules.ObjectRef{"orphaned-finalizers": objects("Flow", "a", 3)},
		want: []event{
			{"a", "Flow", "flow-0", "remove finalizers logging.banzaicloud.io/finalizer: gone"},
			{"a", "Flow", "flow-1", "remove finalizers logging.banzaicloud.io/finalizer: gone"},
			{"a", "Flow", "flow-2", "remove finalizers logging.banzaicloud.io/finalizer: gone"},
		},
	}, {
		name:    "many alike writes: one Event, on the first",
		written: map[string][]rules.ObjectRef{"orphaned-finalizers": objects("Flow", "a", 2000)},
		want: []event{{"a", "Flow", "flow-0", "rule orphaned-finalizers, RemoveFinalizers of 2000 Flow objects in namespace a " +
			"(flow-0, flow-1, flow-2, flow-3, flow-4 and 1995 more); the first's: remove finalizers logging.banzaicloud.io/finalizer: gone"}},
	}, {
		name:    "two rules alike on one object: one Event, both notes (not a series that keeps the first)",
		written: map[string][]rules.ObjectRef{"orphaned-finalizers": objects("Flow", "a", 1), "terminating-finalizers": objects("Flow", "a", 1)},
		want: []event{{"a", "Flow", "flow-0", "remove finalizers logging.banzaicloud.io/finalizer: gone; " +
			"remove finalizers logging.banzaicloud.io/finalizer: gone"}},
	}, {
		name:    "many cluster-scoped: one Event on the first, in default",
		written: map[string][]rules.ObjectRef{"orphaned-finalizers": objects("Logging", "", 6)},
		want: []event{{"default", "Logging", "logging-0", "rule orphaned-finalizers, RemoveFinalizers of 6 Logging objects cluster-scoped " +
			"(logging-0, logging-1, logging-2, logging-3, logging-4 and 1 more); the first's: remove finalizers logging.banzaicloud.io/finalizer: gone"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &EventLog{}
			for rule, written := range tt.written {
				for _, obj := range written {
					log.Add(rule, obj, release, "gone")
				}
			}
			assert.Equal(t, len(tt.want), log.Len())
			client := fake.NewClientset()
			log.Record(context.Background(), client.EventsV1(), slog.New(slog.DiscardHandler), 10*time.Second)

			recorded, err := client.EventsV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			var got []event
			for _, e := range recorded.Items {
				assert.Equal(t, ReportingController, e.ReportingController)
				assert.Equal(t, "OperatorSweeperRemoveFinalizers", e.Reason)
				assert.Equal(t, "RemoveFinalizers", e.Action)
				assert.Nil(t, e.Series)
				got = append(got, event{e.Namespace, e.Regarding.Kind, e.Regarding.Name, e.Note})
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}

func TestTruncateNote(t *testing.T) {
	long := strings.Repeat("é", maxNote) // two bytes each: a cut at 1021 bytes falls inside one
	got := truncateNote(long)
	assert.LessOrEqual(t, len(got), maxNote)
	assert.True(t, utf8.ValidString(got), "cut at a character's boundary")
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.Equal(t, "short", truncateNote("short"))
}
