// Package buffermodel predicts, from bytes the lab measured, when a sync
// worker's write of a slow download ends and whether /fast stalls.
//
// The mechanism: a sync worker is busy until its response's rest fits
// into what the path between it and the client holds (the app socket's
// send queue, NGINX's upstream receive queue and its send queue to the
// client, the client's receive queue). At time t a client reading at rate
// R has read R·t bytes, so a write of S bytes through a path that holds C
// bytes per download ends at
//
//	t_write = max(0, (S − C) / R).
//
// C is measured, never guessed: what the path held when the app's write
// ended, i.e. the bytes the client had not read yet by its own count,
// which equal the sockets' queued bytes then (the harness check
// write-ends-when-rest-fits). It is not the peak of the queues: early in a
// download the autotuned send buffer holds up to a third more than it
// still holds when the write ends, and predicting from the peak ends
// writes a second early. Autotuning also makes C depend on the rate when
// tcp_wmem's ceiling is not reached, so C is taken per path, TCP profile
// and rate, from the cells whose write waited for their clients
// (saturated: the path held less than the response). Each cell is
// predicted from the others at its path, profile and rate (leave one
// out: the median of their C), never from itself.
//
// With as many downloads as sync workers, every worker is busy until its
// write ends, and /fast's requests queue until the first is freed: that
// one's path held the most (C_first, the largest of the downloads'). The
// request at p95 (by nearest rank) is the k-th earliest, sent
// Schedule.lead() after the downloads start, and waits until then. A cell
// stalls when that p95 exceeds StallMs.
package buffermodel

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"wsgilab/bench/internal/report"
)

// Defaults of Model.
const (
	// DefaultStallMs is where /fast counts as stalled: the articles' and
	// the claims' 1 s.
	DefaultStallMs = 1000
	// DefaultWriteTolerance is the relative error a predicted write time
	// may have and still count as right.
	DefaultWriteTolerance = 0.25
	// DefaultWriteFloorS is the absolute error a predicted write time may
	// always have: below two /fast periods (2 × 125 ms) a write's end
	// moves no /fast request's latency by more than one period, and the
	// app's write of a few MiB into empty buffers takes a few ms to tens
	// of ms depending on the CPU quota's phase.
	DefaultWriteFloorS = 0.25
)

// SaturatedS tells a cell whose write waited for its client from one whose
// path took the response at once: the client had read more than this long
// of its rate when the write ended. A write into empty buffers takes a few
// ms to tens of ms, while the client reads from the first byte.
const SaturatedS = 0.1

// Schedule is /fast's open-loop schedule: Count requests, Rate per
// second, the first Offset after the downloads start.
type Schedule struct {
	Offset time.Duration
	Rate   float64
	Count  int
}

// lead is how long after the downloads start the request at p95 is sent:
// with every worker busy, the requests that wait longest are the earliest,
// and the one at the nearest-rank p95 is the (Count − ceil(0.95·Count) +
// 1)-th of them.
func (s Schedule) lead() float64 {
	k := s.Count - int(math.Ceil(0.95*float64(s.Count))) + 1
	return s.Offset.Seconds() + float64(k-1)/s.Rate
}

// Model is the buffer model with its judging thresholds.
type Model struct {
	Schedule       Schedule
	StallMs        float64
	WriteTolerance float64
	WriteFloorS    float64
}

// New is a model for schedule s with the default thresholds.
func New(s Schedule) Model {
	return Model{Schedule: s, StallMs: DefaultStallMs, WriteTolerance: DefaultWriteTolerance, WriteFloorS: DefaultWriteFloorS}
}

// WriteS is the predicted write time of size bytes read at rate bytes/s
// through a path that holds capacity bytes per download.
func (m Model) WriteS(size, rate, capacity float64) float64 {
	return max(0, (size-capacity)/rate)
}

// P95Ms is the predicted /fast p95 above its idle latency, when the first
// worker is freed after firstS seconds: 0 when that is before the p95
// request is sent.
func (m Model) P95Ms(firstS float64) float64 {
	return max(0, 1000*(firstS-m.Schedule.lead()))
}

