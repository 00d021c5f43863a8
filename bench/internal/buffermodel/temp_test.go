package buffermodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

const mib = 1 << 20

var article = Temp{MaxTempBytes: 32 * mib, RoomBytes: 80 * mib, DefaultMaxTempBytes: 1024 * mib}

func TestTempSpillAndCliff(t *testing.T) {
	held := 3.2 * mib
	assert.InDelta(t, 20.8*mib, article.SpillBytes(24*mib, held), 1)
	assert.Equal(t, 32.0*mib, article.SpillBytes(48*mib, held), "the limit caps the spill")
	assert.Zero(t, article.SpillBytes(2*mib, held), "what the path holds spills nothing")
	assert.False(t, article.Past(32*mib, held), "the limit's own size fits: the path holds the rest")
	assert.True(t, article.Past(48*mib, held))
	// 80 MiB of room holds 6 spills of 12.8 MiB; the 7th and 8th are cut.
	assert.Equal(t, 6, article.Fits(8, 16*mib, held))
	assert.Equal(t, 2, article.Fits(2, 16*mib, held))
	assert.Equal(t, 5, article.Fits(5, 1*mib, held), "nothing spilled, nothing cut")
	r := article.Rule(1024*mib, 2*mib, held)
	assert.Equal(t, 512.0, r.HeldS)
	assert.Equal(t, 1024*mib+held, r.SmallestHeldBytes)
}

// onCond is a summary of a cell behind buffering on.
func onCond(id string, n int, size int64, tempMiB *float64, write float64, outcomes map[string]int) report.Condition {
	return report.Condition{ID: id, Downloads: n, BodyBytes: size, ReadRate: 2 * mib, RunsValid: 1, RunsSound: 1,
		TempfilePeakMiB: tempMiB, WriteS: write, SlowOutcomes: outcomes}
}

func TestTempFitPredictsEachCellFromTheOthers(t *testing.T) {
	fit := []report.Condition{
		onCond("nginx-on-2dl", 2, 16*mib, report.Float(25.2), 0.1, map[string]int{"complete": 2}),
		onCond("t24", 2, 24*mib, report.Float(41.6), 0.1, map[string]int{"complete": 2}),
		onCond("t48", 2, 48*mib, report.Float(64), 20.3, map[string]int{"complete": 2}),
	}
	full := onCond("full", 8, 16*mib, nil, 0, map[string]int{"complete": 6, "truncated": 2})
	full.RunsValid, full.CutMin, full.CutMax = 0, 2, 2
	l := article.Fit(append(fit, full), []report.Condition{fit[1], fit[2], full})
	require.Empty(t, l.Problem)
	assert.Equal(t, []string{"nginx-on-2dl", "t24"}, l.From, "a cell the limit capped measures nothing of the path")
	require.Len(t, l.Cells, 3)
	t24, t48, ft := l.Cells[0], l.Cells[1], l.Cells[2]
	// t24 from nginx-on-2dl alone: held 16 - 12.6 = 3.4 MiB.
	assert.InDelta(t, 2*(24-3.4), t24.PredictedTempPeakMiB, 0.01)
	assert.True(t, t24.Right, "%+v", t24)
	assert.True(t, t48.PredictedPast)
	assert.Equal(t, 16.0, t48.PredictedHeldS)
	assert.True(t, t48.Right, "%+v", t48)
	assert.Equal(t, 2, ft.PredictedCut)
	assert.Equal(t, 2.0, ft.Cut)
	assert.True(t, ft.Right, "%+v", ft)
	assert.Equal(t, 512.0, l.AtDefault.HeldS)

	// A worker past the limit released early, a wrong cut count, a temp
	// peak off by more than the tolerance: each prediction is wrong.
	early := fit[2]
	early.WriteS = 3
	wrongCut := full
	wrongCut.RunsSound, wrongCut.CutMin, wrongCut.CutMax = 3, 1, 3 // 1, 2 and 3 readers cut: fewer than predicted in one run
	off := fit[1]
	off.TempfilePeakMiB = report.Float(30)
	l = article.Fit(fit, []report.Condition{early, wrongCut, off})
	for _, c := range l.Cells {
		assert.False(t, c.Right, "%+v", c)
	}
}

// One reader past the predicted cut is within the room's slack; two are
// not.
func TestTempCutSlack(t *testing.T) {
	fit := []report.Condition{
		onCond("nginx-on-2dl", 2, 16*mib, report.Float(25.2), 0.1, map[string]int{"complete": 2}),
		onCond("t24", 2, 24*mib, report.Float(41.6), 0.1, map[string]int{"complete": 2}),
	}
	full := onCond("full", 8, 16*mib, nil, 0, map[string]int{"complete": 6, "truncated": 2})
	for _, tc := range []struct {
		lo, hi int
		right  bool
	}{{2, 2, true}, {2, 3, true}, {3, 3, true}, {2, 4, false}, {1, 2, false}} {
		c := full
		c.RunsSound, c.CutMin, c.CutMax = 3, tc.lo, tc.hi
		l := article.Fit(append(fit, c), []report.Condition{c})
		assert.Equal(t, tc.right, l.Cells[0].Right, "cut %d to %d against 2 predicted", tc.lo, tc.hi)
	}
}

func TestTempFitNeedsACellUnderTheLimit(t *testing.T) {
	l := article.Fit([]report.Condition{onCond("t48", 2, 48*mib, report.Float(64), 20, nil)}, nil)
	assert.Contains(t, l.Problem, "nothing measures")
}
