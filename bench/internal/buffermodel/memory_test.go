package buffermodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The line through the steps under the limit predicts where the limit is
// reached, and the check says whether the measured bracket holds it.
func TestMemoryFit(t *testing.T) {
	m := Memory{LimitMiB: 96}
	// 0.45 MiB a reader over 10 MiB: the limit at 191 readers, OOM at 256.
	steps := []MemoryStep{{16, 17.2, false}, {32, 24.4, false}, {64, 38.8, false}, {128, 67.6, false}, {256, 0, true}}
	f := m.Fit(steps)
	assert.Empty(t, f.Problem)
	assert.InDelta(t, 10, f.BaseMiB, 0.01)
	assert.InDelta(t, 0.45*1024, f.PerClientKiB, 0.1)
	assert.InDelta(t, 191.1, f.Predicted, 0.1)
	assert.Equal(t, 128, f.LastUnder)
	assert.Equal(t, 256, f.FirstReached)
	assert.True(t, f.Right)

	// A model that predicts the limit far past where it was reached is
	// caught: the same line against an OOM at 128.
	steps[3], steps[4] = MemoryStep{128, 0, true}, MemoryStep{256, 0, true}
	f = m.Fit(steps)
	assert.Equal(t, 64, f.LastUnder)
	assert.Equal(t, 128, f.FirstReached)
	assert.False(t, f.Right, "predicted 191, reached at 128")

	// A peak at the limit counts as reached, and is not fitted.
	f = Memory{LimitMiB: 128}.Fit([]MemoryStep{{1024, 81, false}, {4096, 100, false}, {10000, 128, false}})
	assert.Equal(t, []int{1024, 4096}, f.Fitted)
	assert.Equal(t, 10000, f.FirstReached)
	assert.True(t, f.Right, "predicted %.0f", f.Predicted)

	// Nothing reached: the prediction must lie past the last step.
	f = Memory{LimitMiB: 128}.Fit([]MemoryStep{{16, 40, false}, {1024, 41, false}})
	assert.Zero(t, f.FirstReached)
	assert.True(t, f.Right)

	assert.NotEmpty(t, m.Fit([]MemoryStep{{16, 20, false}}).Problem, "one point makes no line")
	assert.NotEmpty(t, m.Fit([]MemoryStep{{16, 20, false}, {32, 19, false}}).Problem, "memory that does not grow predicts nothing")
}
