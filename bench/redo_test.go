package bench

import (
	"context"
	"fmt"
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
			logRun(t, c.ID, r)
			runs[c.ID] = append(runs[c.ID], r)
		}
	}
	return runs
}

// logRun logs what the redo rule reads of run r of condition id.
func logRun(t *testing.T, id string, r report.Run) {
	held := -1.0
	if r.Host != nil {
		held = r.Host.HeldShare
	}
	t.Logf("%s run %d: p95 %.2f ms, lag max %.2f ms, client throttled %.3f, outside held %.2f", id, r.Run, r.P95Ms,
		r.LagMaxMs, disturb.Noise(r).ClientThrottledShare, held)
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
//   - quiet: a quiet series redoes nothing for the host: no attempt is
//     discarded for the CPU outside the lab, and none but for the
//     client's own stall (its lag or its throttling:
//     assertQuietDiscards); no unit is given up on. The quiet series is
//     TestArticleA's runs of the two conditions when it ran them in this
//     process under the default safety stop and redo rule (make test),
//     else a series of its own.
//   - burner: a series with a CPU burner beside the first attempt of each
//     condition's first run discards each of those attempts as disturbed
//     (the CPU outside the lab held above the bound), records it with its
//     figures and raw record, and runs it again once the host is calm; it
//     discards nothing else for the host, the kept runs are undisturbed,
//     and article A's verdicts on them are the quiet series'.
//
// The kept runs' p95 is logged against the quiet series', not bounded: a
// burner at nice 0 does not move the idle p95 at all (reports/
// measurements.md, "The burner"), so no bound on it could catch what the
// rule lets through, while two undisturbed runs' median spans 2.2x between
// series on one machine (nginx-on-2dl, 3.31 against 7.20 ms, the second
// run at 8.98 ms with its client 2.75 ms late at worst: a CI run of
// 2026-12-03). What the kept runs must show is the verdicts.
func TestRedo(t *testing.T) {
	conds := redoConditions(t)
	var quiet map[string][]report.Run
	var quietClaims []report.Claim
	t.Run("quiet", func(t *testing.T) {
		reports := lab.Reports
		runs, aborts, tooBusy, ok := articleQuiet(conds)
		if ok {
			t.Log("the quiet series: TestArticleA's runs in this process")
			for _, c := range conds {
				for _, r := range runs[c.ID] {
					logRun(t, c.ID, r)
				}
			}
		} else {
			l, e := redoLab(t)
			runs = redoSeries(t, l, conds)
			reports, aborts, tooBusy = l.Reports, e.Safety.Aborts, e.Safety.TooBusy
		}
		assertQuietDiscards(t, aborts, nil)
		assert.Empty(t, tooBusy)
		var err error
		quietClaims, err = reports.Evaluate(engine.TableA.ID, engine.TableA.Verdicts)
		require.NoError(t, err)
		quiet = runs
	})
	t.Run("burner", func(t *testing.T) {
		if quiet == nil {
			t.Skip("the quiet series did not run")
		}
		l, e := redoLab(t)
		// Its runs run whole, as the CPU outside the lab is under test: a
		// stop for the client's lag (which the burner may raise too)
		// could end the burned attempt before that check sees the burner.
		l.WholeRuns = true
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
			t.Logf("%s: kept p95 median %.2f ms, the quiet series' %.2f ms", c.ID, medianP95(kept[c.ID]), medianP95(quiet[c.ID]))
		}
		// The verdicts on the two conditions are the same on both series,
		// and hold.
		claims, err := l.Reports.Evaluate(engine.TableA.ID, engine.TableA.Verdicts)
		require.NoError(t, err)
		byID := map[string]report.Claim{}
		for _, cl := range quietClaims {
			byID[cl.ID] = cl
		}
		judged := 0
		for _, cl := range claims {
			if cl.Status == report.StatusNotRun {
				continue
			}
			judged++
			assert.Equal(t, report.StatusHolds, cl.Status, "%s: %s (%s)", cl.ID, cl.Note, l.Reports.Dir())
			assert.Equal(t, report.StatusHolds, byID[cl.ID].Status, "%s on the quiet series: %s", cl.ID, byID[cl.ID].Note)
		}
		assert.NotZero(t, judged, "no verdict read the two conditions")
	})
}

