package bench

import (
	"slices"
	"testing"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
	"wsgilab/bench/internal/verdict"
)

// Benchmarks give each condition's metrics in Go benchmark format, with
// units in the names, so benchstat can compare two series (make bench).
// One iteration is one run in fresh containers: run them with
// -benchtime 1x and take samples with -count.

// BenchmarkArticleA runs article A's conditions and the sweep's cells of
// the profile (LAB_PROFILE).
func BenchmarkArticleA(b *testing.B) {
	plan := lab.Settings.Plan()
	benchConditions(b, slices.Concat(plan.Conditions, plan.Sweep), validRun)
}

// BenchmarkMatrix runs the resilience matrix's own cells and capacity
// steps of the profile, and its streaming table; a server's failure is a
// cell's outcome, so only an unsound run fails the benchmark.
func BenchmarkMatrix(b *testing.B) {
	plan := lab.Settings.Plan()
	benchConditions(b, slices.Concat(plan.Matrix, plan.Streams), soundRun)
}

// benchConditions runs each of conds b.N times, failing on a run judge
// rejects, and reports the medians of the runs' figures.
func benchConditions(b *testing.B, conds []engine.Condition, judge func(report.Run) bool) {
	for _, c := range conds {
		b.Run(c.ID, func(b *testing.B) {
			var runs []report.Run
			for i := 0; i < b.N; i++ {
				r, err := lab.RunA(b, c, i+1)
				if err != nil {
					b.Fatal(err)
				}
				if !judge(r) {
					b.Fatalf("%s run %d: %s", c.ID, i+1, r.Invalid)
				}
				runs = append(runs, r)
			}
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.P95Ms }), "p95-ms")
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.P50Ms }), "p50-ms")
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.LagMaxMs }), "lag-max-ms")
			if c.Downloads > 0 {
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.WriteS }), "write-s")
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.CompletionS }), "completion-s")
			}
			if c.Stream != nil {
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.Stream.DelayP95Ms }), "event-delay-p95-ms")
				b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.Stream.FirstEventDelayMs }), "first-event-delay-ms")
			}
			b.ReportMetric(medianOf(runs, func(r report.Run) float64 { return r.Observed.TempfilePeakMiB }), "tempfile-peak-MiB")
		})
	}
}

// BenchmarkArticleB runs article B's cells with our generator, at the
// profile's -n (LAB_PROFILE).
func BenchmarkArticleB(b *testing.B) {
	prof := engine.ProfilesB[lab.Settings.Profile]
	for _, srv := range engine.ServersB {
		for _, block := range engine.BlockingMs {
			b.Run(verdict.Cell(srv.ID, block), func(b *testing.B) {
				pod := lab.StartB(b, srv, block)
				if err := lab.WarmUpB(pod, srv, block, prof); err != nil {
					b.Fatal(err)
				}
				var runs []engine.RunB
				for i := 0; i < b.N; i++ {
					r, err := lab.MeasureB(pod, srv, block, verdict.Ours, i+1, prof, 0)
					if err != nil {
						b.Fatal(err)
					}
					runs = append(runs, r)
				}
				row := engine.RowB(srv, block, verdict.Ours, runs)
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
