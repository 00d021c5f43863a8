package verdict

import (
	"fmt"
	"math"
	"slices"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stats"
)

// Generators of article B's rows.
const (
	Ours = "ours"
	AB   = "ab"
)

// Cell names an article B cell: a server with a blocking time.
func Cell(server string, blockMs int) string { return fmt.Sprintf("%s-block%d", server, blockMs) }

// row is the throughput row of cell id by generator gen.
func row(d Data, id, gen string) (report.Throughput, error) {
	i := slices.IndexFunc(d.Throughput, func(t report.Throughput) bool { return t.ID == id && t.Generator == gen })
	if i < 0 {
		return report.Throughput{}, fmt.Errorf("%s: no row from %s", id, gen)
	}
	t := d.Throughput[i]
	if len(t.ReqPerSRuns) == 0 || t.ReqPerS <= 0 {
		return report.Throughput{}, fmt.Errorf("%s: %s measured no rate", id, gen)
	}
	return t, nil
}

// rowCheck reads our generator's rows of cells and judges them.
type rowCheck struct {
	cells []string
	judge func(d Data, rows []report.Throughput) (Outcome, error)
}

func (c rowCheck) Needs() []string { return c.cells }

func (c rowCheck) Eval(d Data) (Outcome, error) {
	rows := make([]report.Throughput, len(c.cells))
	for i, id := range c.cells {
		r, err := row(d, id, Ours)
		if err != nil {
			return Outcome{}, err
		}
		rows[i] = r
	}
	return c.judge(d, rows)
}

// RateBetween holds when the cell's rate is in [lo, hi] req/s.
func RateBetween(cell string, lo, hi float64) Check {
	return rowCheck{[]string{cell}, func(_ Data, r []report.Throughput) (Outcome, error) {
		v := r[0].ReqPerS
		return Outcome{v, fmt.Sprintf("%g to %g", lo, hi), v >= lo && v <= hi}, nil
	}}
}

// SpreadAtMost holds when, in the typical round, the fastest cell serves
// at most factor times the slowest: the measured value is the largest,
// over every two cells a and b, of the median of their rates' ratios
// run by run, rate_a[k] / rate_b[k] for each round k and each generator
// (ours against ours, ab against ab: 2 x rounds ratios). Run k of each
// cell must come from round k of one measurement (engine.RoundsB), so
// that a machine slower for a while slows both sides of a ratio; the
// medians of cells measured one after another differed by that while's
// slowness. Both generators count because the claim is about the servers,
// and twice the ratios narrow the tails (reports/measurements.md).
func SpreadAtMost(cells []string, factor float64) Check {
	return rowCheck{cells, func(d Data, ours []report.Throughput) (Outcome, error) {
		rows := map[string][2]report.Throughput{}
		for _, o := range ours {
			a, err := row(d, o.ID, AB)
			if err != nil {
				return Outcome{}, err
			}
			rows[o.ID] = [2]report.Throughput{o, a}
		}
		m := 0.0
		for _, a := range cells {
			for _, b := range cells {
				if a == b {
					continue
				}
				var all []float64
				for g := range 2 {
					r, err := runRatios(rows[a][g], rows[b][g])
					if err != nil {
						return Outcome{}, err
					}
					all = append(all, r...)
				}
				m = max(m, stats.Median(all))
			}
		}
		return Outcome{m, fmt.Sprintf("<= %g (median ratio over rounds)", factor), m <= factor}, nil
	}}
}

// RatioAtMost holds when rate(a) / rate(b) is at most limit.
func RatioAtMost(a, b string, limit float64) Check {
	return rowCheck{[]string{a, b}, func(_ Data, rs []report.Throughput) (Outcome, error) {
		m := rs[0].ReqPerS / rs[1].ReqPerS
		return Outcome{m, fmt.Sprintf("<= %g", limit), m <= limit}, nil
	}}
}

// KeepsRate holds when the blocking cell serves at least share of what a
// server that is never held up by its blocking call could: the smaller of
// its own non-blocking rate (free) and the concurrency over the blocking
// time (C / 0.1 s = 1,000 req/s at the article's -c 100). The measured
// value is the blocking rate over that ceiling.
func KeepsRate(blocking, free string, share float64) Check {
	return rowCheck{[]string{blocking, free}, func(_ Data, rs []report.Throughput) (Outcome, error) {
		b, f := rs[0], rs[1]
		if b.BlockingMs <= 0 || b.C <= 0 {
			return Outcome{}, fmt.Errorf("%s: no blocking time or concurrency recorded", b.ID)
		}
		ceiling := min(f.ReqPerS, float64(b.C)/(float64(b.BlockingMs)/1000))
		m := b.ReqPerS / ceiling
		return Outcome{m, fmt.Sprintf(">= %g of min(%.0f, %d / %g s) = %.0f req/s", share, f.ReqPerS, b.C,
			float64(b.BlockingMs)/1000, ceiling), m >= share}, nil
	}}
}

