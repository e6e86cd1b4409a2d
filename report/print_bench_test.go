package report_test

import (
	"io"
	"testing"

	"github.com/operator-sweeper/operator-sweeper/report"
)

// BenchmarkPrintStuck prints the report of an operator's 900 objects left stuck (1,801 findings)
// in each format: the cost of a finding once the sweep is done.
func BenchmarkPrintStuck(b *testing.B) {
	r := crowded()
	for _, format := range report.Formats() {
		b.Run(string(format), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := r.Print(io.Discard, format); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(r.Findings)), "ns/finding")
		})
	}
}
