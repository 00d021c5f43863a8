package labrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
	"wsgilab/bench/internal/stack"
)

// quietHost is a host on which nothing runs outside the lab.
type quietHost struct{}

func (quietHost) Read() (busy, lab time.Duration, cores int, err error) { return 0, 0, 2, nil }

// guardedLab is a Lab with a running safety stop on a quiet host, whose
// calm comes after one interval, and its own reports.
func guardedLab(t *testing.T) (*Lab, *report.Environment) {
	t.Helper()
	cfg := safety.Config{Threshold: 0.9, Window: 20 * time.Millisecond, Interval: 10 * time.Millisecond,
		Calm: 10 * time.Millisecond, MaxWait: 5 * time.Second}
	stop, err := safety.Start(cfg, quietHost{})
	require.NoError(t, err)
	t.Cleanup(stop.Close)
	env := &report.Environment{}
	l := &Lab{Safety: stop, Reports: engine.NewReports(t.TempDir(), env), Pause: func(d time.Duration) { time.Sleep(min(d, cfg.Interval)) }}
	l.Settings.Safety = engine.SafetySettings{Enabled: true, Config: cfg, Redo: disturb.DefaultRule()}
	return l, env
}

func disturbed(lag float64) *discard {
	return &discard{calm: 0.4, abort: report.Abort{Disturbances: []report.Disturbance{{Check: disturb.CheckLag, Measured: lag, Bound: 25, Unit: "ms"}},
		Figures: &report.RunNoise{LagMaxMs: lag}}}
}

// A disturbed attempt is discarded, recorded with its reason and figures,
// and run again; the undisturbed attempt ends the unit.
func TestAttemptRedoesDisturbed(t *testing.T) {
	l, env := guardedLab(t)
	var tries []int
	err := l.attempt("direct-0dl run 1", []string{"direct-0dl"}, func(n int) (*discard, error) {
		tries = append(tries, n)
		if n < 3 {
			return disturbed(30 + float64(n)), nil
		}
		return nil, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, tries)
	require.Len(t, env.Safety.Aborts, 2)
	a := env.Safety.Aborts[1]
	assert.Equal(t, "direct-0dl run 1", a.Unit)
	assert.Equal(t, 2, a.Attempt)
	assert.Equal(t, report.AbortDisturbed, a.Reason)
	assert.Equal(t, 32.0, a.Disturbances[0].Measured)
	assert.Empty(t, env.Safety.TooBusy)
	b, err := os.ReadFile(filepath.Join(l.Reports.Dir(), "environment.json"))
	require.NoError(t, err, "an abort is written at once")
	assert.Contains(t, string(b), `"reason": "disturbed"`)
}

// A run the CPU outside the lab disturbed waits for calm before its
// redo; one only the client's own stall or a clock step disturbed is
// redone at once, but for its second discard in a row.
func TestAttemptWaitsOnlyForTheHost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		check    string
		discards int
		wait     bool
		why      string
	}{
		{"the client's lag", disturb.CheckLag, 1, false, "the client's own stall"},
		{"the client's throttling", disturb.CheckThrottled, 1, false, "the client's own stall"},
		{"a step of the time of day", disturb.CheckWallStep, 1, false, "the time of day stepped"},
		{"the client's stall twice in a row", disturb.CheckLag, 2, true, ""},
		{"the CPU outside the lab", disturb.CheckOutside, 1, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, env := guardedLab(t)
			// A host that is never calm: a wait would end in ErrNoCalm.
			cfg := l.Settings.Safety.Config
			cfg.Threshold, cfg.MaxWait = 0.01, 30*time.Millisecond
			stop, err := safety.Start(cfg, busyHost{})
			require.NoError(t, err)
			t.Cleanup(stop.Close)
			l.Safety = stop
			var rec strings.Builder
			l.Log = &rec
			err = l.attempt("direct-0dl run 1", []string{"direct-0dl"}, func(n int) (*discard, error) {
				if n <= tc.discards {
					return &discard{wait: tc.check == disturb.CheckOutside, calm: 0.01, window: 10 * time.Millisecond,
						abort: report.Abort{Disturbances: []report.Disturbance{{Check: tc.check, Measured: 1, Bound: 0.5}}}}, nil
				}
				return nil, nil
			})
			if tc.wait {
				require.ErrorIs(t, err, safety.ErrNoCalm, "it waited for a calm that never came")
				return
			}
			require.NoError(t, err)
			require.Len(t, env.Safety.Aborts, 1)
			assert.Zero(t, env.Safety.Aborts[0].WaitedS)
			assert.Contains(t, rec.String(), "redone at once: "+tc.why)
		})
	}
}

