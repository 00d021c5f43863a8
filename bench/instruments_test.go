package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/labrun"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
	"wsgilab/bench/internal/verdict"
)

// instrumentPairs counts the generator pairs of the process, for Order;
// instrumentSeries the article A series, which each write their own
// report directory.
var instrumentPairs, instrumentSeries int

// BenchmarkInstruments reports what the lab's own instruments cost, one
// figure per metric, so benchstat can track them (make bench
// BENCH=Instruments). One iteration is one measurement:
//
//   - generator/<server>: our closed loop and ab on the same pod, article
//     B's non-blocking cell at the profile's -n: our CPU per request over
//     ab's, our req/s over ab's, and our CPU per request;
//   - run/<condition>: one article A run: the sampler's CPU (% of a
//     core), the prober's worst schedule lag, and wall time over the load
//     window;
//   - series/article-a: one whole article A series of the profile, each
//     run's pod opened ahead as in TestArticleA, under the safety stop and
//     the redo rule: the share of its judged runs whose worst lag was at
//     most 1 ms (goal: 98 %), its wall time over its windows (goal: 1.10,
//     the discarded attempts' time included), how many attempts it
//     discarded, how many runs the machine was too busy for (the series
//     goes on without them), and how many of article A's verdicts did not
//     hold (a too-busy one among them); its report files are in
//     LAB_REPORT_DIR/series-article-a-<k>;
//   - image/base: a cold build of the base image under a scratch tag,
//     removed after (skipped without root or mmdebstrap).
//
// The pairs alternate which generator goes first, across -count's
// invocations too, so that a drift of the server favours neither.
func BenchmarkInstruments(b *testing.B) {
	prof := engine.ProfilesB[lab.Settings.Profile]
	for _, srv := range engine.ServersB {
		b.Run("generator/"+srv.ID, func(b *testing.B) {
			pod := lab.StartB(b, srv, 0)
			if err := lab.WarmUpB(pod, srv, 0, prof); err != nil {
				b.Fatal(err)
			}
			var cpu, rate, perReq []float64
			for i := 0; i < b.N; i++ {
				instrumentPairs++
				pair := map[string]engine.RunB{}
				for _, gen := range engine.Order(instrumentPairs) {
					r, err := lab.MeasureB(pod, srv, 0, gen, i+1, prof, 0)
					if err != nil {
						b.Fatal(err)
					}
					pair[gen] = r
				}
				ours := pair[verdict.Ours].Result
				if ours.Completed == 0 {
					b.Fatalf("%s: our generator completed no request", srv.ID)
				}
				c, q := engine.GeneratorCost(pair[verdict.Ours], pair[verdict.AB])
				cpu, rate = append(cpu, c), append(rate, q)
				perReq = append(perReq, float64(ours.CPU.Microseconds())/float64(ours.Completed))
			}
			b.ReportMetric(stats.Median(cpu), "cpu/req-vs-ab")
			b.ReportMetric(stats.Median(rate), "req/s-vs-ab")
			b.ReportMetric(stats.Median(perReq), "cpu-us/req")
		})
	}
	plan := lab.Settings.Plan()
	for _, id := range []string{"direct-0dl", "direct-2dl"} {
		i := slices.IndexFunc(plan.Conditions, func(c engine.Condition) bool { return c.ID == id })
		if i < 0 {
			b.Fatalf("no condition %s in the %s profile", id, lab.Settings.Profile)
		}
		c := plan.Conditions[i]
		b.Run("run/"+c.ID, func(b *testing.B) {
			var probe, lag, wall []float64
			for i := 0; i < b.N; i++ {
				r, err := lab.RunA(b, c, i+1)
				if err != nil {
					b.Fatal(err)
				}
				p, l, w := engine.RunCost(r)
				probe, lag, wall = append(probe, p), append(lag, l), append(wall, w)
			}
			b.ReportMetric(stats.Median(probe), "probe-cpu-%")
			b.ReportMetric(slices.Max(lag), "lag-max-ms")
			b.ReportMetric(stats.Median(wall), "wall/window")
		})
	}
	b.Run("series/article-a", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			instrumentSeries++
			l, e := redoLab(b)
			// Its files stay, beside the job's, for a look at each run.
			l.Reports = engine.NewReports(filepath.Join(lab.Settings.ReportDir, fmt.Sprintf("series-article-a-%d", instrumentSeries)), e)
			var order []engine.Condition
			var ks []int
			for _, c := range plan.Conditions {
				for k := 1; k <= c.Runs(lab.Settings.Runs); k++ {
					order, ks = append(order, c), append(ks, k)
				}
			}
			start := time.Now()
			var windows float64
			quick, judged := 0, 0
			for j, c := range order {
				if j+1 < len(order) {
					l.Then(order[j+1], ks[j+1])
				}
				r, err := l.RunA(b, c, ks[j])
				if errors.Is(err, labrun.ErrTooBusy) {
					b.Log(err) // its verdicts say so; the series goes on
					continue
				}
				if err != nil {
					b.Fatal(err)
				}
				judged++
				windows += r.WindowS
				if r.LagMaxMs <= 1 {
					quick++
				}
			}
			l.DiscardAhead()
			claims, err := l.Reports.Evaluate(engine.TableA.ID, engine.TableA.Verdicts)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Reports.Close(); err != nil {
				b.Fatal(err)
			}
			failed := 0
			for _, c := range claims {
				if c.Status != report.StatusHolds && c.Status != report.StatusNotRun {
					failed++
				}
			}
			b.ReportMetric(float64(failed), "verdicts-not-held")
			b.ReportMetric(float64(len(e.Safety.TooBusy)), "too-busy")
			b.ReportMetric(100*float64(quick)/float64(max(judged, 1)), "lag<=1ms-%")
			b.ReportMetric(time.Since(start).Seconds()/windows, "wall/windows")
			b.ReportMetric(float64(len(e.Safety.Aborts)), "discards")
		}
	})
	b.Run("image/base", func(b *testing.B) {
		if _, err := exec.LookPath("mmdebstrap"); err != nil || os.Geteuid() != 0 {
			b.Skip("a base-image build needs root and mmdebstrap (make deps)")
		}
		pool, err := dockertest.NewPool("")
		if err != nil {
			b.Fatal(err)
		}
		const ref = "wsgilab-bench-scratch:base"
		var secs []float64
		for i := 0; i < b.N; i++ {
			img, err := image.BuildBase(context.Background(), pool.Client, ref, lab.Settings.Apt, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			if err := pool.Client.RemoveImageExtended(ref, dc.RemoveImageOptions{Force: true}); err != nil {
				b.Fatal(err)
			}
			secs = append(secs, img.Duration.Seconds())
		}
		b.ReportMetric(stats.Median(secs), "build-s")
	})
}
