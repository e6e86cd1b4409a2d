package rules

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchObjects is a cluster's worth of metadata: n ConfigMaps over 100 Namespaces, one in a
// hundred terminating.
func benchObjects(n int) []*Object {
	objects := make([]*Object, n)
	for i := range objects {
		objects[i] = object(ConfigMaps, fmt.Sprintf("ns-%d", i%100), fmt.Sprintf("cm-%d", i))
		if i%100 == 0 {
			terminatingFor(time.Hour, "example.com/f")(objects[i])
		}
	}
	return objects
}

func BenchmarkNewView(b *testing.B) {
	objects := benchObjects(100_000)
	b.ReportAllocs()
	for b.Loop() {
		NewView(testNow, []Resource{ConfigMaps}, Coverage{}, objects)
	}
	b.ReportMetric(float64(len(objects)), "objects/op")
}

func BenchmarkStuckTerminatingPlan(b *testing.B) {
	view := NewView(testNow, []Resource{ConfigMaps}, Coverage{}, benchObjects(100_000))
	rule := StuckTerminating{minAge: 15 * time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		if got := len(rule.Plan(context.Background(), view)); got != 1000 {
			b.Fatalf("want 1000 findings, got %d", got)
		}
	}
}
