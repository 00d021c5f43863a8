package stack

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Guard purges the session's containers when the process is told to stop
// or is about to be killed, so that no lab container outlives its series:
//
//   - on SIGINT or SIGTERM it calls OnStop (the series writes what it has
//     measured), purges, then exits with 128 + the signal;
//   - when deadline is set (go test's -timeout, whose expiry panics
//     without running any cleanup), it purges margin before it, so the
//     panic finds nothing left to leak.
//
// SIGKILL cannot be caught: Reap, at the next start, removes what a killed
// series left.
//
// stop ends the guard, once the series is over and purged. A signal
// that came before it is handled first: stop then never returns, and the
// guard exits with the signal's code once it has purged, so a series that
// a signal ended never exits as if it had failed or passed, nor before
// its purge is done.
func (s *Session) Guard(deadline time.Duration, log io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var timer <-chan time.Time
	var t *time.Timer
	if deadline > 0 {
		// A tenth of the deadline, between 5 and 30 s, and at most half of
		// it: the purge removes the pod's containers one by one.
		margin := min(30*time.Second, max(5*time.Second, deadline/10), deadline/2)
		t = time.NewTimer(deadline - margin)
		timer = t.C
	}
	handle := func(sig os.Signal) {
		// Further signals wait for the purge: a signal that came with
		// done is handled after signal.Stop has put it back at its
		// default, and make test's script repeats its INT or TERM for
		// up to 5 s (fixtures/host/testbin.sh).
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		if s.OnStop != nil {
			s.OnStop()
		}
		n, err := s.Purge()
		fmt.Fprintf(log, "wsgilab: %v: removed %d container(s) of series %s (%v); exiting\n", sig, n, s.ID, errText(err))
		code := 1
		if ss, ok := sig.(syscall.Signal); ok {
			code = 128 + int(ss)
		}
		os.Exit(code)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				handle(sig) // never returns
			case <-timer:
				n, err := s.Purge()
				fmt.Fprintf(log, "wsgilab: the test deadline (%v) is near: removed %d container(s) of series %s (%v) before go test panics\n",
					deadline, n, s.ID, errText(err))
				timer = nil
			case <-done:
				signal.Stop(sigs)
				select {
				case sig := <-sigs: // came with done: it wins
					handle(sig)
				default:
				}
				close(stopped)
				return
			}
		}
	}()
	return func() {
		if t != nil {
			t.Stop()
		}
		done <- struct{}{} // blocks for good while a signal is handled
		<-stopped
	}
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
