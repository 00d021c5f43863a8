package buffermodel

import (
	"math"
	"slices"

	"wsgilab/bench/internal/report"
)

// Temp is the temp-file model of NGINX's proxy_buffering on. A response
// of S bytes, read by its client at R, spills to NGINX's temp file what
// the path from NGINX to the client (NGINX's send queue, the client's
// receive queue, what the client read meanwhile) does not hold, D bytes
// per download, up to proxy_max_temp_file_size M:
//
//	spill = min(M, S − D)
//
// D is measured, never guessed: the body size less the temp-file peak
// per download, in cells whose spill stayed under M.
//
// Past M, NGINX stops reading the upstream: the buffers it fills then
// wait behind the temp file, which goes to the client first. The app's
// worker is held until its client has read the temp file (M/R) and the
// rest fits the sockets: a cliff, not a slope. A response of M + D bytes
// holds its worker for nothing; one a few MiB larger for M/R and more.
//
// A temp directory of RoomBytes holds floor(Room / spill) spilling
// responses at once. Each one past that fails its write to the temp file
// (ENOSPC), and NGINX ends that response short.
type Temp struct {
	MaxTempBytes float64
	RoomBytes    float64
	// DefaultMaxTempBytes is NGINX's own default limit (1024m), at which
	// the report restates the rule.
	DefaultMaxTempBytes float64
}

// TempTolerance is the relative error a predicted temp-file peak may have
// and still count as right.
const TempTolerance = 0.10

// CutSlack is how many readers past the predicted count a run may cut and
// the prediction still be right. A full directory's room holds
// floor(room / spill) spilling responses; the article's 80 MiB against
// 12.8 MiB spills leaves a quarter of a spill (3.2 MiB), and a run whose
// path to the client held under its median (D under 2.7 MiB) spills one
// more reader past it: 2 readers cut in 18 runs of 8, 3 in one
// (reports/measurements.md). Never fewer than predicted.
const CutSlack = 1

// HeldShare is the share of the predicted hold (M/R) a worker past the
// limit must be held to count as right: the app's write starts a few ms
// before its client's first read, and its end is taken when the
// generator resumes (measured 20.3 to 21.1 s against 16 s).
const HeldShare = 0.9

// SpillBytes is what one response of size bytes spills, its path to the
// client holding held bytes.
func (t Temp) SpillBytes(size, held float64) float64 { return min(t.MaxTempBytes, max(0, size-held)) }

// Past is whether a response of size bytes outgrows the limit.
func (t Temp) Past(size, held float64) bool { return size-held > t.MaxTempBytes }

// Fits is how many of n responses of size bytes the temp directory holds
// at once.
func (t Temp) Fits(n int, size, held float64) int {
	s := t.SpillBytes(size, held)
	if s == 0 {
		return n
	}
	return min(n, int(math.Floor(t.RoomBytes/s)))
}

// Rule is the rule at limit maxTemp and rate: the smallest response that
// holds its worker, and for how long at least.
func (t Temp) Rule(maxTemp, rate, held float64) report.TempRule {
	return report.TempRule{MaxTempBytes: maxTemp, RateBytesPerS: rate, SmallestHeldBytes: maxTemp + held, HeldS: maxTemp / rate}
}

// Fit measures D on fit (cells of two sync workers behind buffering on
// whose temp files stayed under the limit; others are skipped) and
// predicts each of cells from the fit cells but itself.
func (t Temp) Fit(fit, cells []report.Condition) report.Exhaustion {
	out := report.Exhaustion{Model: report.TempLimits{MaxTempBytes: t.MaxTempBytes, RoomBytes: t.RoomBytes},
		From: []string{}, Cells: []report.ExhaustionCell{}}
	type heldBy struct {
		id   string
		held float64
	}
	var helds []heldBy
	for _, c := range fit {
		if c.RunsValid == 0 || c.TempfilePeakMiB == nil || c.Downloads == 0 {
			continue
		}
		per := *c.TempfilePeakMiB * (1 << 20) / float64(c.Downloads)
		if per <= 0 || per >= 0.97*t.MaxTempBytes {
			continue // nothing spilled, or the limit cut the spill
		}
		helds = append(helds, heldBy{c.ID, float64(c.BodyBytes) - per})
	}
	var all []float64
	for _, h := range helds {
		out.From, all = append(out.From, h.id), append(all, h.held)
	}
	slices.Sort(out.From)
	if len(all) == 0 {
		out.Problem = "no cell behind buffering on spilled under the limit: nothing measures what the path to the client holds"
		return out
	}
	out.HeldBytesPerDownload = median(all)
	rate := 0.0
	for _, c := range cells {
		if rate != 0 && c.ReadRate != rate {
			out.Problem = "the cells' read rates differ: the rule at NGINX's default is restated at one rate"
		}
		var others []float64
		for _, h := range helds {
			if h.id != c.ID {
				others = append(others, h.held)
			}
		}
		out.Cells = append(out.Cells, t.predict(c, others))
		rate = c.ReadRate
	}
	out.AtDefault = t.Rule(t.DefaultMaxTempBytes, rate, out.HeldBytesPerDownload)
	return out
}

// predict predicts cell c from the others' held bytes.
func (t Temp) predict(c report.Condition, others []float64) report.ExhaustionCell {
	cell := report.ExhaustionCell{Condition: c.ID, Readers: c.Downloads, SizeBytes: c.BodyBytes, Runs: c.RunsSound,
		P95Ms: c.P95MsSound, TempPeakMiB: c.TempfilePeakMiB, WriteS: c.WriteS}
	if c.RunsSound > 0 {
		cell.Cut, cell.CutMin, cell.CutMax = float64(c.CutMin+c.CutMax)/2, c.CutMin, c.CutMax
		if c.CutMin == c.CutMax {
			cell.Cut = float64(c.CutMin)
		}
	}
	switch {
	case c.RunsSound == 0:
		cell.Problem = "no sound run"
		return cell
	case len(others) == 0:
		cell.Problem = "no other cell measures what the path to the client holds"
		return cell
	}
	held, size := median(others), float64(c.BodyBytes)
	fits := t.Fits(c.Downloads, size, held)
	cell.PredictedTempPeakMiB = float64(fits) * t.SpillBytes(size, held) / (1 << 20)
	cell.PredictedCut = c.Downloads - fits
	cell.PredictedPast = t.Past(size, held)
	if cell.PredictedPast {
		cell.PredictedHeldS = t.MaxTempBytes / c.ReadRate
	}
	cell.Right = c.CutMin >= cell.PredictedCut && c.CutMax <= cell.PredictedCut+CutSlack &&
		(!cell.PredictedPast || c.WriteS >= HeldShare*cell.PredictedHeldS)
	if cell.PredictedCut == 0 {
		cell.Right = cell.Right && c.TempfilePeakMiB != nil &&
			math.Abs(*c.TempfilePeakMiB-cell.PredictedTempPeakMiB) <= TempTolerance*cell.PredictedTempPeakMiB
	}
	return cell
}