// busyHost is a host whose one core is always busy outside the lab.
type busyHost struct{}

func (busyHost) Read() (busy, lab time.Duration, cores int, err error) {
	return time.Duration(time.Now().UnixNano()), 0, 1, nil
}

// A unit disturbed in every attempt is "machine too busy": an error that
// says so, and a record that keeps every verdict on it from being judged.
func TestAttemptGivesUpTooBusy(t *testing.T) {
	l, env := guardedLab(t)
	var paused []time.Duration // the backoff's pauses, not the calm wait's polls
	l.Pause = func(d time.Duration) {
		if d < time.Second {
			time.Sleep(d)
			return
		}
		paused = append(paused, d.Round(time.Second))
	}
	n := 0
	err := l.attempt("nginx-on-2dl run 3", []string{"nginx-on-2dl"}, func(int) (*discard, error) {
		n++
		return disturbed(30), nil
	})
	require.ErrorIs(t, err, ErrTooBusy)
	assert.ErrorContains(t, err, fmt.Sprintf("nginx-on-2dl run 3: machine too busy: %d attempts, each disturbed (the last: disturbed: lag 30 ms > 25)", disturb.DefaultMaxAttempts))
	assert.Equal(t, disturb.DefaultMaxAttempts, n)
	assert.Len(t, env.Safety.Aborts, disturb.DefaultMaxAttempts)
	s := time.Second
	assert.Equal(t, []time.Duration{5 * s, 10 * s, 20 * s, 40 * s, 40 * s, 40 * s}, paused,
		"after the second discard and on, doubling, and none after the last")
	assert.InDelta(t, 40, env.Safety.Aborts[5].WaitedS, 0.5, "the pause is recorded as the wait")
	require.Len(t, env.Safety.TooBusy, 1)
	assert.Equal(t, "nginx-on-2dl", env.Safety.TooBusy[0].Condition)
	assert.Contains(t, engine.TooBusyByCondition(env.Safety.TooBusy)["nginx-on-2dl"], fmt.Sprintf("%d attempts", disturb.DefaultMaxAttempts))
}

// An attempt that fails is not redone (the failure is the result), and
// without a safety stop nothing is judged or redone.
func TestAttemptFailureAndNoStop(t *testing.T) {
	l, env := guardedLab(t)
	boom := errors.New("boom")
	err := l.attempt("u", []string{"c"}, func(int) (*discard, error) { return nil, boom })
	assert.ErrorIs(t, err, boom)
	assert.Empty(t, env.Safety.Aborts)

	l.Safety = nil
	calls := 0
	require.NoError(t, l.attempt("u", []string{"c"}, func(int) (*discard, error) { calls++; return disturbed(50), nil }))
	assert.Equal(t, 1, calls)
}

