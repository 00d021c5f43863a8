package load

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request is charged the meter's stretches within it: nothing between
// them, a stretch's part at either end, and every stretch inside.
func TestHiccupOver(t *testing.T) {
	ms := time.Millisecond
	hs := []Hiccup{{At: 10 * ms, Late: 4 * ms}, {At: 20 * ms, Late: 12 * ms}, {At: 40 * ms, Late: 3 * ms}}
	for _, tc := range []struct{ from, to, want time.Duration }{
		{0, 10 * ms, 0},
		{14 * ms, 20 * ms, 0},
		{12 * ms, 22 * ms, 4 * ms},
		{0, 50 * ms, 19 * ms},
		{25 * ms, 26 * ms, ms},
		{41 * ms, 60 * ms, 2 * ms},
		{50 * ms, 60 * ms, 0},
	} {
		assert.Equal(t, tc.want, HiccupOver(hs, tc.from, tc.to), "%v..%v", tc.from, tc.to)
	}
	assert.Zero(t, HiccupOver(nil, 0, time.Second))
}

// The meter catches a stall of the client's own goroutines: with one P, a
// goroutine that spins for 40 ms holds the meter's goroutine until the
// runtime preempts it (after 10 ms), and the meter records the stretch
// from its due wake, late by several milliseconds. Quiet, it wakes every
// 2 ms and records next to nothing.
func TestHiccupMeterSeesAStall(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	start := time.Now()
	m := startHiccups(DefaultHiccupEvery, start)
	time.Sleep(100 * time.Millisecond)
	spinFrom := time.Since(start)
	for t0 := time.Now(); time.Since(t0) < 40*time.Millisecond; {
	}
	time.Sleep(50 * time.Millisecond)
	var res Result
	m.stop(&res)
	assert.Greater(t, res.HiccupTicks, 40, "about 85 wakes in 190 ms")
	require.NotEmpty(t, res.Hiccups)
	// The spin's hiccup: the latest wake of those due while it spun (a
	// busy machine may add others).
	var spun *Hiccup
	for i, h := range res.Hiccups {
		if h.At >= spinFrom-DefaultHiccupEvery && h.At < spinFrom+40*time.Millisecond && (spun == nil || h.Late > spun.Late) {
			spun = &res.Hiccups[i]
		}
	}
	require.NotNil(t, spun, "none due while the spin ran from %v: %+v", spinFrom, res.Hiccups)
	assert.Greater(t, spun.Late, 3*time.Millisecond, "held by the spin: %+v", *spun)
	assert.GreaterOrEqual(t, spun.End(), spinFrom+5*time.Millisecond)

	var none Result
	(*hiccupMeter)(nil).stop(&none)
	assert.Zero(t, none.HiccupTicks, "no meter, no record")
}

// A run with HiccupEvery meters its load; with the early stop on, it stops
// on its worst lag but not on the second-worst, which the meter witnesses
// instead.
func TestRunMetersHiccups(t *testing.T) {
	srv, _ := server(t, 1<<10)
	spec := NewSpec(srv.URL, "t")
	spec.FastCount, spec.FastRate, spec.FastOffset = 8, 40, 10*time.Millisecond
	spec.HiccupEvery = DefaultHiccupEvery
	spec.StopOnLag = &LagStop{Worst: time.Hour, Second: time.Nanosecond}
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Empty(t, res.Stopped, "the second lag does not stop a metered run")
	assert.Greater(t, res.HiccupTicks, 50, "about 100 wakes over 0.2 s")
	for _, p := range res.Fast {
		assert.True(t, p.OK(spec), "%+v", p)
	}

	spec.HiccupEvery = 0
	res, err = Run(context.Background(), spec)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Stopped, "unmetered, the second lag stops it")
	assert.Zero(t, res.HiccupTicks)

	spec.HiccupEvery = time.Microsecond
	assert.ErrorContains(t, spec.Validate(), "HiccupEvery")
}
