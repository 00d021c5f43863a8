// Package safety is the series' host safety stop, as article A's own
// series had: it watches the host's CPU outside the lab's containers and
// trips when that share stays above a threshold for a window. The engine
// then discards the run in progress, waits for calm and runs it again.
//
// The share outside the lab is the host's busy CPU time (/proc/stat) less
// what the lab's containers used (their cgroups' CPU counters) and less
// the harness' own process, over each interval, as a fraction of all
// cores. Readers take root paths, so fixture trees stand in for /proc and
// /sys/fs/cgroup in tests.
package safety

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultThreshold is the share of the host's CPU, outside the lab,
	// above which the stop trips.
	DefaultThreshold = 0.90
	// DefaultWindow is how long the share must stay above the threshold.
	DefaultWindow = 2 * time.Second
	// DefaultInterval is the sampling interval.
	DefaultInterval = 250 * time.Millisecond
	// DefaultCalm is how long the share must stay at or under the
	// threshold before the series goes on.
	DefaultCalm = 5 * time.Second
	// DefaultMaxWait bounds one wait for calm.
	DefaultMaxWait = 10 * time.Minute
	// DefaultHistory is how far back Points reaches: longer than any
	// run's window and its collection.
	DefaultHistory = 5 * time.Minute
)

// Config sets the stop.
type Config struct {
	// Threshold is a share of all the host's cores, in (0, 1).
	Threshold float64
	// Window is how long the outside share must exceed Threshold, at
	// least two Intervals.
	Window time.Duration
	// Interval is how often the host is sampled.
	Interval time.Duration
	// Calm is how long the share must stay at or under Threshold before
	// WaitCalm returns; MaxWait bounds that wait.
	Calm, MaxWait time.Duration
}

// DefaultConfig is the article's stop: 90 % for 2 s.
func DefaultConfig() Config {
	return Config{Threshold: DefaultThreshold, Window: DefaultWindow, Interval: DefaultInterval,
		Calm: DefaultCalm, MaxWait: DefaultMaxWait}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case !(c.Threshold > 0 && c.Threshold < 1):
		return fmt.Errorf("safety: threshold %v is not a share in (0, 1): a share is at most 1, and the stop trips above it", c.Threshold)
	case c.Interval <= 0:
		return fmt.Errorf("safety: interval %v is not positive", c.Interval)
	case c.Window < 2*c.Interval:
		return fmt.Errorf("safety: window %v is shorter than two intervals of %v", c.Window, c.Interval)
	case c.Calm < c.Interval || c.MaxWait < c.Calm:
		return fmt.Errorf("safety: calm %v and max wait %v must satisfy interval <= calm <= max wait", c.Calm, c.MaxWait)
	}
	return nil
}

// Point is one interval's CPU share outside the lab, 0 to 1.
type Point struct {
	At      time.Time `json:"at"`
	Outside float64   `json:"outside_share"`
}

// Trip is one span over the threshold that lasted at least the window.
type Trip struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Peak and Mean are the outside share's largest and average values
	// over the span.
	Peak float64 `json:"peak_share"`
	Mean float64 `json:"mean_share"`
}

// ErrPartial marks a Source's read whose figures are usable but
// incomplete (a container's counter was not found); the stop uses them
// and reports the error in its Summary.
var ErrPartial = errors.New("safety: partial read")

// Source reads the host's CPU counters: busy is all CPU time used on the
// host and lab the part the lab used, both cumulative; cores is the
// host's CPU count.
type Source interface {
	Read() (busy, lab time.Duration, cores int, err error)
}

// Stop watches a Source. Its zero value is not usable; use Start.
type Stop struct {
	cfg Config
	src Source

	mu      sync.Mutex
	points  []Point // the last points, enough for Window and Calm
	history []Point // the points of the last DefaultHistory, for Points
	trips   []Trip
	over    []Point // the current span over the threshold
	tripped bool    // the current span was counted as a trip
	active  int     // units in progress (Begin without End)
	maxSeen float64
	sum     float64
	n       int
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
}

