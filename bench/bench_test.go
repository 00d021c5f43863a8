package bench

import (
	"fmt"
	"testing"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// Benchmarks give each condition's metrics in Go benchmark format, with
// units in the names, so benchstat can compare two series (make bench).
// One iteration is one run in fresh containers: run them with
// -benchtime 1x and take samples with -count.

// BenchmarkArticleA runs article A's conditions.
func BenchmarkArticleA(b *testing.B) {
	for _, c := range conditionsA {
		b.Run(c.ID, func(b *testing.B) {
			var runs []report.Run
			for i := 0; i < b.N; i++ {
				runs = append(runs, measureA(b, c, i+1))
			}
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.P95Ms }), "p95-ms")
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.P50Ms }), "p50-ms")
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.LagMaxMs }), "lag-max-ms")
			if c.Downloads > 0 {
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.WriteS }), "write-s")
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.CompletionS }), "completion-s")
			}
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 {
				if r.Observed == nil {
					return 0
				}
				return r.Observed.TempfilePeakMiB
			}), "tempfile-peak-MiB")
		})
	}
}

// BenchmarkArticleB runs article B's cells with our generator, at the
// profile's -n (LAB_PROFILE).
func BenchmarkArticleB(b *testing.B) {
	_, prof := labProfile(b)
	for _, srv := range serversB {
		for _, block := range blockingMs {
			id := fmt.Sprintf("%s-block%d", srv.ID, block)
			b.Run(id, func(b *testing.B) {
				pod := startB(b, srv, block)
				var runs []runB
				for i := 0; i < b.N; i++ {
					runs = append(runs, measureB(b, pod, id, block, "ours", i+1, prof))
				}
				row := rowB(srv, id, block, "ours", runs)
				b.ReportMetric(row.ReqPerS, "req/s")
				b.ReportMetric(row.P50Ms, "p50-ms")
				b.ReportMetric(row.P99Ms, "p99-ms")
				b.ReportMetric(float64(row.Failed), "failed")
			})
		}
	}
}

func medianOf(runs []report.Run, f func(report.Run) float64) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, f(r))
	}
	return stats.Median(xs)
}