// IdleBytes is the largest size that keeps /fast idle at rate through a
// path whose first freed download held first bytes: its first worker is
// freed as the p95 request is sent.
func (m Model) IdleBytes(rate, first float64) float64 {
	return first + rate*m.Schedule.lead()
}

// BoundaryBytes is the smallest size that stalls at rate through a path
// whose first freed download held first bytes: its write lasts the p95
// request's lead plus StallMs.
func (m Model) BoundaryBytes(rate, first float64) float64 {
	return first + rate*(m.Schedule.lead()+m.StallMs/1000)
}

// groupKey is a group of cells measured and predicted together: a path
// under a profile at a rate.
type groupKey struct {
	path, profile string
	rate          float64
}

// held is one cell's measured capacity.
type held struct {
	id        string
	c, first  float64
	peak      *float64
	hops      map[string]float64
	size      float64
	saturated bool
}

func heldOf(c report.Condition) (held, bool) {
	if c.RunsValid == 0 || c.WriteEndUnreadBytes == nil || c.WriteEndUnreadMaxBytes == nil || c.Downloads == 0 {
		return held{}, false
	}
	n := float64(c.Downloads)
	h := held{id: c.ID, c: *c.WriteEndUnreadBytes, first: *c.WriteEndUnreadMaxBytes, size: float64(c.BodyBytes),
		hops: map[string]float64{}}
	// A path that took the whole response at once held all of it: its
	// capacity is then only known to be at least that. The write waited
	// for the client when the client had read more than SaturatedS of
	// its rate by then.
	h.saturated = h.size-h.first > c.ReadRate*SaturatedS
	if c.PathPeakBytes != nil {
		h.peak = report.Float(*c.PathPeakBytes / n)
	}
	for hop, b := range c.HopPeakBytes {
		h.hops[string(hop)] = b / n
	}
	return h, true
}

// Fit measures each path's capacity per profile and rate on the sweep's
// cells (conditions of two sync workers with as many downloads, on the
// direct and buffering-off paths) and predicts each cell from the others.
func (m Model) Fit(cells []report.Condition) report.Sweep {
	out := report.Sweep{Model: report.SweepModel{StallMs: m.StallMs, WriteTolerance: m.WriteTolerance,
		WriteFloorS: m.WriteFloorS, LeadS: m.Schedule.lead()},
		Capacities: []report.PathCapacity{}, Cells: []report.SweepCell{}, Boundaries: []report.Boundary{}}
	groups := map[groupKey][]report.Condition{}
	for _, c := range cells {
		k := groupKey{c.Path, c.TCPProfile, c.ReadRate}
		groups[k] = append(groups[k], c)
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b groupKey) int {
		return cmp.Or(cmp.Compare(a.profile, b.profile), cmp.Compare(a.path, b.path), cmp.Compare(a.rate, b.rate))
	})
	for _, k := range keys {
		var sat, unsat []held
		for _, c := range groups[k] {
			if h, ok := heldOf(c); ok && h.saturated {
				sat = append(sat, h)
			} else if ok {
				unsat = append(unsat, h)
			}
		}
		capy := capacity(k, sat, unsat)
		out.Capacities = append(out.Capacities, capy)
		if capy.Problem == "" {
			out.Boundaries = append(out.Boundaries, report.Boundary{Path: k.path, Profile: k.profile, RateBytesPerS: k.rate,
				SizeBytes: m.BoundaryBytes(k.rate, capy.FirstFreedBytes), IdleSizeBytes: m.IdleBytes(k.rate, capy.FirstFreedBytes),
				LowerBound: !capy.Saturated})
		}
		for _, c := range groups[k] {
			others := slices.DeleteFunc(slices.Clone(sat), func(h held) bool { return h.id == c.ID })
			out.Cells = append(out.Cells, m.predict(c, others))
		}
	}
	slices.SortFunc(out.Cells, func(a, b report.SweepCell) int {
		return cmp.Or(cmp.Compare(a.Profile, b.Profile), cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.RateBytesPerS, b.RateBytesPerS), cmp.Compare(a.SizeBytes, b.SizeBytes), cmp.Compare(a.Condition, b.Condition))
	})
	out.Score = m.score(out.Cells)
	return out
}

