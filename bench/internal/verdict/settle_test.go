package verdict

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// p95Runs are runs of a condition, each summarized alone, with these p95s.
func p95Runs(left int, p95s ...float64) Runs {
	r := Runs{Left: left}
	for _, p := range p95s {
		r.Each = append(r.Each, report.Condition{RunsValid: 1, P95Ms: p, P95MsMin: p, P95MsMax: p})
	}
	return r
}

func TestSpan(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		vals   []float64
		left   int
		over   fold
		lo, hi float64
	}{
		{"2 of 3: between the two", []float64{3, 2}, 1, foldMedian, 2, 3},
		{"1 of 3: open", []float64{2}, 2, foldMedian, -inf, inf},
		{"3 of 5: the least to the largest", []float64{1, 2, 3}, 2, foldMedian, 1, 3},
		{"3 of 4: the middle two's means", []float64{1, 2, 3}, 1, foldMedian, 1.5, 2.5},
		{"all in: the median", []float64{1, 2, 9}, 0, foldMedian, 2, 2},
		{"largest: only grows", []float64{0, 0}, 1, foldLargest, 0, inf},
		{"largest, all in", []float64{0, 4}, 0, foldLargest, 4, 4},
		{"least: only falls", []float64{5, 3}, 1, foldLeast, -inf, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := span(tc.vals, tc.left, tc.over)
			assert.Equal(t, tc.lo, lo, "low")
			assert.Equal(t, tc.hi, hi, "high")
		})
	}
}

// HoldsWhatever settles a verdict only when no run still missing could
// change it, and is shown to refuse the cases where one could.
func TestHoldsWhatever(t *testing.T) {
	idle := Verdict{ID: "idle", Check: Below("a", P95, 10)}
	stall := Verdict{ID: "stall", Check: Above("a", P95, 1000)}
	less := Verdict{ID: "less", Check: Less("a", "b", P95)}
	near := Verdict{ID: "near", Check: Between("a", P95, 500, 2000)}
	for _, tc := range []struct {
		name string
		v    Verdict
		runs map[string]Runs
		want bool
	}{
		{"two idle runs of three", idle, map[string]Runs{"a": p95Runs(1, 1.6, 2.1)}, true},
		{"one idle run of three: the other two could stall", idle, map[string]Runs{"a": p95Runs(2, 1.6)}, false},
		{"one run of two over the bound: a third could take the median over", idle, map[string]Runs{"a": p95Runs(1, 1.6, 12)}, false},
		{"two stalled runs", stall, map[string]Runs{"a": p95Runs(1, 5900, 5950)}, true},
		{"an ordering, both ends bounded", less, map[string]Runs{"a": p95Runs(1, 900, 1100), "b": p95Runs(0, 5800, 5900, 6000)}, true},
		{"an ordering whose spans overlap", less, map[string]Runs{"a": p95Runs(1, 900, 5950), "b": p95Runs(0, 5800, 5900, 6000)}, false},
		{"an ordering against a condition not run yet", less, map[string]Runs{"a": p95Runs(1, 900, 1100)}, false},
		{"a band, both runs in it", near, map[string]Runs{"a": p95Runs(2, 900, 1900, 1000)}, true},
		{"a band, a run out of it", near, map[string]Runs{"a": p95Runs(2, 900, 2150, 1000)}, false},
		{"every run's figure (largest) while one is missing", Verdict{ID: "zero", Check: Zero("a", TempPeakMax)},
			map[string]Runs{"a": {Left: 1, Each: []report.Condition{{RunsValid: 1, TempfilePeakMiBMax: new(float64)}, {RunsValid: 1, TempfilePeakMiBMax: new(float64)}}}}, false},
		{"every run's figure, all in", Verdict{ID: "zero", Check: Zero("a", TempPeakMax)},
			map[string]Runs{"a": {Left: 0, Each: []report.Condition{{RunsValid: 1, TempfilePeakMiBMax: new(float64)}, {RunsValid: 1, TempfilePeakMiBMax: new(float64)}}}}, true},
		{"every run's figure, the runs it reads in, the rest the median's", Verdict{ID: "zero", Check: Zero("a", TempPeakMax)},
			map[string]Runs{"a": {Left: 2, Extra: 2, Each: []report.Condition{{RunsValid: 1, TempfilePeakMiBMax: new(float64)}, {RunsValid: 1, TempfilePeakMiBMax: new(float64)}, {RunsValid: 1, TempfilePeakMiBMax: new(float64)}}}}, true},
		{"every run's figure, one of the runs it reads missing", Verdict{ID: "zero", Check: Zero("a", TempPeakMax)},
			map[string]Runs{"a": {Left: 3, Extra: 2, Each: []report.Condition{{RunsValid: 1, TempfilePeakMiBMax: new(float64)}, {RunsValid: 1, TempfilePeakMiBMax: new(float64)}}}}, false},
		{"the median's extra runs still open a median", near, map[string]Runs{"a": {Left: 2, Extra: 2, Each: p95Runs(2, 900, 2150, 1000).Each}}, false},
		{"a figure missing from a run", Verdict{ID: "cpu", Check: Below("a", AppCPU, 5)},
			map[string]Runs{"a": {Left: 1, Each: []report.Condition{{RunsValid: 1}, {RunsValid: 1}}}}, false},
		{"a check that is not convex", Verdict{ID: "first", Check: StallsFirst([]string{"a"}, []string{"b"}, []float64{16}, 1000)},
			map[string]Runs{"a": p95Runs(0, 5000), "b": p95Runs(0, 2)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, HoldsWhatever(tc.v, tc.runs))
		})
	}
	assert.True(t, MaySettle(idle))
	assert.False(t, MaySettle(Verdict{ID: "zero", Check: Zero("a", TempPeakMax)}), "a largest stays open")
	assert.True(t, MaySettleEvery(Verdict{ID: "zero", Check: Zero("a", TempPeakMax)}), "until the runs it reads are in")
	assert.False(t, MaySettleEvery(idle), "a median is MaySettle's")
	assert.False(t, MaySettle(Verdict{ID: "grows", Check: Grows("a", "b")}))
}

