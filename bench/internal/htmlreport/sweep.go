package htmlreport

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"wsgilab/bench/internal/report"
)

// The size × rate sweep (sweep.json): a heat map of /fast p95 per path and
// TCP profile with the model's stall boundary, the model's predictions
// against the measurements, and article A's cells under both profiles.

type sweepView struct {
	Missing    string
	Note       string
	Maps       chartsView
	Capacities []kv
	Score      string
	Cells      []sweepRow
	Profiles   profilesView
}

type sweepRow struct {
	Condition, Path, Profile, Size, Rate, Runs string
	P95, P95Range, PredP95                     string
	Write, PredWrite, WriteErr                 string
	Stall, PredStall                           string
	WriteClass, StallClass                     string
	Problem                                    string
}

func buildSweep(f *files) sweepView {
	v := sweepView{Profiles: buildProfiles(f.conditions)}
	if f.sweep == nil {
		v.Missing = "sweep.json is absent: " + notMeasured
		return v
	}
	s := f.sweep
	v.Note = fmt.Sprintf("The model: a sync worker's write of S bytes ends at max(0, (S − C) / R), R the read rate and C what the path "+
		"held per download when the write ended, measured in the other cells of its path, profile and rate (leave one out); /fast's p95 request "+
		"is sent %.3f s after the downloads start, so p95 ≈ (first freed worker's write) − %.3f s; a cell stalls when p95 > %g ms. "+
		"A predicted write time is right within %g %% or %g s.",
		s.Model.LeadS, s.Model.LeadS, s.Model.StallMs, 100*s.Model.WriteTolerance, s.Model.WriteFloorS)
	for _, c := range s.Capacities {
		k := fmt.Sprintf("%s · %s · %s/s", c.Path, c.Profile, mibs(c.RateBytesPerS))
		if c.Problem != "" {
			v.Capacities = append(v.Capacities, kv{k, c.Problem})
			continue
		}
		var hops []string
		for _, h := range slices.Sorted(maps.Keys(c.HopPeakBytesPerDownload)) {
			hops = append(hops, fmt.Sprintf("%s %.2f", h, c.HopPeakBytesPerDownload[h]/1e6))
		}
		sat := ""
		if !c.Saturated {
			sat = " (the path took the whole response: a lower bound)"
		}
		peak := ""
		if c.PeakBytesPerDownload != nil {
			peak = fmt.Sprintf("; at its peak the path held %.2f MB (per hop, MB: %s)", *c.PeakBytesPerDownload/1e6, strings.Join(hops, ", "))
		}
		v.Capacities = append(v.Capacities, kv{k, fmt.Sprintf("C = %.2f MB per download when the write ended, %.2f MB for the worker freed first (medians over %s)%s%s",
			c.BytesPerDownload/1e6, c.FirstFreedBytes/1e6, strings.Join(c.From, ", "), sat, peak)})
	}
	if sc := s.Score; sc.Cells > 0 && sc.WriteShare != nil && sc.StallShare != nil {
		v.Score = fmt.Sprintf("Write time right on %d of %d predicted cells (%.0f %%); stall right on %d of %d (%.0f %%).",
			sc.WriteRight, sc.Cells, 100**sc.WriteShare, sc.StallRight, sc.Cells, 100**sc.StallShare)
	} else {
		v.Score = "The model predicted no cell: none has another saturated cell at its path, profile and rate."
	}
	yes := func(b bool) string {
		if b {
			return "stall"
		}
		return "no"
	}
	right := func(b bool) string {
		if b {
			return "pass"
		}
		return "fail"
	}
	for _, c := range s.Cells {
		r := sweepRow{Condition: c.Condition, Path: c.Path, Profile: c.Profile, Size: mibs(float64(c.SizeBytes)),
			Rate: mibs(c.RateBytesPerS) + "/s", Runs: fmt.Sprint(c.Runs), Problem: c.Problem}
		if c.Runs == 0 {
			v.Cells = append(v.Cells, r)
			continue
		}
		r.P95, r.P95Range, r.PredP95 = num(c.P95Ms), rangeText(c.P95MsMin, c.P95MsMax), "idle"
		r.Stall = yes(c.P95Ms > s.Model.StallMs)
		if c.PredictedP95Ms > 0 {
			r.PredP95 = num(c.PredictedP95Ms)
		}
		r.Write = fmt.Sprintf("%.2f", c.WriteS)
		if !c.Predicted {
			v.Cells = append(v.Cells, r)
			continue
		}
		r.PredWrite = fmt.Sprintf("%.2f", c.PredictedWriteS)
		r.WriteErr = fmt.Sprintf("%.2f s", c.WriteErrorS)
		if c.WriteError != nil {
			r.WriteErr += fmt.Sprintf(" (%.0f %%)", 100**c.WriteError)
		}
		r.PredStall = yes(c.PredictedStall)
		r.WriteClass, r.StallClass = right(c.WriteRight), right(c.StallRight)
		v.Cells = append(v.Cells, r)
	}
	v.Maps = heatMaps(s)
	return v
}

