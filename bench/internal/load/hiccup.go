package load

import (
	"sync"
	"time"
)

// The client's hiccup meter, as jHiccup measures a JVM's: a goroutine of
// the client's own process that sleeps Spec.HiccupEvery at a time and
// records each wake later than HiccupFloor. A late wake is a stretch in
// which the client's goroutines could not run when due: its CPU quota was
// spent (CFS throttling), the host took its core (a VM that reports no
// steal time charges that to whatever ran), or its runtime held it up. A
// /fast request in flight then may have waited on the client, not on the
// server. The start lags see the same stalls, but only where a request is
// due, once in 125 ms at article A's pace; the meter sees them every 2 ms,
// so the redo rule can charge each request the stalls around it (the
// stall's reach into the p95: engine's ClientStall) instead of guessing
// from the second-worst start.

// DefaultHiccupEvery is the meter's sleep. 2 ms: a stall of 3 ms or more
// is always seen (its wake at least 1 ms late), and its wakes (about 450
// a second: each sleep counts from the wake before) cost the idle client 2 to 2.6 points of a core (direct-0dl's
// client: 1.3 % of a core without, 3.2 to 3.9 % with; its quota is 20 %),
// about what two slow downloads' paced reads cost it.
const DefaultHiccupEvery = 2 * time.Millisecond

// HiccupFloor is the least lateness the meter records: a quiet client's
// sleeps wake 0.1 to 0.2 ms late (the timer's and the wake-up's own
// latency), and a stall under a millisecond cannot move a p95 bound of 5.
const HiccupFloor = time.Millisecond

// MaxHiccups bounds the meter's record; past it, Result.HiccupsLost
// counts the ones not kept and the rule charges the whole rest of the
// run (engine's ClientStall).
const MaxHiccups = 4096

// Hiccup is one late wake of the meter: due At (from the run's start), it
// ran Late after that. The client was held from At to At+Late, as jHiccup
// reports a hiccup: a request in flight then is charged its overlap with
// that stretch. A stall that began while the meter slept may have begun up
// to one sleep before At; that part is not witnessed, and not charged
// (reports/measurements.md, stop 52: charged, it doubled what the meter's
// small late wakes charge a request that waits hundreds of milliseconds
// on a held worker, and discarded such a cell five times in a row).
type Hiccup struct {
	At   time.Duration `json:"at_ns"`
	Late time.Duration `json:"late_ns"`
}

// End is when the meter ran again, from the run's start.
func (h Hiccup) End() time.Duration { return h.At + h.Late }

// hiccupMeter runs from start until stop; ticks counts its wakes.
type hiccupMeter struct {
	every time.Duration
	start time.Time
	quit  chan struct{}
	done  sync.WaitGroup

	ticks   int
	hiccups []Hiccup
	lost    int
}

// startHiccups starts a meter sleeping every at a time, its offsets taken
// from start; nil (and a nil stop) when every is 0.
func startHiccups(every time.Duration, start time.Time) *hiccupMeter {
	if every <= 0 {
		return nil
	}
	m := &hiccupMeter{every: every, start: start, quit: make(chan struct{})}
	m.done.Add(1)
	go m.run()
	return m
}

func (m *hiccupMeter) run() {
	defer m.done.Done()
	t := time.NewTimer(m.every)
	defer t.Stop()
	woke := time.Now()
	for {
		due := woke.Add(m.every)
		t.Reset(time.Until(due))
		select {
		case <-m.quit:
			return
		case <-t.C:
		}
		woke = time.Now()
		m.ticks++
		if late := woke.Sub(due); late > HiccupFloor {
			if len(m.hiccups) == MaxHiccups {
				m.lost++
				continue
			}
			m.hiccups = append(m.hiccups, Hiccup{At: due.Sub(m.start), Late: late})
		}
	}
}

// stop ends the meter and writes its record into res. A nil meter writes
// nothing.
func (m *hiccupMeter) stop(res *Result) {
	if m == nil {
		return
	}
	close(m.quit)
	m.done.Wait()
	res.HiccupTicks, res.Hiccups, res.HiccupsLost = m.ticks, m.hiccups, m.lost
}

// HiccupOver is how long the hiccups hs held the client between from and
// to (offsets from the run's start): the length of their stretches within
// from..to. hs are in the order the meter took them, sorted by At (each
// due a sleep after the wake before; only a tail is ever dropped), so
// their stretches do not overlap and the first past to ends the sum.
func HiccupOver(hs []Hiccup, from, to time.Duration) time.Duration {
	var d time.Duration
	for _, h := range hs {
		if h.End() <= from {
			continue
		}
		if h.At >= to {
			break
		}
		d += min(h.End(), to) - max(h.At, from)
	}
	return d
}
