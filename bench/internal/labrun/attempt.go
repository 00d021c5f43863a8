package labrun

import (
	"errors"
	"fmt"
	"time"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
)

// DefaultMaxAttempts bounds how often the safety stop may discard one unit
// before the series gives up on it.
const DefaultMaxAttempts = 4

// attempt runs one unit (an article A run, an article B cell) until it
// ends with the host calm throughout: a unit during which the safety stop
// tripped is discarded (do's result is dropped, whatever it was), recorded
// as an abort, and run again once the host is calm. With no stop, do runs
// once.
func (l *Lab) attempt(unit string, do func() error) error {
	if l.Safety == nil {
		return do()
	}
	for n := 1; ; n++ {
		mark := l.Safety.Begin()
		err := do()
		trip, tripped := l.Safety.End(mark)
		if !tripped {
			return err
		}
		waited, calmErr := l.Safety.WaitCalm(time.Sleep)
		recErr := errors.Join(l.Reports.AddAbort(report.Abort{Unit: unit, Attempt: n, From: trip.From, To: trip.To,
			PeakShare: trip.Peak, MeanShare: trip.Mean, WaitedS: waited.Seconds()}),
			l.Journal.Save(engine.JournalAborts, l.Reports.Aborts()))
		l.logf("wsgilab: safety stop: %s discarded (attempt %d): CPU outside the lab peaked at %.0f %% from %s to %s; waited %v for calm",
			unit, n, 100*trip.Peak, trip.From.Format("15:04:05.0"), trip.To.Format("15:04:05.0"), waited.Round(time.Millisecond))
		if calmErr != nil || recErr != nil {
			return fmt.Errorf("%s: %w", unit, errors.Join(calmErr, recErr))
		}
		if n >= DefaultMaxAttempts {
			return fmt.Errorf("%s: the safety stop discarded it %d times; the host is too busy for a series", unit, n)
		}
	}
}

// logf writes a line to the lab's log (stderr unless set), quiet or not:
// an abort must never pass unseen.
func (l *Lab) logf(format string, args ...any) {
	w := l.Log
	if w == nil {
		return
	}
	fmt.Fprintf(w, format+"\n", args...)
}

// SafetyStop starts the host safety stop for the series as settings say,
// watching the lab's containers in l.Session; nil when it is switched off.
func (l *Lab) SafetyStop(procRoot, cgroupRoot string) (*safety.Stop, error) {
	if !l.Settings.Safety.Enabled {
		return nil, nil
	}
	return safety.Start(l.Settings.Safety.Config, &safety.Host{ProcRoot: procRoot, CgroupRoot: cgroupRoot,
		Containers: l.Session.ContainerIDs})
}
