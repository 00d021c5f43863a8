package htmlreport

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"wsgilab/bench/internal/report"
)

// The scale table (matrix.json's capacities under the scale columns):
// each protecting setup's bracket, and what each step cost.

// scaleColumn describes one scale column (engine.ScaleColumns) on the
// page.
type scaleColumn struct {
	ID, Heading, Intro string
	// Axis names the x axis: what the steps count.
	Axis string
}

// scaleColumns are the scale columns in page order.
var scaleColumns = []scaleColumn{
	{"scale-read", "Hundreds of slow mobile readers",
		"Each protecting setup stepped from 16 to 1,024 slow mobile readers (384 KiB read at 16 KiB/s under a 64 KiB send-buffer ceiling); its bracket is the largest step held and the smallest broken.",
		"concurrent slow readers"},
	{"scale-silent", "Thousands of silent connections",
		"Each protecting setup stepped from 16 to 10,000 connections that send nothing, opened 2,500 a second and held 9.5 s after the last, while /fast runs.",
		"silent connections"},
	{"scale-idle", "Thousands of idle keep-alive connections",
		"Each protecting setup stepped from 16 to 10,000 keep-alive connections idle after one answered request, opened 1,000 a second and held 9.5 s after the last (unless the server closes them first), while /fast runs.",
		"idle keep-alive connections"},
}

func isScaleColumn(id string) bool {
	return slices.ContainsFunc(scaleColumns, func(c scaleColumn) bool { return c.ID == id })
}

type scaleView struct {
	scaleColumn
	Missing string
	Charts  chartsView
	Rows    []scaleRow
}

type scaleRow struct {
	Setup, Bracket, Model, Steps string
}

// modelText says what the memory model predicted against what was
// measured.
func modelText(m *report.MemoryFit) string {
	switch {
	case m == nil:
		return "–"
	case m.Problem != "":
		return "no prediction: " + m.Problem
	}
	t := fmt.Sprintf("the %s grows %s KiB a client over %s MiB: its %s MiB limit at %s clients; measured ",
		m.Role, num(m.PerClientKiB), num(m.BaseMiB), num(m.LimitMiB), num(m.Predicted))
	if m.FirstReached > 0 {
		t += fmt.Sprintf("between %d and %d", m.LastUnder, m.FirstReached)
	} else {
		t += fmt.Sprintf("not reached at %d", m.LastUnder)
	}
	if m.Right {
		return t + " (right)"
	}
	return t + " (wrong)"
}

// scaleSetup is one setup's scale capacity.
type scaleSetup struct {
	name string
	c    report.Capacity
}

func scaleSetups(m *report.Matrix, column string) []scaleSetup {
	if m == nil {
		return nil
	}
	var out []scaleSetup
	for _, r := range m.Rows {
		for _, c := range r.Capacity {
			if c.Column == column {
				out = append(out, scaleSetup{r.ID + " · " + c.Path, c})
			}
		}
	}
	return out
}

// buildScale is a view per scale column.
func buildScale(m *report.Matrix) []scaleView {
	var out []scaleView
	for _, col := range scaleColumns {
		out = append(out, buildScaleColumn(m, col))
	}
	return out
}

func buildScaleColumn(m *report.Matrix, col scaleColumn) scaleView {
	v := scaleView{scaleColumn: col}
	setups := scaleSetups(m, col.ID)
	if len(setups) == 0 {
		v.Missing = "no setup was stepped under this column in this series (make repro steps every one)"
		return v
	}
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
			if fds := stepFDs(st); fds > 0 {
				t += fmt.Sprintf(", %s fds", num(fds))
			}
			if o := outcomesText(st.SlowOutcomes); o != "" && col.ID != "scale-read" {
				t += ", " + o
			}
			if st.ClientCPUPercent != nil {
				t += fmt.Sprintf(", client %s %% of a core", num(*st.ClientCPUPercent))
			}
			steps = append(steps, t)
		}
		v.Rows = append(v.Rows, scaleRow{Setup: s.name, Bracket: s.c.Text, Model: modelText(s.c.Memory), Steps: strings.Join(steps, "; ")})
	}
	v.Charts = scaleCharts(col, setups)
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

// stepFDs is the descriptors a step's protection held: the proxy's
// behind a proxy, else the app's, as stepMemory; 0 when unread.
func stepFDs(st report.CapacityStep) float64 {
	switch {
	case st.ProxyFDsPeak != nil:
		return *st.ProxyFDsPeak
	case st.AppFDsPeak != nil:
		return *st.AppFDsPeak
	}
	return 0
}

