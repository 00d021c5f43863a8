package labrun

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/disturb"
	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/safety"
)

// ErrTooBusy is the error of a unit that could not get an undisturbed
// run within the rule's attempts: the machine was too busy to judge it.
var ErrTooBusy = errors.New("machine too busy")

// discard is an attempt the redo rule judged disturbed: the abort that
// records it (its reason, figures and raw record), and, when the CPU
// outside the lab disturbed it, the share the host may not hold for the
// window before the next attempt (safety.Stop's WaitCalmUnder). A run
// only the client's own stall disturbed (its lag or its throttling, with
// the CPU outside the lab under the rule's bound) is redone at once:
// waiting for the outside share to stay low, which it was, only cost 5 s
// a discard here (the Docker daemon's own teardown of the pod keeps the
// last seconds' share up), 18 of them in one make test. Its second
// discard in a row waits all the same: this machine's own stalls came
// back three attempts in a row twice in one make test, and the wait
// spaces the last attempts out.
type discard struct {
	abort  report.Abort
	wait   bool
	calm   float64
	window time.Duration
}

// attempt runs one unit (an article A run, an article B cell) until it
// ends undisturbed. An attempt is discarded, recorded as an abort and run
// again once the host is calm when the safety stop tripped during it (do's
// result is dropped, whatever it was), or when do itself returns a discard
// (the run's own figures crossed the redo rule): once the host is calm
// when the CPU outside the lab crossed it, at once when only the client's
// own stall or a clock step did (discard.wait); a second discard in a row
// waits for calm all the same, and from then on at least disturb.Backoff
// passes before the next attempt. After the rule's
// MaxAttempts the unit is recorded as too busy and fails with ErrTooBusy:
// no verdict is judged on its conditions (a unit outside the series' own,
// with none, only fails). With no stop, do runs once.
func (l *Lab) attempt(unit string, conditions []string, do func(n int) (*discard, error)) error {
	if l.Safety == nil {
		l.beforeAttempt(unit, 1)
		_, err := do(1)
		return err
	}
	maxAttempts := cmp.Or(l.Settings.Safety.Redo.MaxAttempts, disturb.DefaultMaxAttempts)
	for n := 1; ; n++ {
		l.beforeAttempt(unit, n)
		mark := l.Safety.Begin()
		d, err := l.during(mark, func() (*discard, error) { return do(n) })
		trip, tripped := l.Safety.End(mark)
		var a report.Abort
		calm, window := l.Settings.Safety.Config.Threshold, time.Duration(0)
		switch {
		case tripped:
			a = report.Abort{Reason: report.AbortSafetyStop, From: trip.From, To: trip.To, PeakShare: trip.Peak, MeanShare: trip.Mean}
			if err == nil && d != nil { // the rule judged it too: its figures and raw record go with the abort
				a.Disturbances, a.Figures, a.Raw = d.abort.Disturbances, d.abort.Figures, d.abort.Raw
			}
		case err == nil && d != nil:
			a, calm, window = d.abort, d.calm, d.window
			a.Reason = report.AbortDisturbed
		default:
			return err
		}
		a.Unit, a.Attempt = unit, n
		var calmErr error
		then := "redone at once: " + atOnce(a.Disturbances)
		if tripped || d.wait || n >= 2 {
			var waited time.Duration
			waited, calmErr = l.Safety.WaitCalmUnder(calm, window, l.sleep)
			then = fmt.Sprintf("waited %v for calm", waited.Round(time.Millisecond))
			if rest := disturb.Backoff(n) - waited; calmErr == nil && rest > 0 && n < maxAttempts {
				l.sleep(rest) // spaces the attempts out of the client's cluster of stalls
				waited += rest
				then += fmt.Sprintf(", then paused to %v", waited.Round(time.Millisecond))
			}
			a.WaitedS = waited.Seconds()
		}
		recErr := errors.Join(l.Reports.AddAbort(a), l.Journal.Save(engine.JournalAborts, l.Reports.Aborts()))
		l.logf("wsgilab: %s discarded (attempt %d of %d): %s; %s", unit, n, maxAttempts, abortText(a), then)
		if calmErr != nil || recErr != nil {
			return fmt.Errorf("%s: %w", unit, errors.Join(calmErr, recErr))
		}
		if n >= maxAttempts {
			unjudged := ""
			if len(conditions) > 0 {
				unjudged = "; no verdict is judged on " + strings.Join(conditions, ", ")
			}
			errs := []error{fmt.Errorf("%s: %w: %d attempts, each disturbed (the last: %s)%s",
				unit, ErrTooBusy, n, abortText(a), unjudged)}
			for _, c := range conditions {
				errs = append(errs, l.Reports.AddTooBusy(report.TooBusy{Unit: unit, Condition: c, Attempts: n, Last: abortText(a)}))
			}
			return errors.Join(errs...)
		}
	}
}

