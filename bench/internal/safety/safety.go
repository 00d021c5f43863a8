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

// ErrNoCalm is WaitCalm's error when MaxWait passed without calm.
var ErrNoCalm = errors.New("safety: the host did not calm down")

// WaitCalm returns once the last Calm of points all lie at or under the
// threshold, or ErrNoCalm after MaxWait. It returns the time it waited.
func (s *Stop) WaitCalm(sleep func(time.Duration)) (time.Duration, error) {
	start := time.Now()
	for waited := time.Duration(0); ; waited = time.Since(start) {
		if s.calm() {
			return waited, nil
		}
		if waited >= s.cfg.MaxWait {
			return waited, fmt.Errorf("%w within %v: outside share over %.0f %%", ErrNoCalm, s.cfg.MaxWait, 100*s.cfg.Threshold)
		}
		sleep(s.cfg.Interval)
	}
}

func (s *Stop) calm() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	need := int(s.cfg.Calm / s.cfg.Interval)
	if len(s.points) < need {
		return false
	}
	for _, p := range s.points[len(s.points)-need:] {
		if p.Outside > s.cfg.Threshold {
			return false
		}
	}
	return true
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
