package safety

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// feed adds one point per interval with the given shares.
func feed(s *Stop, from time.Time, shares ...float64) time.Time {
	for _, v := range shares {
		from = from.Add(s.cfg.Interval)
		s.Add(Point{At: from, Outside: v})
	}
	return from
}

func newStop() *Stop { return &Stop{cfg: DefaultConfig()} }

func TestTripsAfterWindowOnly(t *testing.T) {
	s := newStop()
	m := s.Begin()
	// 7 intervals over (1.75 s), then calm: no trip.
	at := feed(s, t0, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.1)
	_, tripped := s.End(m)
	assert.False(t, tripped, "tripped after 1.75 s over the threshold")
	m = s.Begin()
	// 8 intervals over (2 s): one trip, extended while it lasts.
	feed(s, at, 0.92, 0.95, 0.99, 0.95, 0.95, 0.95, 0.95, 0.95, 0.97)
	trip, tripped := s.End(m)
	require.True(t, tripped)
	assert.Equal(t, 0.99, trip.Peak)
	assert.Len(t, s.Summary().Trips, 1, "one span is one trip")
	assert.Equal(t, 2250*time.Millisecond, trip.To.Sub(trip.From))
	// The threshold itself does not trip.
	s2 := newStop()
	feed(s2, t0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9)
	assert.Empty(t, s2.Summary().Trips)
}

// A trip already in progress when a unit begins counts for that unit; one
// that ended before it does not. Statistics cover units only.
func TestTripInProgressAtBegin(t *testing.T) {
	s := newStop()
	at := feed(s, t0, 1, 1, 1, 1, 1, 1, 1, 1, 1) // tripped, still over
	m := s.Begin()
	at = feed(s, at, 0.1)
	_, tripped := s.End(m)
	assert.True(t, tripped, "a unit that began inside a trip was kept")
	m = s.Begin()
	feed(s, at, 0.2, 0.3)
	_, tripped = s.End(m)
	assert.False(t, tripped, "a unit that began after the trip ended was discarded")
	sum := s.Summary()
	assert.Equal(t, 3, sum.Samples, "points outside units were counted")
	assert.Equal(t, 0.3, sum.MaxShare)
}

func TestWaitCalm(t *testing.T) {
	s := newStop()
	at := feed(s, t0, 1, 1, 1, 1, 1, 1, 1, 1)
	// Each sleep brings one calm point; calm needs 5 s of them.
	var slept int
	waited, err := s.WaitCalm(func(time.Duration) { slept++; at = feed(s, at, 0.2) })
	require.NoError(t, err)
	assert.Equal(t, int(DefaultCalm/DefaultInterval), slept)
	assert.Less(t, waited, time.Second, "WaitCalm measures real time, and the fake sleep takes none")

	s.cfg.MaxWait = 0
	feed(s, at, 1)
	_, err = s.WaitCalm(func(time.Duration) {})
	assert.ErrorIs(t, err, ErrNoCalm)
}

func TestOutside(t *testing.T) {
	assert.InDelta(t, 0.5, Outside(3*time.Second, time.Second, 2*time.Second, 2), 1e-9)
	assert.Equal(t, 0.0, Outside(time.Second, 2*time.Second, time.Second, 2), "clamped at 0")
	assert.Equal(t, 1.0, Outside(9*time.Second, 0, time.Second, 2), "clamped at 1")
	assert.Equal(t, 0.0, Outside(time.Second, 0, 0, 2))
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for name, mod := range map[string]func(*Config){
		"threshold 0":      func(c *Config) { c.Threshold = 0 },
		"threshold 1.5":    func(c *Config) { c.Threshold = 1.5 },
		"window too short": func(c *Config) { c.Window = c.Interval },
		"calm over max":    func(c *Config) { c.Calm = c.MaxWait + time.Second },
	} {
		c := DefaultConfig()
		mod(&c)
		assert.Error(t, c.Validate(), name)
	}
}

