package bench

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/labrun"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/stats"
)

// The redo rule's burner: two processes spinning outside the lab (all of
// this 2-core host) for burnFor, burnAfter into the first attempt of each
// condition's first run:
// about the load that disturbed a make test (issue 30: 96 % outside the
// lab at its peak, 9.3 % on average; here 100 % for 1.5 s of a run of
// about 11 s, 14 %), well inside the window, which opens 0.4 to 1.5 s
// into an attempt. 1.5 s is under the safety stop's 2 s window, so only
// the redo rule can catch it.
const (
	burners   = 2
	burnAfter = 3 * time.Second
	burnFor   = 1500 * time.Millisecond
)

// redoRuns is how many runs each series takes of each condition.
const redoRuns = 2

// redoKeptRatio bounds the ratio of the kept runs' median p95 to the
// quiet series' (TestRedo/burner).
const redoKeptRatio = 2

// redoConditions are the idle cells most sensitive to a busy host (the
// make test of issue 30 doubled them): direct-0dl and nginx-on-2dl.
func redoConditions(t *testing.T) []engine.Condition {
	var cs []engine.Condition
	for _, id := range []string{"direct-0dl", "nginx-on-2dl"} {
		i := slices.IndexFunc(engine.ArticleA, func(c engine.Condition) bool { return c.ID == id })
		require.GreaterOrEqual(t, i, 0, id)
		cs = append(cs, engine.ArticleA[i])
	}
	return cs
}

// redoLab is the series' lab with reports of its own, no journal, and a
// safety stop of its own at the defaults, with the default redo rule,
// whatever LAB_SAFETY_CPU says.
func redoLab(t testing.TB) (*labrun.Lab, *report.Environment) {
	t.Helper()
	lab.DiscardAhead()
	e := env
	e.Safety = report.Safety{Enabled: true, Threshold: safety.DefaultThreshold, WindowS: safety.DefaultWindow.Seconds()}
	rule := disturb.DefaultRule()
	e.Safety.Redo = &rule
	l := *lab
	l.Reports = engine.NewReports(t.TempDir(), &e)
	l.Journal = nil
	l.Settings.Safety = engine.SafetySettings{Enabled: true, Config: safety.DefaultConfig(), Redo: rule}
	stop, err := safety.Start(safety.DefaultConfig(), &safety.Host{ProcRoot: "/proc", CgroupRoot: "/sys/fs/cgroup",
		Containers: lab.Session.ContainerIDs})
	require.NoError(t, err)
	t.Cleanup(stop.Close)
	l.Safety = stop
	return &l, &e
}

// series runs each condition redoRuns times on l.
func redoSeries(t *testing.T, l *labrun.Lab, conds []engine.Condition) map[string][]report.Run {
	runs := map[string][]report.Run{}
	for _, c := range conds {
		for k := 1; k <= redoRuns; k++ {
			r, err := l.RunA(t, c, k)
			require.NoError(t, err)
			require.True(t, r.Valid, "%s run %d: %s", c.ID, k, r.Invalid)
			t.Logf("%s run %d: p95 %.2f ms, lag max %.2f ms, client throttled %.3f, outside held %.2f", c.ID, k, r.P95Ms,
				r.LagMaxMs, disturb.Noise(r).ClientThrottledShare, heldOf(r))
			runs[c.ID] = append(runs[c.ID], r)
		}
	}
	return runs
}

func heldOf(r report.Run) float64 {
	if r.Host == nil {
		return -1
	}
	return r.Host.HeldShare
}

// burn spins n bounded processes outside the lab for d, after delay.
func burn(n int, delay, d time.Duration) {
	go func() {
		time.Sleep(delay)
		ctx, cancel := context.WithTimeout(context.Background(), d+5*time.Second)
		defer cancel()
		var cmds []*exec.Cmd
		for range n {
			c := exec.CommandContext(ctx, "timeout", fmt.Sprintf("%.3f", d.Seconds()), "sh", "-c", "while :; do :; done")
			if c.Start() == nil {
				cmds = append(cmds, c)
			}
		}
		for _, c := range cmds {
			c.Wait()
		}
	}()
}