// during runs do as the unit begun at mark; a do that ends its goroutine
// (a Fatal, a panic) ends the unit too, so that the stop does not count
// it as under way for the rest of the series.
func (l *Lab) during(mark safety.Mark, do func() (*discard, error)) (*discard, error) {
	returned := false
	defer func() {
		if !returned {
			l.Safety.End(mark)
		}
	}()
	d, err := do()
	returned = true
	return d, err
}

// atOnce names what disturbed a run that is redone at once: the time of
// day, when it stepped and nothing else crossed a bound; else the
// client's own stall.
func atOnce(ds []report.Disturbance) string {
	if len(ds) > 0 && !slices.ContainsFunc(ds, func(d report.Disturbance) bool { return d.Check != disturb.CheckWallStep }) {
		return "the time of day stepped"
	}
	return "the client's own stall"
}

// sleep is the lab's pause between attempts: time.Sleep unless a test
// set Pause.
func (l *Lab) sleep(d time.Duration) {
	if l.Pause != nil {
		l.Pause(d)
		return
	}
	time.Sleep(d)
}

func (l *Lab) beforeAttempt(unit string, n int) {
	if l.BeforeAttempt != nil {
		l.BeforeAttempt(unit, n)
	}
}

// abortText says why a was discarded, with its figures.
func abortText(a report.Abort) string {
	if a.Reason == report.AbortSafetyStop {
		return fmt.Sprintf("the safety stop tripped: CPU outside the lab peaked at %.0f %% from %s to %s",
			100*a.PeakShare, a.From.Format("15:04:05.0"), a.To.Format("15:04:05.0"))
	}
	var ds []string
	for _, d := range a.Disturbances {
		ds = append(ds, d.String())
	}
	return "disturbed: " + strings.Join(ds, ", ")
}

// judgeA is the redo rule on attempt n of run rec of c: nil when the run
// was undisturbed (or the stop is off), else its discard, whose raw
// record is written aside first, named after name (RunA: c's id).
func (l *Lab) judgeA(c engine.Condition, name string, rec engine.Record, n int) (*discard, error) {
	if l.Safety == nil {
		return nil, nil
	}
	rule := l.Settings.Safety.Redo
	run := engine.SummarizeRun(c, rec).Run
	noise := disturb.Noise(run)
	noise.LagArmed = disturb.ArmedLags(rule, rec.Load.Fast)
	ds := disturb.Judge(rule, noise)
	if len(ds) == 0 {
		if rec.Load.Stopped != "" { // the client and the rule disagree: keep nothing
			return nil, fmt.Errorf("labrun: %s attempt %d: the load stopped early (%s), yet the redo rule finds the run undisturbed", name, n, rec.Load.Stopped)
		}
		return nil, nil
	}
	raw, err := l.Reports.AddDiscarded(name, rec, n)
	if err != nil {
		return nil, err
	}
	from := time.Unix(0, rec.Load.StartUnixNano)
	a := report.Abort{From: from, To: from.Add(rec.Load.Elapsed), Disturbances: ds, Figures: &noise, Raw: raw}
	if noise.Host != nil {
		a.PeakShare, a.MeanShare = noise.Host.MaxShare, noise.Host.MeanShare
	}
	outside := slices.ContainsFunc(ds, func(d report.Disturbance) bool { return d.Check == disturb.CheckOutside })
	return &discard{abort: a, wait: outside, calm: rule.OutsideShare, window: time.Duration(rule.OutsideWindowS * float64(time.Second))}, nil
}

// hostSamples are the safety stop's points over the load window of rec,
// once the stop has sampled past its end; nil without a stop.
func (l *Lab) hostSamples(rec engine.Record) *engine.HostSamples {
	if l.Safety == nil {
		return nil
	}
	from := time.Unix(0, rec.Load.StartUnixNano)
	to := from.Add(rec.Load.Elapsed)
	l.Safety.Covers(to)
	return &engine.HostSamples{Interval: l.Safety.Interval(), Points: l.Safety.Points(from, to)}
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