// mibs prints a size or rate in MiB, without a needless decimal.
func mibs(b float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", b/(1<<20)), ".0") + " MiB" }

// heatMaps are one heat map per path and profile: size across, rate up,
// colour the log of p95, each cell labelled with its p95, and the
// predicted stall boundary as a black step line (cells right of it are
// predicted to stall).
func heatMaps(s *report.Sweep) chartsView {
	type key struct{ path, profile string }
	var keys []key
	sizes, rates := map[int64]bool{}, map[float64]bool{}
	for _, c := range s.Cells {
		if k := (key{c.Path, c.Profile}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		slices.SortStableFunc(keys, func(a, b key) int { return cmp.Compare(profileRank(a.profile), profileRank(b.profile)) })
		sizes[c.SizeBytes], rates[c.RateBytesPerS] = true, true
	}
	if len(keys) == 0 {
		return chartsView{Missing: "sweep.json holds no cell"}
	}
	xs, ys := slices.Sorted(maps.Keys(sizes)), slices.Sorted(maps.Keys(rates))
	v := chartsView{}
	for _, k := range keys {
		v.Figures = append(v.Figures, heatMap(s, k.path, k.profile, xs, ys))
	}
	return v
}

// grid is one heat map's cells, by size index (column) and rate index
// (row); a cell not measured is NaN.
type grid struct{ z [][]float64 }

func (g grid) Dims() (int, int)       { return len(g.z[0]), len(g.z) }
func (g grid) Z(c, r int) float64     { return g.z[r][c] }
func (g grid) X(c int) float64        { return float64(c) }
func (g grid) Y(r int) float64        { return float64(r) }
func (g grid) at(c, r int, v float64) { g.z[r][c] = v }

func heatMap(s *report.Sweep, path, profile string, sizes []int64, rates []float64) figure {
	fig := figure{Name: "sweep-" + path + "-" + profile, Title: fmt.Sprintf("/fast p95, %s, %s TCP memory", path, profile),
		Caption: "Colour: log p95 (blue fast, red stalled); label: median p95 in ms; grey: not run. At each rate, from what the " +
			"path held at that rate, the model's boundaries: dashed, the largest size that keeps /fast idle; solid, the smallest " +
			"that stalls it (p95 > 1 s); grey when no cell of the path waited for its client, so the boundaries are only lower bounds."}
	g := grid{z: make([][]float64, len(rates))}
	for r := range rates {
		g.z[r] = slices.Repeat([]float64{math.NaN()}, len(sizes))
	}
	var labels plotter.XYLabels
	for _, c := range s.Cells {
		if c.Path != path || c.Profile != profile || c.Runs == 0 {
			continue
		}
		col, row := slices.Index(sizes, c.SizeBytes), slices.Index(rates, c.RateBytesPerS)
		// Clamped into the palette's 1 ms to 10 s: a 20 s stall is as red
		// as a 10 s one, not uncoloured.
		g.at(col, row, min(max(math.Log10(max(c.P95Ms, 0.1)), 0), 3.999))
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(col), Y: float64(row)})
		labels.Labels = append(labels.Labels, num(c.P95Ms))
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(0) // 1 ms
	pal.SetMax(4) // 10 s
	hm := plotter.NewHeatMap(g, pal.Palette(64))
	hm.Min, hm.Max = 0, 4
	hm.NaN = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	var names []string
	for _, b := range sizes {
		names = append(names, mibs(float64(b)))
	}
	p := newPlot("response size", "read rate")
	p.NominalX(names...)
	var rnames []string
	for _, r := range rates {
		rnames = append(rnames, mibs(r)+"/s")
	}
	p.NominalY(rnames...)
	p.Add(hm)
	if lab, err := plotter.NewLabels(labels); err == nil {
		for i := range lab.TextStyle {
			lab.TextStyle[i].Font = face(8)
			lab.TextStyle[i].XAlign, lab.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
		}
		p.Add(lab)
	}
	// The boundaries: at each rate, between the columns around the
	// predicted sizes (interpolated on the size axis).
	var stall, idle plotter.XYs
	ink := black
	for row, r := range rates {
		i := slices.IndexFunc(s.Boundaries, func(b report.Boundary) bool {
			return b.Path == path && b.Profile == profile && b.RateBytesPerS == r
		})
		if i < 0 {
			continue
		}
		b := s.Boundaries[i]
		if b.LowerBound {
			ink = grey
		}
		x, xi := sizeIndex(sizes, b.SizeBytes), sizeIndex(sizes, b.IdleSizeBytes)
		stall = append(stall, plotter.XY{X: x, Y: float64(row) - 0.5}, plotter.XY{X: x, Y: float64(row) + 0.5})
		idle = append(idle, plotter.XY{X: xi, Y: float64(row) - 0.5}, plotter.XY{X: xi, Y: float64(row) + 0.5})
	}
	if len(stall) > 0 {
		add(p, line(idle, ink, 1.2, 3, 2), line(stall, ink, 2.5))
	}
	p.X.Min, p.X.Max = -0.5, float64(len(sizes))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(rates))-0.5
	fig.paint(gridW, gridH, nil, p)
	return fig
}

