package buffermodel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// article A's /fast schedule: 72 requests at 8/s from 250 ms.
var sched = Schedule{Offset: 250 * time.Millisecond, Rate: 8, Count: 72}

func TestLeadIsWhenTheP95RequestIsSent(t *testing.T) {
	// Nearest rank: the 69th of 72 is the 4th largest, sent 3 periods
	// after the first.
	assert.InDelta(t, 0.625, sched.lead(), 1e-9)
}

func TestPredictions(t *testing.T) {
	m := New(sched)
	const mb = 1e6
	assert.Equal(t, 0.0, m.WriteS(4*mb, 2*mb, 6*mb), "a response that fits is written at once")
	assert.InDelta(t, 5.0, m.WriteS(16*mb, 2*mb, 6*mb), 1e-9)
	assert.InDelta(t, 4375, m.P95Ms(5), 1e-6)
	assert.Zero(t, m.P95Ms(0.3), "a worker freed before the p95 request is sent holds up no request")
	// The boundary stalls by exactly StallMs.
	b := m.BoundaryBytes(2*mb, 6*mb)
	assert.InDelta(t, m.StallMs, m.P95Ms(m.WriteS(b, 2*mb, 6*mb)), 1e-6)
}

// cond is a sweep cell whose path held held bytes per download at the
// write end (the first freed one a tenth more), and twice that at its peak.
func cond(id, path string, sizeMiB, rateMiB, p95Ms, writeS, held float64) report.Condition {
	return report.Condition{ID: id, Path: path, TCPProfile: "stock", Downloads: 2, BodyBytes: int64(sizeMiB * (1 << 20)),
		ReadRate: rateMiB * (1 << 20), RunsValid: 1, P95Ms: p95Ms, P95MsMin: p95Ms, P95MsMax: p95Ms, WriteS: writeS,
		WriteEndUnreadBytes: report.Float(held), WriteEndUnreadMaxBytes: report.Float(1.1 * held),
		PathPeakBytes: report.Float(4 * held), DownloadsComplete: 2}
}

func TestFitPredictsEachCellFromTheOthersAtItsRate(t *testing.T) {
	const c = 3 << 20 // bytes per download the path holds
	cells := []report.Condition{
		cond("big", "direct", 24, 2, 9000, 10.5, c),
		cond("mid", "direct", 16, 2, 5900, 6.5, c),   // predicted 6.5 s
		cond("small", "direct", 4, 2, 2, 0.4, c),     // predicted 0.5 s: within 0.25 s
		cond("wrong", "direct", 8, 2, 500, 4, c),     // predicted 2.5 s and a stall: wrong on both
		cond("invalid", "direct", 12, 2, 0, 0, c),    // no valid run: left out
		cond("slow", "direct", 8, 1, 4000, 4.5, 4e6), // alone at its rate: not predicted
	}
	cells[4].RunsValid = 0
	s := New(sched).Fit(cells)
	require.Len(t, s.Capacities, 2)
	assert.Equal(t, []string{"slow"}, s.Capacities[0].From, "1 MiB/s sorts first")
	assert.Equal(t, []string{"big", "mid", "small", "wrong"}, s.Capacities[1].From)
	assert.InDelta(t, float64(c), s.Capacities[1].BytesPerDownload, 1)
	assert.InDelta(t, 1.1*c, s.Capacities[1].FirstFreedBytes, 1)
	assert.InDelta(t, 2.0*c, *s.Capacities[1].PeakBytesPerDownload, 1)
	assert.True(t, s.Capacities[1].Saturated)
	assert.Equal(t, 4, s.Score.Cells, "the invalid cell and the one alone at its rate are not predicted")
	assert.Equal(t, 3, s.Score.WriteRight)
	assert.Equal(t, 3, s.Score.StallRight)
	assert.Equal(t, []string{"wrong"}, s.Score.StallWrong)
	for _, cell := range s.Cells {
		if cell.Condition == "slow" || cell.Condition == "invalid" {
			assert.False(t, cell.Predicted)
			assert.NotEmpty(t, cell.Problem)
		}
	}
	require.Len(t, s.Boundaries, 2)
	assert.InDelta(t, 1.1*c+2*(1<<20)*1.625, s.Boundaries[1].SizeBytes, 1)
	assert.InDelta(t, 1.1*c+2*(1<<20)*0.625, s.Boundaries[1].IdleSizeBytes, 1)
}

func TestACellIsNeverPredictedFromItself(t *testing.T) {
	// Two cells whose paths held very different amounts: each is
	// predicted from the other's, so both are wrong.
	s := New(sched).Fit([]report.Condition{
		cond("a", "direct", 16, 2, 6000, 6.5, 3<<20),
		cond("b", "direct", 24, 2, 6000, 6.5, 13<<20),
	})
	require.Equal(t, 2, s.Score.Cells)
	assert.Zero(t, s.Score.WriteRight)
}

func TestACellThatFitsIsALowerBound(t *testing.T) {
	// 8 MiB taken at once: the path held all of it.
	s := New(sched).Fit([]report.Condition{cond("fits", "nginx-off", 8, 1, 2, 0.005, 8<<20)})
	require.Len(t, s.Capacities, 1)
	assert.False(t, s.Capacities[0].Saturated)
	assert.True(t, s.Boundaries[0].LowerBound)
	assert.Equal(t, []string{"fits"}, s.Capacities[0].From)
	assert.False(t, s.Cells[0].Predicted, "a lone cell has no other to be predicted from")
}

func TestFitWithoutSampledQueuesSaysSo(t *testing.T) {
	x := cond("x", "nginx-off", 16, 2, 4000, 4.6, 0)
	x.WriteEndUnreadBytes = nil
	s := New(sched).Fit([]report.Condition{x})
	require.Len(t, s.Capacities, 1)
	assert.NotEmpty(t, s.Capacities[0].Problem)
	require.Len(t, s.Cells, 1, "the cell is listed, measured but not predicted")
	assert.False(t, s.Cells[0].Predicted)
	assert.Zero(t, s.Score.Cells)
	assert.Nil(t, s.Score.WriteShare, "no share over no cell")
}
