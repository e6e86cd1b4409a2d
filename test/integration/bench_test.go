package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkSweep measures whole runs (discovery, paged metadata lists, plan, report) over 10,000
// ConfigMaps on the real API server, with the default page size and concurrency.
func BenchmarkSweep(b *testing.B) {
	const n = 10_000
	// -count runs the benchmark again on the same cluster: seed once.
	ns := "bench-sweep"
	if err := testCluster.EnsureNamespace(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	existing, err := testCluster.Kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var g errgroup.Group
	g.SetLimit(16)
	for i := len(existing.Items); i < n; i++ {
		g.Go(func() error {
			_, err := testCluster.Kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": "bench"}},
				Data:       map[string]string{"payload": "a value the metadata client never transfers"},
			}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	opts := testOptions(ns)
	opts.IncludeResources = []string{"configmaps"}
	opts.LogLevel = "warn"
	engine := newEngine(b, opts, nil, nil)

	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		rep := engine.Run(context.Background())
		if rep.Summary.Scanned != n || len(rep.Errors) > 0 {
			b.Fatalf("scanned %d of %d, errors %v", rep.Summary.Scanned, n, rep.Errors)
		}
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "objects/s")
}