// Whatever the missing runs measure, a verdict HoldsWhatever settled
// holds on every run in: 20,000 random series of 3 and 5 runs against
// the idle bound and the article's band, judged as the summary judges
// (the median of the valid runs, a missing run left out as an invalid
// one is).
func TestHoldsWhateverNeverWrong(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vs := []Verdict{{ID: "idle", Check: Below("a", P95, 10)}, {ID: "near", Check: Between("a", P95, 535, 2143)}}
	settled := 0
	for range 20000 {
		v := vs[rng.IntN(len(vs))]
		n := []int{3, 5}[rng.IntN(2)]
		k := 1 + rng.IntN(n)
		draw := func() float64 {
			if v.ID == "idle" {
				return 12 * rng.Float64()
			}
			return 400 + 2000*rng.Float64()
		}
		var known []float64
		for range k {
			known = append(known, draw())
		}
		if !HoldsWhatever(v, map[string]Runs{"a": p95Runs(n-k, known...)}) {
			continue
		}
		settled++
		for range 20 {
			all := append([]float64{}, known...)
			for range n - k {
				if rng.IntN(4) > 0 { // else the run is invalid, left out
					all = append(all, draw()*float64(1+rng.IntN(3)))
				}
			}
			o, err := v.Check.Eval(Data{Conditions: map[string]report.Condition{"a": {RunsValid: 1, P95Ms: stats.Median(all)}}})
			assert.NoError(t, err)
			if !o.Holds {
				t.Fatalf("%s settled on %v of %d runs, fails on %v", v.ID, known, n, all)
			}
		}
	}
	assert.Greater(t, settled, 1000, "some series settle")
}