// Start samples src every cfg.Interval until Close.
func Start(cfg Config, src Source) (*Stop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	busy, lab, _, err := src.Read()
	if err != nil && !errors.Is(err, ErrPartial) {
		return nil, fmt.Errorf("safety: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Stop{cfg: cfg, src: src, cancel: cancel, done: make(chan struct{})}
	go s.loop(ctx, busy, lab)
	return s, nil
}

func (s *Stop) loop(ctx context.Context, busy, lab time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			b, l, c, err := s.src.Read()
			if err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
				if !errors.Is(err, ErrPartial) {
					continue
				}
			}
			s.Add(Point{At: now, Outside: Outside(b-busy, l-lab, now.Sub(last), c)})
			busy, lab, last = b, l, now
		}
	}
}

// Outside is the share of cores' time over elapsed that busy used beyond
// lab, clamped to [0, 1].
func Outside(busy, lab, elapsed time.Duration, cores int) float64 {
	if elapsed <= 0 || cores <= 0 {
		return 0
	}
	share := float64(busy-lab) / (float64(elapsed) * float64(cores))
	return min(max(share, 0), 1)
}

// Add records one point; Start's loop calls it, tests call it directly.
func (s *Stop) Add(p Point) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points = append(s.points, p)
	if keep := int((s.cfg.Window+s.cfg.Calm)/s.cfg.Interval) + 2; len(s.points) > keep {
		s.points = s.points[len(s.points)-keep:]
	}
	s.history = append(s.history, p)
	if keep := int(DefaultHistory / s.cfg.Interval); len(s.history) > 2*keep {
		s.history = append(s.history[:0], s.history[len(s.history)-keep:]...)
	}
	if s.active > 0 {
		s.maxSeen = max(s.maxSeen, p.Outside)
		s.sum += p.Outside
		s.n++
	}
	if p.Outside <= s.cfg.Threshold {
		s.over, s.tripped = nil, false
		return
	}
	s.over = append(s.over, p)
	// The span covers the intervals ending at its points: from one
	// interval before its first point.
	from := s.over[0].At.Add(-s.cfg.Interval)
	if p.At.Sub(from) < s.cfg.Window {
		return
	}
	t := spanTrip(from, s.over)
	if s.tripped {
		s.trips[len(s.trips)-1] = t
	} else {
		s.trips = append(s.trips, t)
		s.tripped = true
	}
}

func spanTrip(from time.Time, over []Point) Trip {
	t := Trip{From: from, To: over[len(over)-1].At}
	var sum float64
	for _, p := range over {
		t.Peak = max(t.Peak, p.Outside)
		sum += p.Outside
	}
	t.Mean = sum / float64(len(over))
	return t
}

// Mark is where a unit began in the stop's trips.
type Mark int

// Begin marks the start of a unit (a run). A trip already in progress
// counts for it, and the stop's statistics (Summary) cover the time some
// unit is in progress: the noise the measurements saw, not the tests
// around them.
func (s *Stop) Begin() Mark {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	n := len(s.trips)
	if s.tripped {
		n-- // the span over the threshold goes on into this unit
	}
	return Mark(n)
}

// End ends the unit begun at m and returns the first trip since, if any:
// a unit that overlapped it was disturbed.
func (s *Stop) End(m Mark) (Trip, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = max(s.active-1, 0)
	if int(m) < len(s.trips) {
		return s.trips[m], true
	}
	return Trip{}, false
}

// Points are the points whose intervals overlap [from, to], oldest
// first, as far back as DefaultHistory: the host's noise during one run's
// window. A point covers the Interval that ends at its At.
func (s *Stop) Points(from, to time.Time) []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Point
	for _, p := range s.history {
		if p.At.After(from) && p.At.Add(-s.cfg.Interval).Before(to) {
			out = append(out, p)
		}
	}
	return out
}

