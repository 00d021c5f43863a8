package labrun

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
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
