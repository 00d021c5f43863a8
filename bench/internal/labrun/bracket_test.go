package labrun

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stackfile"
)

// TestBracket: a stack that holds its requirement runs that step and the
// one past it; one that breaks there runs the steps below from the first
// up to where it stalls; the steps come back ascending.
func TestBracket(t *testing.T) {
	stallsAt := func(k int) func(int) string {
		return func(n int) string {
			if n >= k {
				return engine.StateBroken
			}
			return engine.StateHeld
		}
	}
	for _, tc := range []struct {
		name     string
		required int
		state    func(int) string
		ran      []int
	}{
		{"holds", 2, stallsAt(100), []int{2, 3}},
		{"stalls past it", 2, stallsAt(3), []int{2, 3}},
		{"stalls at it", 2, stallsAt(2), []int{2, 1}},
		{"stalls at the first", 3, stallsAt(1), []int{3, 1}},
		{"stalls between", 5, stallsAt(3), []int{5, 1, 2, 3}},
		{"geometric", 40, stallsAt(100), []int{40, 64}},
		{"geometric, stalls at 32", 40, stallsAt(32), append(append([]int{40}, seq(1, 16)...), 32)},
		{"no data at it", 2, func(n int) string {
			if n == 2 {
				return engine.StateNoData
			}
			return engine.StateHeld
		}, []int{2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []int
			declared := 0 // the step the last run declared, when it held
			steps, err := bracket(stackfile.Steps(tc.required, 1000), tc.required, func(n, after int) (report.StackStep, error) {
				if declared > 0 {
					assert.Equal(t, declared, n, "a step that held runs the one it declared next")
				}
				ran = append(ran, n)
				state := tc.state(n)
				declared = 0
				if state == engine.StateHeld {
					declared = after
				}
				return report.StackStep{Clients: n, State: state}, nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.ran, ran, "the steps run, in order")
			for i := 1; i < len(steps); i++ {
				assert.Less(t, steps[i-1].Clients, steps[i].Clients, "ascending")
			}
		})
	}
	_, err := bracket([]int{1, 2, 3}, 5, nil)
	assert.ErrorContains(t, err, "requirement 5 is not among its steps")
	assert.Equal(t, []int{2, 3}, bracketHeld([]int{1, 2, 3}, 2))
	assert.Equal(t, []int{3}, bracketHeld([]int{1, 2, 3}, 3))
}

func seq(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}
