package labrun

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
)

// recTB records what a held pod hands its adopter.
type recTB struct {
	cleanups []string
	errs     []string
	run      []func()
}

func (r *recTB) Helper()          {}
func (r *recTB) Cleanup(f func()) { r.run = append(r.run, f) }
func (r *recTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recTB) Fatal(args ...any)                 { panic("Fatal") }
func (r *recTB) Fatalf(format string, args ...any) { panic("Fatalf") }

// A held pod's cleanups go to its adopter in their order, errors with
// them, and what registers after adoption goes straight to the adopter.
func TestHeldTBAdopt(t *testing.T) {
	var order []string
	h := &heldTB{}
	h.Cleanup(func() { order = append(order, "holder") })
	h.Cleanup(func() { order = append(order, "app") })
	h.Errorf("purge %s: %v", "x", "gone")
	var owner recTB
	h.adopt(&owner)
	h.Cleanup(func() { order = append(order, "late") })
	h.Errorf("after")
	assert.Len(t, owner.run, 3)
	for i := len(owner.run) - 1; i >= 0; i-- { // as testing runs them
		owner.run[i]()
	}
	assert.Equal(t, []string{"late", "app", "holder"}, order)
	assert.Equal(t, []string{"purge x: gone", "after"}, owner.errs)
	h.runCleanups()
	assert.Len(t, order, 3, "adopted cleanups are the owner's, not run again")
}

// A pod never adopted runs its own cleanups, last registered first.
func TestHeldTBDiscard(t *testing.T) {
	var order []string
	h := &heldTB{}
	h.Cleanup(func() { order = append(order, "holder") })
	h.Cleanup(func() { order = append(order, "app") })
	h.runCleanups()
	h.runCleanups()
	assert.Equal(t, []string{"app", "holder"}, order, "once each, in reverse")
}

// CheckAhead counts the pods opened ahead and names one asked for inside
// another run's load window: the fault a pod started before its
// predecessor's window ended would be.
func TestCheckAhead(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	rec := func(id string, k int, opened, started, window time.Duration) engine.Record {
		r := engine.Record{Condition: id, Run: k, PodOpened: t0.Add(opened), Started: t0.Add(started)}
		r.Load.StartUnixNano, r.Load.Elapsed = t0.Add(started+time.Second).UnixNano(), window
		return r
	}
	// Run 1 opens its pod in place; its window is 1 s to 10 s. Run 2's
	// pod is asked for at 10.2 s, after it; run 2 begins at 12 s.
	good := []engine.Record{rec("a", 1, 0, 0, 9*time.Second), rec("a", 2, 10200*time.Millisecond, 12*time.Second, 9*time.Second)}
	ahead, err := CheckAhead(good, t0)
	require.NoError(t, err)
	assert.Equal(t, 1, ahead)

	// The fault: run 2's pod asked for 5 s into run 1's window.
	bad := []engine.Record{good[0], rec("a", 2, 6*time.Second, 12*time.Second, 9*time.Second)}
	ahead, err = CheckAhead(bad, t0)
	assert.Equal(t, 1, ahead)
	assert.ErrorContains(t, err, "the pod of a run 2 was asked for 5s into the load window of a run 1")

	ahead, err = CheckAhead(good[:1], t0)
	assert.NoError(t, err)
	assert.Zero(t, ahead, "a pod opened in place")

	ahead, err = CheckAhead(good, t0.Add(time.Hour))
	assert.NoError(t, err)
	assert.Zero(t, ahead, "none begun since")
	ahead, err = CheckAhead([]engine.Record{{Condition: "a", Run: 1, Started: t0}}, t0)
	assert.NoError(t, err)
	assert.Zero(t, ahead, "a record without the pod's time")
}