// articleQuiet is TestArticleA's runs of conds in this process's series
// (redoRuns or more valid runs of each), the series' discards of their
// runs and its give-ups on them, when the series ran under the default
// safety stop and redo rule; ok is false otherwise.
func articleQuiet(conds []engine.Condition) (runs map[string][]report.Run, aborts []report.Abort, tooBusy []report.TooBusy, ok bool) {
	s := lab.Settings.Safety
	if !s.Enabled || s.Config != safety.DefaultConfig() || s.Redo != disturb.DefaultRule() {
		return nil, nil, nil, false
	}
	runs = map[string][]report.Run{}
	for _, c := range conds {
		for _, r := range lab.Reports.Runs(c.ID) {
			if r.Valid {
				runs[c.ID] = append(runs[c.ID], r)
			}
		}
		if len(runs[c.ID]) < redoRuns {
			return nil, nil, nil, false
		}
	}
	ran := func(unit string) bool {
		return slices.ContainsFunc(conds, func(c engine.Condition) bool { return strings.HasPrefix(unit, c.ID+" run ") })
	}
	for _, a := range lab.Reports.Aborts() {
		if ran(a.Unit) {
			aborts = append(aborts, a)
		}
	}
	for _, tb := range lab.Reports.Env.Safety.TooBusy {
		if ran(tb.Unit) {
			tooBusy = append(tooBusy, tb)
		}
	}
	return runs, aborts, tooBusy, true
}

// assertQuietDiscards holds the discards of a series to those a quiet
// host makes: none for the CPU outside the lab but of the attempts burned
// (the burner's first attempts), and no unit given up on. A quiet host
// may still see the client's own stalls, and the rule is right to redo
// those runs: now and then the client's cgroup burns 11 - 19 ms of CPU
// within 50 ms and is throttled for up to 140 ms while the host is quiet
// (outside the lab 0 - 4 %). In the window a request then starts 30 -
// 140 ms late (a lag discard; 3 of 54 attempts of a make test, none in 70
// runs of these two conditions); in the baseline exchanges after it the
// client's throttled share crosses the bound (client CPU 312 and 393 ms
// in a run instead of 145 - 175, 192 and 239 of them in the baseline,
// its exchanges up to 45 and 94 ms: 2 of 6 TestArticleA runs of
// direct-0dl on an AMD EPYC, 2026-12-03; reports/measurements.md). Those
// are logged, not counted: this test is about the host.
func assertQuietDiscards(t *testing.T, aborts []report.Abort, burned map[string]bool) {
	t.Helper()
	for _, a := range aborts {
		if burned[a.Unit] && a.Attempt == 1 {
			continue
		}
		// A step of the time of day is not the host's CPU either: a
		// time daemon's, logged as the client's stalls are.
		own := !slices.ContainsFunc(a.Disturbances, func(d report.Disturbance) bool {
			return d.Check != disturb.CheckLag && d.Check != disturb.CheckLagSecond && d.Check != disturb.CheckThrottled &&
				d.Check != disturb.CheckStallReach &&
				d.Check != disturb.CheckWallStep
		})
		if assert.True(t, a.Reason == report.AbortDisturbed && own, "%s attempt %d discarded on a quiet host: %s %v",
			a.Unit, a.Attempt, a.Reason, a.Disturbances) {
			t.Logf("%s attempt %d discarded for the client's own stall: %v", a.Unit, a.Attempt, a.Disturbances)
		}
	}
}

func medianP95(runs []report.Run) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, r.P95Ms)
	}
	return stats.Median(xs)
}
