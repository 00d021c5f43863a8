package buffermodel

import (
	"fmt"
	"slices"
)

// Memory is the memory model of a protecting setup under many slow
// clients: the container that protects (the front door behind a proxy,
// else the app) grows by a fixed cost per concurrent client over a base,
//
//	mem(n) = Base + PerClient × n,
//
// fitted by least squares on the steps measured under AtLimitShare of the
// limit. It predicts the clients at which the container reaches its limit,
// (Limit − Base) / PerClient, and the prediction is checked against the
// bracket the steps measured: above the last step under the limit, and
// at most the first step that reached it (an OOM kill, or a peak at the
// limit), or past the last step when none did.
type Memory struct {
	LimitMiB float64
}

// AtLimitShare is the share of its limit at which a container's peak
// counts as the limit reached: the kernel reclaims near the limit, so a
// peak there is capped, not a point on the line (Uvicorn held 10,000
// silent connections at 128.0 MiB of 128).
const AtLimitShare = 0.98

// MemoryStep is one step: its clients, its container's memory peak (MiB;
// 0 when unobserved) and whether the OOM killer hit it in a sound run.
type MemoryStep struct {
	Clients int
	MiB     float64
	OOM     bool
}

// MemoryFit is the model fitted on a setup's steps, and its check.
type MemoryFit struct {
	BaseMiB, PerClientKiB float64
	// Fitted are the steps the line was fitted on.
	Fitted []int
	// Predicted is the clients at which the limit is reached.
	Predicted float64
	// LastUnder is the most clients of a step under the limit before
	// any reached it; FirstReached the fewest that reached it (0: none).
	LastUnder, FirstReached int
	// Right says the prediction falls in the bracket: (LastUnder,
	// FirstReached], or past LastUnder when nothing reached the limit.
	Right bool
	// Problem says why nothing was predicted.
	Problem string
}

// Fit fits the model on steps.
func (m Memory) Fit(steps []MemoryStep) MemoryFit {
	steps = slices.Clone(steps)
	slices.SortFunc(steps, func(a, b MemoryStep) int { return a.Clients - b.Clients })
	var f MemoryFit
	for _, s := range steps {
		if s.OOM || s.MiB >= AtLimitShare*m.LimitMiB {
			f.FirstReached = s.Clients
			break
		}
		if s.MiB > 0 {
			f.LastUnder = s.Clients
		}
	}
	var xs, ys []float64
	for _, s := range steps {
		if !s.OOM && s.MiB > 0 && s.MiB < AtLimitShare*m.LimitMiB {
			xs, ys = append(xs, float64(s.Clients)), append(ys, s.MiB)
			f.Fitted = append(f.Fitted, s.Clients)
		}
	}
	if len(xs) < 2 {
		f.Problem = fmt.Sprintf("%d steps under the limit with a memory peak: the line needs 2", len(xs))
		return f
	}
	base, slope := leastSquares(xs, ys)
	f.BaseMiB, f.PerClientKiB = base, slope*1024
	if slope <= 0 {
		f.Problem = fmt.Sprintf("memory did not grow with clients (%.3f KiB a client)", f.PerClientKiB)
		return f
	}
	f.Predicted = (m.LimitMiB - base) / slope
	f.Right = f.Predicted > float64(f.LastUnder) && (f.FirstReached == 0 || f.Predicted <= float64(f.FirstReached))
	return f
}

// leastSquares is the line y = a + b x through the points.
func leastSquares(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return sy / n, 0
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b
}