// TestHostReads reads a fixture host: /proc/stat's busy time (user, nice,
// system, irq, softirq; not steal), the harness' own CPU, and the lab's
// containers' cgroup counters, v1 and v2, keeping a removed container's
// last counter.
func TestHostReads(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	// USER_HZ is 100: 1000 ticks are 10 s.
	write("proc/stat", "cpu  1000 100 400 5000 50 10 20 300 0 0\ncpu0 500 50 200 2500 25 5 10 150 0 0\ncpu1 500 50 200 2500 25 5 10 150 0 0\n")
	write("proc/42/stat", "42 (bench.test) S 1 42 42 0 -1 4194304 0 0 0 0 150 50 0 0 20 0 1 0 1 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n")
	require.NoError(t, os.Symlink("42", filepath.Join(root, "proc/self")))
	write("cgroup/cpuacct/docker/aaa/cpuacct.usage", "3000000000\n")
	write("cgroup/system.slice/docker-bbb.scope/cpu.stat", "usage_usec 1500000\nuser_usec 1000000\n")
	ids := []string{"aaa", "bbb", "not-on-this-host"}
	h := &Host{ProcRoot: filepath.Join(root, "proc"), CgroupRoot: filepath.Join(root, "cgroup"), Containers: func() []string { return ids }}
	busy, lab, cores, err := h.Read()
	require.ErrorIs(t, err, ErrPartial, "a container without a counter went unsaid")
	assert.ErrorContains(t, err, "not-on-this-")
	assert.Equal(t, 2, cores)
	assert.Equal(t, 15300*time.Millisecond, busy, "user+nice+system+irq+softirq")
	assert.Equal(t, 6500*time.Millisecond, lab, "3 s + 1.5 s + the harness' 2 s")

	ids = []string{"bbb"} // aaa was removed: its 3 s stay in the total
	require.NoError(t, os.RemoveAll(filepath.Join(root, "cgroup/cpuacct/docker/aaa")))
	_, lab, _, err = h.Read()
	require.NoError(t, err)
	assert.Equal(t, 6500*time.Millisecond, lab)
}

// Held is the highest share held for n points without a break.
func TestHeld(t *testing.T) {
	pts := func(shares ...float64) []Point {
		var ps []Point
		for i, v := range shares {
			ps = append(ps, Point{At: t0.Add(time.Duration(i) * DefaultInterval), Outside: v})
		}
		return ps
	}
	assert.Equal(t, 0.9, Held(pts(0.1, 0.9, 0.2), 1), "one point: the peak")
	assert.Equal(t, 0.5, Held(pts(0.1, 0.9, 0.5, 0.2, 0.3), 2), "a single spike is not held")
	assert.Equal(t, 0.6, Held(pts(0.1, 0.9, 0.5, 0.2, 0.6, 0.7, 0.65), 3))
	assert.Equal(t, 0.0, Held(pts(0.9, 0.9), 3), "shorter than the window: never held")
	assert.Equal(t, 0.0, Held(nil, 2))
}

// Points gives back the points whose intervals overlap a window, from
// the stop's history, and only those.
func TestPoints(t *testing.T) {
	s := newStop()
	end := feed(s, t0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6) // at 0.25 s ... 1.5 s
	got := s.Points(t0.Add(500*time.Millisecond), t0.Add(time.Second))
	var shares []float64
	for _, p := range got {
		shares = append(shares, p.Outside)
	}
	// The point at 0.5 s covers (0.25, 0.5]: outside; at 1.25 s covers (1, 1.25]: outside.
	assert.Equal(t, []float64{0.3, 0.4}, shares)
	assert.True(t, s.Covers(end), "a point covers the last instant fed")
	assert.Len(t, s.Points(t0.Add(-time.Hour), end.Add(time.Hour)), 6)

	// The history keeps DefaultHistory, at most twice that between trims.
	long := newStop()
	n := 3 * int(DefaultHistory/DefaultInterval)
	shares = make([]float64, n)
	feed(long, t0, shares...)
	assert.LessOrEqual(t, len(long.history), 2*int(DefaultHistory/DefaultInterval))
	assert.GreaterOrEqual(t, len(long.history), int(DefaultHistory/DefaultInterval))
}

// WaitCalmUnder waits for calm at its own threshold, lower than the stop's.
func TestWaitCalmUnder(t *testing.T) {
	s := newStop()
	at := feed(s, t0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5)
	waited, err := s.WaitCalm(func(time.Duration) { t.Fatal("calm under 90 % already") })
	require.NoError(t, err)
	assert.Less(t, waited, time.Second)
	var slept int
	_, err = s.WaitCalmUnder(0.4, 0, func(time.Duration) { slept++; at = feed(s, at, 0.1) })
	require.NoError(t, err)
	assert.Equal(t, int(DefaultCalm/DefaultInterval), slept, "5 s of points under 40 %")

	// With a window, a single interval over the threshold (the series' own
	// Docker work) does not break the calm; two in a row do.
	at = feed(s, at, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.55)
	_, err = s.WaitCalmUnder(0.4, 500*time.Millisecond, func(time.Duration) { t.Fatal("one spike broke the calm") })
	require.NoError(t, err)
	at = feed(s, at, 0.55)
	slept = 0
	_, err = s.WaitCalmUnder(0.4, 500*time.Millisecond, func(time.Duration) { slept++; at = feed(s, at, 0.1) })
	require.NoError(t, err)
	assert.Equal(t, int(DefaultCalm/DefaultInterval)-1, slept, "two intervals over it held it: calm once they left the last 5 s")
}