// capacity is the path's capacity at one profile and rate: the medians
// over its saturated cells or, when none is, the most an unsaturated one
// held (a lower bound).
func capacity(k groupKey, sat, unsat []held) report.PathCapacity {
	capy := report.PathCapacity{Path: k.path, Profile: k.profile, RateBytesPerS: k.rate, From: []string{},
		HopPeakBytesPerDownload: map[string]float64{}}
	from := sat
	if len(sat) == 0 {
		if len(unsat) == 0 {
			capy.Problem = "no cell of this path, profile and rate has valid runs with the clients' unread bytes at the write ends"
			return capy
		}
		from = []held{slices.MaxFunc(unsat, func(a, b held) int { return cmp.Compare(a.first, b.first) })}
	}
	capy.Saturated = len(sat) > 0
	var cs, firsts, peaks []float64
	hops := map[string][]float64{}
	for _, h := range from {
		capy.From = append(capy.From, h.id)
		cs, firsts = append(cs, h.c), append(firsts, h.first)
		if h.peak != nil {
			peaks = append(peaks, *h.peak)
		}
		for hop, b := range h.hops {
			hops[hop] = append(hops[hop], b)
		}
	}
	slices.Sort(capy.From)
	capy.BytesPerDownload, capy.FirstFreedBytes = median(cs), median(firsts)
	if len(peaks) == len(from) {
		capy.PeakBytesPerDownload = report.Float(median(peaks))
	}
	for hop, bs := range hops {
		capy.HopPeakBytesPerDownload[hop] = median(bs)
	}
	return capy
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// predict predicts c from others, the saturated cells of its path,
// profile and rate but c.
func (m Model) predict(c report.Condition, others []held) report.SweepCell {
	cell := report.SweepCell{Condition: c.ID, Path: c.Path, Profile: c.TCPProfile, SizeBytes: c.BodyBytes,
		RateBytesPerS: c.ReadRate, Runs: c.RunsValid, P95Ms: c.P95Ms, P95MsMin: c.P95MsMin, P95MsMax: c.P95MsMax,
		WriteS: c.WriteS, HeldBytesPerDownload: c.WriteEndUnreadBytes, Stalled: c.P95Ms > m.StallMs}
	switch {
	case c.RunsValid == 0:
		cell.Problem = "no valid run"
		return cell
	case len(others) == 0:
		cell.Problem = "no other saturated cell at its path, profile and rate to predict it from"
		return cell
	}
	var cs, firsts []float64
	for _, h := range others {
		cs, firsts = append(cs, h.c), append(firsts, h.first)
	}
	size := float64(c.BodyBytes)
	cell.Predicted = true
	cell.CapacityBytes, cell.FirstFreedBytes = median(cs), median(firsts)
	cell.PredictedWriteS = m.WriteS(size, c.ReadRate, cell.CapacityBytes)
	cell.PredictedP95Ms = m.P95Ms(m.WriteS(size, c.ReadRate, cell.FirstFreedBytes))
	cell.PredictedStall = cell.PredictedP95Ms > m.StallMs
	errS := math.Abs(cell.PredictedWriteS - c.WriteS)
	cell.WriteErrorS = errS
	if c.WriteS > 0 {
		cell.WriteError = report.Float(errS / c.WriteS)
	}
	cell.WriteRight = errS <= max(m.WriteFloorS, m.WriteTolerance*c.WriteS)
	cell.StallRight = cell.Stalled == cell.PredictedStall
	return cell
}

// score counts the predicted cells.
func (m Model) score(cells []report.SweepCell) report.SweepScore {
	var s report.SweepScore
	for _, c := range cells {
		if !c.Predicted {
			continue
		}
		s.Cells++
		if c.WriteRight {
			s.WriteRight++
		}
		if c.StallRight {
			s.StallRight++
		} else {
			s.StallWrong = append(s.StallWrong, c.Condition)
		}
		if !c.WriteRight {
			s.WriteWrong = append(s.WriteWrong, fmt.Sprintf("%s (predicted %.2f s, measured %.2f s)", c.Condition, c.PredictedWriteS, c.WriteS))
		}
	}
	if s.Cells > 0 {
		s.WriteShare = report.Float(float64(s.WriteRight) / float64(s.Cells))
		s.StallShare = report.Float(float64(s.StallRight) / float64(s.Cells))
	}
	return s
}