// RunPod judges a pod the caller opens as RunA judges its own: a
// disturbed record is discarded and its pod removed (the attempt's
// cleanups run) before the next attempt opens its own; the kept record is
// returned with the safety stop's samples over its load. Its discards'
// raw records are named after the pod, apart from the series' runs of
// the same condition.
func TestRunPodRedoesADisturbedPod(t *testing.T) {
	l, env := guardedLab(t)
	c := engine.Pick(engine.ArticleA, "direct-0dl")[0]
	stepped := func(n int) engine.Record {
		rec := engine.Record{Condition: c.ID, Run: 1}
		rec.Load.StartUnixNano, rec.Load.Elapsed = time.Now().UnixNano(), time.Millisecond
		if n == 1 {
			rec.Load.WallStep = 5 * time.Millisecond
		}
		return rec
	}
	var events []string
	rec, err := l.RunPod(t, "kube-direct-0dl", c, func(tb stack.TB, n int) (engine.Record, error) {
		events = append(events, fmt.Sprintf("open %d", n))
		tb.Cleanup(func() { events = append(events, fmt.Sprintf("remove %d", n)) })
		return stepped(n), nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"open 1", "remove 1", "open 2", "remove 2"}, events)
	assert.Zero(t, rec.Load.WallStep, "the kept record is the second")
	assert.NotNil(t, rec.Host, "with the safety stop's samples over its load")
	require.Len(t, env.Safety.Aborts, 1)
	a := env.Safety.Aborts[0]
	assert.Equal(t, "kube-direct-0dl", a.Unit)
	assert.Equal(t, disturb.CheckWallStep, a.Disturbances[0].Check)
	assert.Equal(t, filepath.Join("raw", "discarded", "kube-direct-0dl-run1-attempt1.json"), a.Raw)

	// The series' own run 1 of direct-0dl, discarded, keeps its own file.
	err = l.attempt("direct-0dl run 1", []string{c.ID}, func(n int) (*discard, error) { return l.judgeA(c, c.ID, stepped(n), n) })
	require.NoError(t, err)
	require.Len(t, env.Safety.Aborts, 2)
	assert.Equal(t, filepath.Join("raw", "discarded", "direct-0dl-run1-attempt1.json"), env.Safety.Aborts[1].Raw)
	assert.FileExists(t, filepath.Join(l.Reports.Dir(), a.Raw), "the pod's discarded record, not overwritten")

	_, err = l.RunPod(t, "kube-direct-0dl", c, func(stack.TB, int) (engine.Record, error) { return engine.Record{}, errors.New("no pod") })
	assert.ErrorContains(t, err, "no pod", "an error is not a discard")

	_, err = l.RunPod(t, "kube-direct-0dl", c, func(stack.TB, int) (engine.Record, error) {
		rec := engine.Record{Condition: c.ID, Run: 1}
		rec.Load.WallStep = -5 * time.Millisecond
		return rec, nil
	})
	require.ErrorIs(t, err, ErrTooBusy)
	assert.NotContains(t, err.Error(), "no verdict is judged")
	assert.Empty(t, env.Safety.TooBusy, "the series' own runs of direct-0dl are not marked too busy")
}

// An attempt whose measure ends its goroutine (a Fatal on the attempt's
// TB) still removes its pod, and its error reaches the test.
func TestRunPodFatalRemovesThePod(t *testing.T) {
	l, _ := guardedLab(t)
	c := engine.Pick(engine.ArticleA, "direct-0dl")[0]
	rec := &recTB{}
	removed := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.RunPod(rec, "kube-direct-0dl", c, func(tb stack.TB, _ int) (engine.Record, error) {
			tb.Cleanup(func() { removed = true })
			tb.Fatalf("the pod never started")
			return engine.Record{}, nil
		})
	}()
	<-done
	assert.True(t, removed, "the attempt's pod is removed")
	assert.Contains(t, strings.Join(rec.errs, "\n"), "the pod never started")
	assert.Contains(t, strings.Join(rec.errs, "\n"), "attempt 1 ended before it returned")
}

// A run its client stopped for lag (load.Spec.StopOnLag) is discarded for
// that lag, with its record aside; a stopped run the rule would keep is
// an error, never a run: the two must agree.
func TestJudgeAStoppedRun(t *testing.T) {
	l, _ := guardedLab(t)
	c := engine.Pick(engine.ArticleA, "direct-0dl")[0]
	stopped := func(lag time.Duration) engine.Record {
		rec := engine.Record{Condition: c.ID, Run: 1}
		rec.Load.StartUnixNano, rec.Load.Elapsed = time.Now().UnixNano(), 3*time.Second
		rec.Load.Fast = []load.FastRequest{{Seq: 0, Lag: 40 * time.Microsecond}, {Seq: 1, Lag: lag}, {Seq: 2, Error: load.NotSent}}
		rec.Load.Stopped = "a /fast request started late"
		return rec
	}
	d, err := l.judgeA(c, c.ID, stopped(51*time.Millisecond), 1)
	require.NoError(t, err)
	require.NotNil(t, d)
	assert.Equal(t, disturb.CheckLag, d.abort.Disturbances[0].Check)
	assert.False(t, d.wait, "the client's own stall is redone at once")
	assert.NotEmpty(t, d.abort.Raw)

	d, err = l.judgeA(c, c.ID, stopped(2*time.Millisecond), 2)
	assert.Nil(t, d)
	assert.ErrorContains(t, err, "stopped early")
	assert.ErrorContains(t, err, "undisturbed")
}
