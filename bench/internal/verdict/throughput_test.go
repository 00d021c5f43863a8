package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"wsgilab/bench/internal/report"
)

// SpreadAtMost compares servers round by round: a while in which the
// machine is slower slows every server of its rounds alike and does not
// move the spread; one disturbed run is outvoted; a server slower in every
// round is caught; runs that do not pair up are missing data.
func TestSpreadIsPairedOverRounds(t *testing.T) {
	drift := []float64{1, 0.6, 1, 1.4, 0.7, 1, 1, 0.65, 1} // the machine's speed, round by round
	rows := func(rates map[string]float64, change func(id string, k int) float64) []report.Throughput {
		var out []report.Throughput
		for _, id := range []string{"a", "b", "c", "d"} {
			runs := make([]float64, len(drift))
			for k, f := range drift {
				runs[k] = rates[id] * f * change(id, k)
			}
			for _, gen := range []string{Ours, AB} {
				out = append(out, report.Throughput{ID: Cell(id, 0), Server: id, Generator: gen, ReqPerS: runs[0], ReqPerSRuns: runs})
			}
		}
		return out
	}
	rates := map[string]float64{"a": 2000, "b": 1900, "c": 2100, "d": 1800}
	same := func(string, int) float64 { return 1 }
	check := SpreadAtMost([]string{Cell("a", 0), Cell("b", 0), Cell("c", 0), Cell("d", 0)}, 2)
	judge := func(rs []report.Throughput) report.Claim {
		return Evaluate([]Verdict{{ID: "spread", Kind: Article, Check: check}}, Data{Throughput: rs})[0]
	}

	r := judge(rows(rates, same))
	assert.Equal(t, report.StatusHolds, r.Status)
	assert.InDelta(t, 2100.0/1800, r.Measured, 1e-9, "a drift shared by each round's servers cancels")

	r = judge(rows(rates, func(id string, k int) float64 {
		if id == "d" && k == 2 || id == "c" && k == 5 {
			return 0.4
		}
		return 1
	}))
	assert.InDelta(t, 2100.0/1800, r.Measured, 1e-9, "one disturbed run per server is outvoted")

	slow := map[string]float64{"a": 2000, "b": 1900, "c": 2100, "d": 600}
	r = judge(rows(slow, same))
	assert.Equal(t, report.StatusFails, r.Status, "a server 3x slower in every round is caught")
	assert.InDelta(t, 3.5, r.Measured, 1e-9)

	short := rows(rates, same)
	short[2].ReqPerSRuns = short[2].ReqPerSRuns[:4]
	r = judge(short)
	assert.Equal(t, report.StatusMissing, r.Status, "unpaired runs are missing data, not a pass: %+v", r)
}
