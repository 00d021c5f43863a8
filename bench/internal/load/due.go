package load

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// Waiting for a request's slot.
//
// Go's timers wake through epoll_pwait, whose timeout is in whole
// milliseconds, so time.Sleep ends anywhere up to a millisecond after its
// deadline. Spinning for the last 300 µs left a requester lag of 0.2 to
// 0.46 ms at the median of a run, and its worst at 0.74 to 0.97 ms in 43
// of article A's 50 runs (Intel Xeon); the spin itself spent the client's
// 0.2-core quota.
//
// So a request sleeps in Go until coarseWindow before its slot, and then in
// the kernel until the slot itself: clock_nanosleep on an absolute
// CLOCK_MONOTONIC deadline (the clock behind time.Time's monotonic
// reading), an hrtimer fired within the thread's timer slack, set to
// timerSlack first. The thread is locked to the goroutine for that last
// stretch, so the slack set is the slack the sleep gets, and the request
// goes on from the same thread with no hand-off.

// coarseWindow covers the Go timer's millisecond rounding and its wake-up.
const coarseWindow = 2 * time.Millisecond

// timerSlack is the precision asked of the kernel's timer (the default
// is 50 µs).
const timerSlack = 1 * time.Microsecond

// waitUntil returns at due, as precisely as the kernel allows, and true;
// or false as soon as done is closed during the coarse sleep (a run
// stopped early: Spec.StopOnLag). A nil done never closes.
func waitUntil(due time.Time, done <-chan struct{}) bool {
	if d := time.Until(due) - coarseWindow; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-done:
			t.Stop()
			return false
		}
	}
	sleepUntil(due)
	return true
}

// sleepUntil blocks the calling thread in the kernel until due; where the
// kernel refuses (a seccomp profile without clock_nanosleep), it polls the
// clock instead.
func sleepUntil(due time.Time) {
	// What is left is read before the clock, so a delay between the two
	// reads makes the deadline late, never early.
	left := time.Until(due)
	if left <= 0 {
		return
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		spinUntil(due)
		return
	}
	deadline := unix.NsecToTimespec(now.Nano() + int64(left))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(timerSlack), 0, 0, 0) // a refusal leaves the default
	for {
		switch err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &deadline, nil); err {
		case nil:
			return
		case unix.EINTR: // the runtime's preemption signal; the deadline stands
		default:
			spinUntil(due)
			return
		}
	}
}

func spinUntil(due time.Time) {
	for time.Now().Before(due) {
	}
}
