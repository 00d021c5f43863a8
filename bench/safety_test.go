package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
)

// testSafety is the stop TestSafetyStop arms: 70 % of the host for 1.5 s.
// Two spinning shells beside a run's pod held 90 % (peak 100 %) over their
// trip; a quiet run of direct-0dl peaked at 54 % for one 250 ms interval
// (starting and removing containers costs Docker CPU outside any
// container), with a mean of 5 %.
var testSafety = safety.Config{Threshold: 0.7, Window: 1500 * time.Millisecond, Interval: safety.DefaultInterval,
	Calm: 2 * time.Second, MaxWait: time.Minute}

// TestSafetyStop runs a short direct-0dl (24 /fast requests, a 3 s
// window: the stop, not the figures, is under test) under its own safety
// stop, twice: once on a quiet host, where nothing may be aborted, and
// once while two bounded CPU hogs outside the lab spin for 6 s from the
// run's start, longer than its first attempt. That run must be discarded,
// recorded as an abort, and run again after the host calms down, ending
// valid.
func TestSafetyStop(t *testing.T) {
	c := engine.ArticleA[0]
	require.Equal(t, "direct-0dl", c.ID)
	c.ID, c.FastRequests = "safety-direct-0dl", 24
	e := env
	e.Safety = report.Safety{Enabled: true, Threshold: testSafety.Threshold, WindowS: testSafety.Window.Seconds()}
	guarded := *lab
	guarded.Reports = engine.NewReports(t.TempDir(), &e)
	guarded.Journal = nil
	guarded.WholeRuns = true // the hogs' attempt runs until the stop trips
	stop, err := safety.Start(testSafety, &safety.Host{ProcRoot: "/proc", CgroupRoot: "/sys/fs/cgroup",
		Containers: lab.Session.ContainerIDs})
	require.NoError(t, err)
	t.Cleanup(stop.Close)
	guarded.Safety = stop

	r, err := guarded.RunA(t, c, 1)
	require.NoError(t, err)
	assert.True(t, r.Valid, r.Invalid)
	quiet := stop.Summary()
	assert.Empty(t, tripsOf(e.Safety.Aborts), "a quiet run was aborted: outside share peaked at %.2f", quiet.MaxShare)
	t.Logf("quiet run: outside share max %.3f, mean %.3f over %d samples", quiet.MaxShare, quiet.MeanShare, quiet.Samples)

	// Two shells spinning for 6 s, bounded by timeout(1) and the context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		hog := exec.CommandContext(ctx, "timeout", "6", "sh", "-c", "while :; do :; done")
		require.NoError(t, hog.Start())
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
	start := time.Now()
	r, err = guarded.RunA(t, c, 2)
	require.NoError(t, err)
	assert.True(t, r.Valid, r.Invalid)
	trips := tripsOf(e.Safety.Aborts)
	require.NotEmpty(t, trips, "the hogs went unnoticed: %+v", stop.Summary())
	a := trips[0]
	assert.Equal(t, "safety-direct-0dl run 2", a.Unit)
	assert.Equal(t, 1, a.Attempt)
	assert.Greater(t, a.PeakShare, testSafety.Threshold)
	t.Logf("aborts %+v; the run ended valid after %v", e.Safety.Aborts, time.Since(start).Round(time.Millisecond))
}

// tripsOf are the aborts the safety stop itself made: the redo rule may
// also discard a run for the client's own rare stall (TestRedo), which is
// not this test's business.
func tripsOf(aborts []report.Abort) []report.Abort {
	var out []report.Abort
	for _, a := range aborts {
		if a.Reason == report.AbortSafetyStop {
			out = append(out, a)
		}
	}
	return out
}
