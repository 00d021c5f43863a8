package probe

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The quiet count is the one that held for the span in every role the
// pod has: a worker importing a module (a file held for a tick), a tick
// that did not sort or lacks the proxy, each starts the span over.
func TestQuietWatch(t *testing.T) {
	q := newQuietWatch(SamplerSpec{QuietFor: 100 * time.Millisecond, ProxyPort: 8080})
	sample := func(app, proxy int) []FDSample {
		s := []FDSample{{Role: "app", Sockets: 2, Files: app - 2}}
		if proxy >= 0 {
			s = append(s, FDSample{Role: "proxy", Sockets: 3, Files: proxy - 3})
		}
		return s
	}
	ms := func(n int) int64 { return int64(n) * int64(time.Millisecond) }
	steps := []struct {
		at    int
		tick  []FDSample
		quiet bool
		why   string
	}{
		{0, sample(25, 40), false, "the span starts"},
		{50, sample(26, 40), false, "a worker importing holds a file: over again"},
		{100, sample(25, 40), false, "over again"},
		{150, sample(25, -1), false, "no proxy sample: over again"},
		{200, sample(25, 40), false, "over again"},
		{250, []FDSample{{Role: "app", FDs: 30}, {Role: "proxy", Sockets: 3, Files: 37}}, false, "unsorted: over again"},
		{300, sample(25, 40), false, "the span starts"},
		{350, sample(25, 40), false, "50 ms"},
		{400, sample(25, 40), true, "100 ms"},
	}
	for _, s := range steps {
		got := q.observe(s.tick, ms(s.at))
		if s.quiet {
			assert.Equal(t, map[string]int{"app": 25, "proxy": 40}, got, s.why)
		} else {
			assert.Nil(t, got, s.why)
		}
	}
	assert.Equal(t, "app 25 proxy 40", q.String())
	assert.Equal(t, "app unsorted", newQuietWatch(SamplerSpec{}).String())
}

// QuietFor is refused under a process listing's period, where a worker
// that starts late goes unseen, and past half the wait it has.
func TestSampleRefusesQuietFor(t *testing.T) {
	spec := SamplerSpec{Interval: 50 * time.Millisecond, ProcRoot: probeProc, Containers: map[string]string{"app": "none"}, QuietFor: time.Second}
	_, err := Sample(context.Background(), spec)
	assert.ErrorContains(t, err, "SamplerSpec.QuietFor 1s with no ReadyAddr: want a ready signal to hold back")
	spec.ReadyAddr = "@wsgilab-quiet-test"
	for _, d := range []time.Duration{500 * time.Millisecond, 4 * time.Second} {
		spec.QuietFor = d
		_, err := Sample(context.Background(), spec)
		assert.ErrorContains(t, err, "SamplerSpec.QuietFor "+d.String()+": want 0 or from a process listing's period (1s) to half of MaxQuietWait (3s)")
	}
}
