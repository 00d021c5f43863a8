package labrun

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/stack"
)

// A pod started ahead. Once run k of a condition's load has ended, nothing
// it does is timed: it stops its sampler, collects its records and removes
// its pod. The pod of run k+1 starts meanwhile (its containers' creation
// and its server's boot, 1.4 to 1.9 s of a run's 2.3 to 2.7 s outside its
// window on an Intel Xeon), so a series' wall time shrinks by the overlap.
// It starts as the load ends, before the sampler's stop: the creation of
// the container that holds its namespaces (the client), which the rest of
// the pod waits for, then runs before run k's teardown rather than beside
// it (a holder container of its own, unquoted, took 0.45 s alone and 0.8
// to 1.1 s beside it), and a run's time outside its window went from 2.7
// to 2.2 s here.
//
// It never overlaps a measurement window: it starts after run k's window
// has ended, and run k+1 adopts it only after run k's pod is gone (RunA
// returns after its teardown), so run k+1's window starts on a pod that
// booted while nothing was measured, as a pod opened in place does.

// Then declares the run that follows the next RunA: run k of c. Its pod
// starts once that RunA's window is over. A series that runs in a known
// order (the tests' tables) declares it; benchmarks, whose runs repeat,
// do not, and their pods open in place.
func (l *Lab) Then(c engine.Condition, k int) {
	l.then = &next{c, k}
}

// next is a run declared by Then.
type next struct {
	c engine.Condition
	k int
}

// ahead is a pod being opened for the run id names.
type ahead struct {
	id   stack.Ident
	tb   *heldTB
	done chan struct{}
	pod  *stack.Pod
	err  error
}

// startAhead opens the pod of the run Then declared in the background,
// unless none was, that run is in the journal (it will not be measured),
// or a pod is ahead already.
func (l *Lab) startAhead() {
	if l.then == nil || l.ahead != nil || l.Journal.Has(engine.UnitA(l.then.c, l.then.k)) {
		return
	}
	c, k := l.then.c, l.then.k
	a := &ahead{id: stack.Ident{Condition: c.ID, Run: k}, tb: &heldTB{}, done: make(chan struct{})}
	cfg := c.Pod(l.Image)
	go func() {
		defer close(a.done)
		a.pod, a.err = stack.Open(a.tb, l.Session, cfg, a.id)
	}()
	l.ahead = a
}

// openPod is run k of c's pod: the one started ahead for it, adopted by t
// (its containers' purge moves to t's cleanup), or a new one. A pod ahead
// for another run is removed first, so no two pods ever run at once
// during a window.
func (l *Lab) openPod(t stack.TB, c engine.Condition, k int) (*stack.Pod, error) {
	t.Helper()
	id := stack.Ident{Condition: c.ID, Run: k}
	if a := l.takeAhead(); a != nil {
		<-a.done
		if a.id == id && a.err == nil && a.pod != nil {
			a.tb.adopt(t)
			return a.pod, nil
		}
		a.discard()
	}
	return stack.Open(t, l.Session, c.Pod(l.Image), id)
}

func (l *Lab) takeAhead() *ahead {
	a := l.ahead
	l.ahead = nil
	return a
}

// DiscardAhead removes a pod started for a run that did not come (a
// series cut short, or a run filter that skips it). A session's purge
// removes it too; this does it at once.
func (l *Lab) DiscardAhead() {
	if a := l.takeAhead(); a != nil {
		<-a.done
		a.discard()
	}
}

// discard removes a's pod, if it opened, and runs the cleanups its
// containers registered (which then find nothing left to remove).
func (a *ahead) discard() {
	if a.pod != nil {
		_ = a.pod.Close() // a failed removal is left to the cleanups and the session's purge
	}
	a.tb.runCleanups()
}

// heldTB is the stack.TB of a pod opened ahead: it holds the cleanups its
// containers register until a test adopts the pod, and passes their errors
// on to that test.
type heldTB struct {
	mu       sync.Mutex
	cleanups []func()
	owner    stack.TB
	errs     []string
}

func (h *heldTB) Helper() {}

func (h *heldTB) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner != nil {
		h.owner.Cleanup(f)
		return
	}
	h.cleanups = append(h.cleanups, f)
}

func (h *heldTB) Errorf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.owner != nil {
		h.owner.Errorf(format, args...)
		return
	}
	h.errs = append(h.errs, fmt.Sprintf(format, args...))
}

// Fatal and Fatalf end the goroutine that opens the pod (stack.Open
// returns its errors and calls neither; this keeps the contract).
func (h *heldTB) Fatal(args ...any) {
	h.Errorf("%s", fmt.Sprint(args...))
	runtime.Goexit()
}

func (h *heldTB) Fatalf(format string, args ...any) {
	h.Errorf(format, args...)
	runtime.Goexit()
}

// adopt hands the held cleanups, in their order, and any error reported
// so far to t.
func (h *heldTB) adopt(t stack.TB) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.owner = t
	for _, f := range h.cleanups {
		t.Cleanup(f)
	}
	for _, e := range h.errs {
		t.Errorf("%s", e)
	}
	h.cleanups, h.errs = nil, nil
}

func (h *heldTB) runCleanups() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// CheckAhead reads recs, every record of a series so far (its kept runs'
// and its discarded attempts'), for the fault pods ahead must never have:
// a pod asked for while another record's load window was open. It
// returns how many of recs begun at or after since had their pod opened
// ahead (asked for before the run began), and an error naming each pod
// asked for inside another run's window. A record without the pod's
// time (from before it was kept) opened none ahead.
func CheckAhead(recs []engine.Record, since time.Time) (ahead int, err error) {
	var errs []error
	for i, r := range recs {
		if r.PodOpened.IsZero() || !r.PodOpened.Before(r.Started) {
			continue
		}
		if !r.Started.Before(since) {
			ahead++
		}
		for j, w := range recs {
			if j == i || w.Load.StartUnixNano == 0 {
				continue
			}
			from := time.Unix(0, w.Load.StartUnixNano)
			if to := from.Add(w.Load.Elapsed); r.PodOpened.After(from) && r.PodOpened.Before(to) {
				errs = append(errs, fmt.Errorf("the pod of %s run %d was asked for %v into the load window of %s run %d (%v long)",
					r.Condition, r.Run, r.PodOpened.Sub(from).Round(time.Millisecond), w.Condition, w.Run, w.Load.Elapsed.Round(time.Millisecond)))
			}
		}
	}
	return ahead, errors.Join(errs...)
}