// Covers waits, at most two intervals, until the stop has a point that
// covers t (a window's end), so Points up to t is whole; false if none
// came.
func (s *Stop) Covers(t time.Time) bool {
	deadline := time.Now().Add(2 * s.cfg.Interval)
	for {
		s.mu.Lock()
		ok := len(s.history) > 0 && !s.history[len(s.history)-1].At.Before(t)
		s.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return ok
		}
		time.Sleep(s.cfg.Interval / 10)
	}
}

// Interval is the stop's sampling interval.
func (s *Stop) Interval() time.Duration { return s.cfg.Interval }

// Held is the highest share the points held for n consecutive points:
// the largest, over every run of n points, of the run's lowest share. A
// host that "stayed above x for n intervals" has Held > x. With fewer
// than n points it is 0: the span never lasted n intervals.
func Held(points []Point, n int) float64 {
	if n < 1 || len(points) < n {
		return 0
	}
	held := 0.0
	for i := 0; i+n <= len(points); i++ {
		low := points[i].Outside
		for _, p := range points[i+1 : i+n] {
			low = min(low, p.Outside)
		}
		held = max(held, low)
	}
	return held
}

// ErrNoCalm is WaitCalm's error when MaxWait passed without calm.
var ErrNoCalm = errors.New("safety: the host did not calm down")

// WaitCalm returns once the last Calm of points all lie at or under the
// threshold, or ErrNoCalm after MaxWait. It returns the time it waited.
func (s *Stop) WaitCalm(sleep func(time.Duration)) (time.Duration, error) {
	return s.WaitCalmUnder(s.cfg.Threshold, 0, sleep)
}

// WaitCalmUnder is WaitCalm at another threshold, the redo rule's, lower
// than the stop's, after a run it judged disturbed: calm is the last Calm
// of points never holding above threshold for window (Held), so a single
// interval of the series' own Docker work between runs does not count; a
// window of 0 asks every point to stay at or under it.
func (s *Stop) WaitCalmUnder(threshold float64, window time.Duration, sleep func(time.Duration)) (time.Duration, error) {
	n := max(1, int((window+s.cfg.Interval/2)/s.cfg.Interval))
	start := time.Now()
	for waited := time.Duration(0); ; waited = time.Since(start) {
		if s.calm(threshold, n) {
			return waited, nil
		}
		if waited >= s.cfg.MaxWait {
			return waited, fmt.Errorf("%w within %v: outside share over %.0f %%", ErrNoCalm, s.cfg.MaxWait, 100*threshold)
		}
		sleep(s.cfg.Interval)
	}
}

// calm is whether the last Calm of points never held above threshold for
// n points.
func (s *Stop) calm(threshold float64, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	need := int(s.cfg.Calm / s.cfg.Interval)
	if len(s.points) < need {
		return false
	}
	return Held(s.points[len(s.points)-need:], n) <= threshold
}

// Summary is the stop's record of a series.
type Summary struct {
	Threshold float64 `json:"threshold_share"`
	WindowS   float64 `json:"window_s"`
	// Samples, MaxShare and MeanShare describe the points taken while a
	// unit was in progress: the machine's noise outside the lab during
	// the measurements.
	Samples   int     `json:"samples"`
	MaxShare  float64 `json:"max_outside_share"`
	MeanShare float64 `json:"mean_outside_share"`
	Trips     []Trip  `json:"trips"`
	// ReadError is the last failed read, if any.
	ReadError string `json:"read_error,omitempty"`
}

// Summary reports what the stop saw so far.
func (s *Stop) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := Summary{Threshold: s.cfg.Threshold, WindowS: s.cfg.Window.Seconds(), Samples: s.n, MaxShare: s.maxSeen,
		Trips: append([]Trip{}, s.trips...)}
	if s.n > 0 {
		sum.MeanShare = s.sum / float64(s.n)
	}
	if s.err != nil {
		sum.ReadError = s.err.Error()
	}
	return sum
}

// Close stops sampling.
func (s *Stop) Close() {
	s.cancel()
	<-s.done
}