// NoFailures holds when no request failed in any row of the cells, from
// either generator.
func NoFailures(cells []string) Check {
	return rowCheck{cells, func(d Data, _ []report.Throughput) (Outcome, error) {
		failed := 0
		for _, id := range cells {
			for _, gen := range []string{Ours, AB} {
				r, err := row(d, id, gen)
				if err != nil {
					return Outcome{}, err
				}
				failed += r.Failed
			}
		}
		return Outcome{float64(failed), "= 0", failed == 0}, nil
	}}
}

// MinPairs is the fewest paired runs a ratio of rows is judged on.
const MinPairs = 3

// PairedRatio is the median over pairs k of ours_k / ab_k, our
// generator's rate over ab's in the k-th pair of runs against the same
// server: pairing cancels the server's drift from one pair to the next,
// and the median ignores a pair that the machine disturbed.
func PairedRatio(ours, ab report.Throughput) (float64, error) {
	r, err := runRatios(ours, ab)
	if err != nil {
		return 0, err
	}
	return stats.Median(r), nil
}

// runRatios are a_k / b_k for each run k of two rows taken run by run
// (pairs of generators, or rounds of servers); rows of unequal or too few
// runs (MinPairs) are missing data.
func runRatios(a, b report.Throughput) ([]float64, error) {
	n := len(a.ReqPerSRuns)
	if n != len(b.ReqPerSRuns) || n < MinPairs {
		return nil, fmt.Errorf("%s (%s): %d runs against %d of %s (%s), want as many of each and at least %d",
			a.ID, a.Generator, n, len(b.ReqPerSRuns), b.ID, b.Generator, MinPairs)
	}
	ratios := make([]float64, n)
	for k := range n {
		if b.ReqPerSRuns[k] <= 0 {
			return nil, fmt.Errorf("%s (%s) measured no rate in run %d", b.ID, b.Generator, k+1)
		}
		ratios[k] = a.ReqPerSRuns[k] / b.ReqPerSRuns[k]
	}
	return ratios, nil
}

// OursMatchesAB holds when, on every cell, our generator's paired ratio to
// ab (PairedRatio) is within tol of 1; the measured value is the worst
// |ratio - 1|.
func OursMatchesAB(cells []string, tol float64) Check {
	return rowCheck{cells, func(d Data, ours []report.Throughput) (Outcome, error) {
		worst := 0.0
		for _, o := range ours {
			a, err := row(d, o.ID, AB)
			if err != nil {
				return Outcome{}, err
			}
			r, err := PairedRatio(o, a)
			if err != nil {
				return Outcome{}, err
			}
			worst = max(worst, math.Abs(r-1))
		}
		return Outcome{worst, fmt.Sprintf("<= %g", tol), worst <= tol}, nil
	}}
}

// OursVsABTolerance is how far from ab's our generator's paired ratio may
// be. reports/measurements.md has the distribution behind it: the worst
// cell of a quiet series is 0.04 to 0.12 from 1 (ours is 2 to 10 % slower
// than ab on some servers), 0.22 with a compiler and a browser on the same
// two cores; a generator slowed to the bottleneck is 0.6 from 1.
const OursVsABTolerance = 0.25

// MaxGeneratorBusy is the largest share of its core our generator may use
// while it loads a server: above it, the generator may be what sets the
// rate. Quiet or loaded, ours uses 0.19 to 0.39 here; one slowed to the
// bottleneck, 0.97 to 1.
const MaxGeneratorBusy = 0.8

// GeneratorHeadroom holds when, on every cell, our generator used at most
// maxBusy of its core (GeneratorBusy, the median over the repeats); the
// measured value is the busiest cell's. Unlike a rate, a generator's CPU
// per wall second does not move when the machine slows the server, so
// this check does not fail on noise; it fails when the generator itself
// is saturated.
func GeneratorHeadroom(cells []string, maxBusy float64) Check {
	return rowCheck{cells, func(_ Data, ours []report.Throughput) (Outcome, error) {
		worst := 0.0
		for _, o := range ours {
			if len(o.GeneratorBusyRuns) == 0 {
				return Outcome{}, fmt.Errorf("%s: no CPU time of our generator", o.ID)
			}
			worst = max(worst, o.GeneratorBusy)
		}
		return Outcome{worst, fmt.Sprintf("<= %g", maxBusy), worst <= maxBusy}, nil
	}}
}