// sizeIndex places size b on the heat map's column axis: linear between
// the columns around it, half a column beyond the ends at most.
func sizeIndex(sizes []int64, b float64) float64 {
	switch {
	case b <= float64(sizes[0]):
		return -0.5
	case b >= float64(sizes[len(sizes)-1]):
		return float64(len(sizes)) - 0.5
	}
	for i := 1; i < len(sizes); i++ {
		if lo, hi := float64(sizes[i-1]), float64(sizes[i]); b <= hi {
			return float64(i-1) + (b-lo)/(hi-lo)
		}
	}
	return float64(len(sizes)) - 0.5
}

// profilesView is article A's cells under each TCP profile, beside the
// article's p95.
type profilesView struct {
	Profiles []string
	Rows     []profileRow
}

type profileRow struct {
	Ref, Article string
	P95          []string
}

func buildProfiles(cs []report.Condition) profilesView {
	var v profilesView
	byRef := map[string]map[string]report.Condition{}
	var refs []string
	for _, c := range cs {
		if c.Pacer != "" { // the pacer cross-check's twins run under stock only
			continue
		}
		ref, _, _ := strings.Cut(c.ID, "@")
		if byRef[ref] == nil {
			byRef[ref] = map[string]report.Condition{}
			refs = append(refs, ref)
		}
		byRef[ref][c.TCPProfile] = c
		if !slices.Contains(v.Profiles, c.TCPProfile) {
			v.Profiles = append(v.Profiles, c.TCPProfile)
		}
	}
	if len(v.Profiles) < 2 {
		return profilesView{}
	}
	slices.SortStableFunc(v.Profiles, func(a, b string) int { return cmp.Compare(profileRank(a), profileRank(b)) })
	for _, ref := range refs {
		row := profileRow{Ref: ref, Article: "–"}
		for _, p := range v.Profiles {
			c, ok := byRef[ref][p]
			switch {
			case !ok:
				row.P95 = append(row.P95, "not run")
			case c.RunsValid == 0:
				row.P95 = append(row.P95, "no valid run")
			default:
				row.P95 = append(row.P95, fmt.Sprintf("%s (%s)", num(c.P95Ms), rangeText(c.P95MsMin, c.P95MsMax)))
			}
			if ok && c.ArticleP95Ms > 0 {
				row.Article = num(c.ArticleP95Ms)
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// profileRank puts the stock profile first.
func profileRank(p string) int {
	if p == "stock" {
		return 0
	}
	return 1
}