// scaleCharts plot /fast p95 and the memory a setup's protection cost
// against its concurrent slow readers, both axes logarithmic.
func scaleCharts(col scaleColumn, setups []scaleSetup) chartsView {
	fig := figure{Name: col.ID, Title: col.Heading + ": /fast p95 and what it cost against " + col.Axis,
		Caption: "Each step's median over its valid runs; a step with no valid run (a client cut or refused, the OOM killer) is not drawn, and the bracket above says where it broke. Memory and open descriptors are the front door's behind a proxy (NGINX's temp files included in its memory, as its tmpfs counts), else the app's."}
	lat := newPlot("", "/fast p95")
	costs := []struct {
		p      *plot.Plot
		of     func(report.CapacityStep) float64
		lo, hi float64
	}{
		{p: newPlot("", "memory (MiB)"), of: stepMemory, lo: math.Inf(1)},
		{p: newPlot("", "open descriptors"), of: stepFDs, lo: math.Inf(1)},
	}
	leg := newLegend()
	loP, hiP, loN, hiN := math.Inf(1), 0.0, math.Inf(1), 0.0
	var steps stepTicks
	for i, s := range setups {
		var ps plotter.XYs
		cs := make([]plotter.XYs, len(costs))
		for _, st := range s.c.Steps {
			n := float64(st.Clients)
			if st.P95Ms > 0 && st.Class != report.ClassFailed && st.Class != report.ClassNoData {
				ps = append(ps, plotter.XY{X: n, Y: st.P95Ms})
				loP, hiP = math.Min(loP, st.P95Ms), math.Max(hiP, st.P95Ms)
			}
			for k := range costs {
				if v := costs[k].of(st); v > 0 {
					cs[k] = append(cs[k], plotter.XY{X: n, Y: v})
					costs[k].lo, costs[k].hi = math.Min(costs[k].lo, v), math.Max(costs[k].hi, v)
				}
			}
			loN, hiN = math.Min(loN, n), math.Max(hiN, n)
			if !slices.Contains(steps, n) {
				steps = append(steps, n)
			}
		}
		c := colorN(i)
		shape := draw.CircleGlyph{}
		named := false
		if lp := line(ps, c, 1.2); lp != nil { // nil without points
			add(lat, lp, dots(ps, c, 2.2, shape))
			legendAdd(leg, s.name, lp)
			named = true
		}
		for k := range costs {
			if lc := line(cs[k], c, 1.2); lc != nil {
				add(costs[k].p, lc, dots(cs[k], c, 2.2, shape))
				if !named {
					legendAdd(leg, s.name, lc)
					named = true
				}
			}
		}
	}
	if hiP == 0 {
		return chartsView{Missing: "no step of this column has a valid run to draw"}
	}
	logY(lat, loP, hiP, msLabel)
	plots := []*plot.Plot{lat}
	for _, c := range costs {
		if c.hi > 0 { // a cost no step observed is not drawn
			logY(c.p, c.lo, c.hi, plainLabel)
			plots = append(plots, c.p)
		}
	}
	plots[len(plots)-1].X.Label.Text = col.Axis
	for _, p := range plots {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = steps
		p.X.Min, p.X.Max = loN/1.2, hiN*1.2
	}
	fig.paint(wideW, vg.Length(len(plots))*wideH, leg, plots...)
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

// outcomesText is a step's slow clients by outcome, most first: "8096
// closed, 1904 held".
func outcomesText(o map[string]int) string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if o[a] != o[b] {
			return o[b] - o[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", o[k], k))
	}
	return strings.Join(parts, ", ")
}

// limitRow is one connection-limit cell on the page.
type limitRow struct {
	Condition, Moved, Against, Outcome string
}

// buildLimits lists the connection-limit cells (matrix.json's limits).
func buildLimits(m *report.Matrix) []limitRow {
	if m == nil {
		return nil
	}
	var out []limitRow
	for _, l := range m.Limits {
		o := fmt.Sprintf("%s: /fast p95 %s ms", l.Class, num(l.P95Ms))
		if l.RequestsFailed > 0 {
			o += fmt.Sprintf(", %d of %d /fast requests failed", l.RequestsFailed, l.RequestsTotal)
		}
		if t := outcomesText(l.SlowOutcomes); t != "" {
			o += "; connections " + t
		}
		if l.ConnectMsMax > 0 {
			o += fmt.Sprintf("; slowest connect %s ms", num(l.ConnectMsMax))
		}
		o += fmt.Sprintf(" (%d of %d runs sound)", l.RunsSound, l.RunsTotal)
		out = append(out, limitRow{Condition: l.Condition, Moved: l.Moved, Against: l.Against, Outcome: o})
	}
	return out
}
