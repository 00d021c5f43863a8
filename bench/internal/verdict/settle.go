package verdict

import (
	"math"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// Runs are a condition's runs so far, each summarized alone (a summary of
// that one run), and how many more it may still take. Extra are the runs
// it takes past those a figure of every run reads (a largest or a least),
// for its medians' sake alone: of Left, those a largest or a least no
// longer waits for.
type Runs struct {
	Each  []report.Condition
	Left  int
	Extra int
}

// maxCorners bounds the corners HoldsWhatever judges a check at: a check
// over more conditions than log2 of it is never settled early.
const maxCorners = 1 << 10

// HoldsWhatever reports whether v holds however the runs still to come
// fall: runs has every condition v reads, the runs each has so far and
// how many it may still take. A figure folded by the median of its runs
// can only end between the median with every missing run below the
// known ones and the median with every one above (with 2 of 3 runs in,
// between the two); a largest only grows and a least only falls, until
// the runs it reads are in (the condition's Extra runs are its medians'
// alone, and past them a largest or a least is what it is). When v
// holds at every corner of the box those bounds make, it holds inside
// too, for a check whose holding set is convex (condCheck.convex): more
// runs cannot change it. False when the check is not such a check, when a
// bound is open (too few runs in), when a condition v reads has no runs
// yet, or when a figure is missing from a run.
func HoldsWhatever(v Verdict, runs map[string]Runs) bool {
	c, ok := v.Check.(condCheck)
	if !ok || !c.convex || c.m.over == foldOther || 1<<min(len(c.ids), 30) > maxCorners {
		return false
	}
	lo, hi := make([]float64, len(c.ids)), make([]float64, len(c.ids))
	for i, id := range c.ids {
		r, ok := runs[id]
		if !ok || len(r.Each) == 0 {
			return false
		}
		vals := make([]float64, 0, len(r.Each))
		for _, s := range r.Each {
			x, err := c.m.of(s)
			if err != nil || math.IsNaN(x) {
				return false
			}
			vals = append(vals, x)
		}
		left := r.Left
		if c.m.over != foldMedian {
			left = max(0, r.Left-r.Extra)
		}
		lo[i], hi[i] = span(vals, left, c.m.over)
		if math.IsInf(lo[i], 0) && math.IsInf(hi[i], 0) {
			return false
		}
	}
	corner := make([]float64, len(c.ids))
	for mask := 0; mask < 1<<len(c.ids); mask++ {
		for i := range corner {
			corner[i] = lo[i]
			if mask&(1<<i) != 0 {
				corner[i] = hi[i]
			}
		}
		if o := c.judge(corner); !o.Holds {
			return false
		}
	}
	return true
}

// MaySettle is whether HoldsWhatever can ever hold for v before every run
// is in: a convex check on a figure folded by the median (a largest or a
// least stays open while a run is missing).
func MaySettle(v Verdict) bool {
	c, ok := v.Check.(condCheck)
	return ok && c.convex && c.m.over == foldMedian && 1<<min(len(c.ids), 30) <= maxCorners
}

// MaySettleEvery is whether HoldsWhatever can hold for v before every run
// is in once the runs a figure of every run reads are (Runs.Extra): a
// convex check on a largest or a least.
func MaySettleEvery(v Verdict) bool {
	c, ok := v.Check.(condCheck)
	return ok && c.convex && (c.m.over == foldLargest || c.m.over == foldLeast) && 1<<min(len(c.ids), 30) <= maxCorners
}

// span is where a figure folded by over can end from the runs' values
// vals once left more runs are in (each may also be left out, as an
// invalid run is): ±Inf where it is open.
func span(vals []float64, left int, over fold) (lo, hi float64) {
	switch over {
	case foldLargest:
		lo, hi = maxOf(vals), maxOf(vals)
		if left > 0 {
			hi = math.Inf(1)
		}
	case foldLeast:
		lo, hi = minOf(vals), minOf(vals)
		if left > 0 {
			lo = math.Inf(-1)
		}
	default: // foldMedian
		lo, hi = stats.Median(vals), stats.Median(vals)
		for m := 1; m <= left; m++ {
			lo = min(lo, stats.Median(append(pad(m, math.Inf(-1)), vals...)))
			hi = max(hi, stats.Median(append(pad(m, math.Inf(1)), vals...)))
		}
	}
	if math.IsNaN(lo) {
		lo = math.Inf(-1)
	}
	if math.IsNaN(hi) {
		hi = math.Inf(1)
	}
	return lo, hi
}

func pad(n int, x float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func minOf(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}
