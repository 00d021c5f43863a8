package htmlreport

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"wsgilab/bench/internal/report"
)

// The scale column (matrix.json's capacities under "scale-read"): each
// protecting setup's bracket, and what each step cost against its slow
// readers.

// scaleColumn is the scale column's id in matrix.json (engine.ScaleRead).
const scaleColumn = "scale-read"

type scaleView struct {
	Missing string
	Charts  chartsView
	Rows    []scaleRow
}

type scaleRow struct {
	Setup, Bracket, Steps string
}

// scaleSetup is one setup's scale capacity.
type scaleSetup struct {
	name string
	c    report.Capacity
}

func scaleSetups(m *report.Matrix) []scaleSetup {
	if m == nil {
		return nil
	}
	var out []scaleSetup
	for _, r := range m.Rows {
		for _, c := range r.Capacity {
			if c.Column == scaleColumn {
				out = append(out, scaleSetup{r.ID + " · " + c.Path, c})
			}
		}
	}
	return out
}

func buildScale(m *report.Matrix) scaleView {
	setups := scaleSetups(m)
	if len(setups) == 0 {
		return scaleView{Missing: "no setup was stepped under the scale column in this series (make repro steps every one)"}
	}
	var v scaleView
	for _, s := range setups {
		var steps []string
		for _, st := range s.c.Steps {
			t := fmt.Sprintf("%d: %s", st.Clients, st.Class)
			if st.P95Ms > 0 { // figures come from valid runs only
				t += fmt.Sprintf(", p95 %s ms", num(st.P95Ms))
			}
			if len(st.OOMKilled) > 0 {
				t += ", OOM-killed " + strings.Join(st.OOMKilled, " and ")
			}
			if mem := stepMemory(st); mem > 0 {
				t += fmt.Sprintf(", %s MiB", num(mem))
			}
			if st.ClientCPUPercent != nil {
				t += fmt.Sprintf(", client %s %% of a core", num(*st.ClientCPUPercent))
			}
			steps = append(steps, t)
		}
		v.Rows = append(v.Rows, scaleRow{Setup: s.name, Bracket: s.c.Text, Steps: strings.Join(steps, "; ")})
	}
	v.Charts = scaleCharts(setups)
	return v
}

// stepMemory is what a step's protection cost in memory: the proxy's peak
// (its temp files are in its tmpfs) behind a proxy, else the app's; 0
// when unobserved.
func stepMemory(st report.CapacityStep) float64 {
	switch {
	case st.ProxyMemoryPeakMiB != nil:
		return *st.ProxyMemoryPeakMiB
	case st.AppMemoryPeakMiB != nil:
		return *st.AppMemoryPeakMiB
	}
	return 0
}

// scaleCharts plot /fast p95 and the memory a setup's protection cost
// against its concurrent slow readers, both axes logarithmic.
func scaleCharts(setups []scaleSetup) chartsView {
	fig := figure{Name: "scale", Title: "Slow mobile readers: /fast p95 and memory against concurrent readers",
		Caption: "Each step's median over its valid runs; a step with no valid run (a reader cut, the OOM killer) is not drawn, and the bracket above says where it broke. Memory is the front door's container peak behind a proxy (NGINX's temp files included, as its tmpfs counts), else the app's."}
	lat, mem := newPlot("", "/fast p95"), newPlot("concurrent slow readers", "memory (MiB)")
	leg := newLegend()
	loP, hiP, loM, hiM, loN, hiN := math.Inf(1), 0.0, math.Inf(1), 0.0, math.Inf(1), 0.0
	var steps stepTicks
	for i, s := range setups {
		var ps, ms plotter.XYs
		for _, st := range s.c.Steps {
			n := float64(st.Clients)
			if st.P95Ms > 0 && st.Class != report.ClassFailed && st.Class != report.ClassNoData {
				ps = append(ps, plotter.XY{X: n, Y: st.P95Ms})
				loP, hiP = math.Min(loP, st.P95Ms), math.Max(hiP, st.P95Ms)
			}
			if m := stepMemory(st); m > 0 {
				ms = append(ms, plotter.XY{X: n, Y: m})
				loM, hiM = math.Min(loM, m), math.Max(hiM, m)
			}
			loN, hiN = math.Min(loN, n), math.Max(hiN, n)
			if !slices.Contains(steps, n) {
				steps = append(steps, n)
			}
		}
		c := colorN(i)
		shape := draw.CircleGlyph{}
		lp, lm := line(ps, c, 1.2), line(ms, c, 1.2) // nil without points
		if lp != nil {
			add(lat, lp, dots(ps, c, 2.2, shape))
			legendAdd(leg, s.name, lp)
		}
		if lm != nil {
			add(mem, lm, dots(ms, c, 2.2, shape))
			if lp == nil {
				legendAdd(leg, s.name, lm)
			}
		}
	}
	if hiP == 0 {
		return chartsView{Missing: "no step of the scale column has a valid run to draw"}
	}
	plots := []*plot.Plot{lat, mem}
	if hiM == 0 { // no step observed memory: the latency alone
		plots = plots[:1]
		lat.X.Label.Text = mem.X.Label.Text
	}
	for _, p := range plots {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = steps
		p.X.Min, p.X.Max = loN/1.2, hiN*1.2
	}
	logY(lat, loP, hiP, msLabel)
	if len(plots) == 1 {
		fig.paint(wideW, wideH, leg, lat)
		return chartsView{Figures: []figure{fig}, Wide: true}
	}
	logY(mem, loM, hiM, plainLabel)
	fig.paint(wideW, 2*wideH, leg, lat, mem)
	return chartsView{Figures: []figure{fig}, Wide: true}
}

// stepTicks label the x axis at the readers stepped.
type stepTicks []float64

func (s stepTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, v := range s {
		if v >= lo && v <= hi {
			ts = append(ts, plot.Tick{Value: v, Label: plainLabel(v)})
		}
	}
	return ts
}