// TestRedo shows the redo rule (package disturb) at work on a handful of
// runs of the two idle cells a busy host disturbs most.
//
//   - quiet: a quiet series redoes nothing for the host: every run's
//     client throttling and CPU outside the lab stay under the rule's
//     bounds (and its lag, but for the client's own rare stall:
//     assertQuietDiscards).
//   - burner: a series with a CPU burner beside the first attempt of each
//     condition's first run discards each of those attempts as disturbed
//     (the CPU outside the lab held above the bound), records it with its
//     figures and raw record, and runs it again once the host is calm; it
//     discards nothing else for the host, the kept runs are undisturbed,
//     and their verdicts and figures match the quiet series'.
func TestRedo(t *testing.T) {
	conds := redoConditions(t)
	var quiet map[string][]report.Run
	var quietEnv *report.Environment
	var quietLab *labrun.Lab
	t.Run("quiet", func(t *testing.T) {
		quietLab, quietEnv = redoLab(t)
		quiet = redoSeries(t, quietLab, conds)
		assertQuietDiscards(t, quietEnv.Safety.Aborts, nil)
		assert.Empty(t, quietEnv.Safety.TooBusy)
	})
	t.Run("burner", func(t *testing.T) {
		if quiet == nil {
			t.Skip("the quiet series did not run")
		}
		l, e := redoLab(t)
		burned := map[string]bool{}
		l.BeforeAttempt = func(unit string, n int) {
			if n == 1 && strings.HasSuffix(unit, " run 1") {
				burned[unit] = true
				burn(burners, burnAfter, burnFor)
			}
		}
		kept := redoSeries(t, l, conds)
		require.NotEmpty(t, burned)
		for unit := range burned {
			i := slices.IndexFunc(e.Safety.Aborts, func(a report.Abort) bool { return a.Unit == unit })
			if !assert.GreaterOrEqual(t, i, 0, "%s: its burned attempt was kept", unit) {
				continue
			}
			a := e.Safety.Aborts[i]
			assert.Equal(t, 1, a.Attempt, unit)
			assert.Equal(t, report.AbortDisturbed, a.Reason, unit)
			assert.True(t, slices.ContainsFunc(a.Disturbances, func(d report.Disturbance) bool { return d.Check == disturb.CheckOutside }),
				"%s: discarded for %v, not for the CPU outside the lab", unit, a.Disturbances)
			assert.FileExists(t, filepath.Join(l.Reports.Dir(), a.Raw), "the discarded run's raw record")
			t.Logf("discarded %s: %v; waited %.1f s for calm", unit, a.Disturbances, a.WaitedS)
		}
		assertQuietDiscards(t, e.Safety.Aborts, burned)
		assert.Empty(t, e.Safety.TooBusy)

		for _, c := range conds {
			for _, r := range kept[c.ID] {
				assert.Empty(t, disturb.Judge(disturb.DefaultRule(), disturb.Noise(r)), "%s run %d kept disturbed", c.ID, r.Run)
			}
			// The kept runs' p95 against the quiet series': a single idle
			// run's p95 lies within 1.13 - 1.80 ms on a quiet host (50-run
			// series), a median of two within 1.25 - 1.55 ms. A run redone
			// right after the burner may run a little slow and still be
			// within the rule (direct-0dl at 3.06 ms, its client 1.96 ms
			// late: a median of two 1.53x the quiet one, on an AMD EPYC,
			// 2026-12-03), so 2x is the margin; a run beside the burner,
			// the rule's to catch, is judged by disturb.Judge above.
			q, k := medianP95(quiet[c.ID]), medianP95(kept[c.ID])
			assert.LessOrEqual(t, logRatio(k, q), math.Log(redoKeptRatio), "%s: kept p95 %.2f ms against quiet %.2f ms", c.ID, k, q)
		}
		// The same verdicts hold on both series.
		for _, s := range []*labrun.Lab{quietLab, l} {
			claims, err := s.Reports.Evaluate(engine.TableA.ID, engine.TableA.Verdicts)
			require.NoError(t, err)
			for _, cl := range claims {
				if cl.Status != report.StatusNotRun {
					assert.Equal(t, report.StatusHolds, cl.Status, "%s: %s (%s)", cl.ID, cl.Note, s.Reports.Dir())
				}
			}
		}
	})
}

// assertQuietDiscards holds the discards of a series to those a quiet
// host makes: none for the CPU outside the lab or the client's
// throttling but of the attempts burned (the burner's first attempts),
// and at most one for the prober's lag alone. That one is the client's
// own: now and then its cgroup burns 11 - 19 ms of CPU within 50 ms and
// is throttled for up to 140 ms while the host is quiet (outside the lab
// 0 - 4 %), and a request starts 30 - 58 ms late (3 of 54 attempts of a
// make test, none in 70 runs of these two conditions;
// reports/measurements.md). The redo rule is right to discard that run;
// this test is about the host.
func assertQuietDiscards(t *testing.T, aborts []report.Abort, burned map[string]bool) {
	t.Helper()
	lagOnly := 0
	for _, a := range aborts {
		if burned[a.Unit] && a.Attempt == 1 {
			continue
		}
		onlyLag := !slices.ContainsFunc(a.Disturbances, func(d report.Disturbance) bool {
			return d.Check != disturb.CheckLag && d.Check != disturb.CheckLagSecond
		})
		if assert.True(t, a.Reason == report.AbortDisturbed && onlyLag, "%s attempt %d discarded on a quiet host: %s %v",
			a.Unit, a.Attempt, a.Reason, a.Disturbances) {
			lagOnly++
			t.Logf("%s attempt %d discarded for the client's own lag: %v", a.Unit, a.Attempt, a.Disturbances)
		}
	}
	assert.LessOrEqual(t, lagOnly, 1, "discards for the prober's lag alone")
}

func medianP95(runs []report.Run) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, r.P95Ms)
	}
	return stats.Median(xs)
}

// logRatio is |ln(a/b)|.
func logRatio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 1e9
	}
	return math.Abs(math.Log(a / b))
}
