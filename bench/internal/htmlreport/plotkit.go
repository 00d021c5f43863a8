package htmlreport

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts' building blocks, all drawn by gonum/plot onto its SVG
// canvas. Fonts are named, never embedded: the SVG says "Liberation Sans"
// and the page's CSS falls back to any sans-serif font.

// figure is one chart of the page: <figure data-chart="Name">.
type figure struct {
	Name    string
	Title   string
	Caption string
	SVG     template.HTML
	// Err is set instead of SVG when the chart could not be drawn.
	Err string
}

// Chart sizes: wide charts take the page's width, grid charts half of it.
const (
	wideW  = 9.4 * vg.Inch
	wideH  = 3.1 * vg.Inch
	gridW  = 6.4 * vg.Inch
	gridH  = 2.7 * vg.Inch
	legGap = 6 // points between the plot and its legend
	// legSlack widens the legend's text beyond gonum's Liberation Sans
	// metrics: the browser may draw it in a fallback font (DejaVu Sans is
	// 13 to 25 % wider), and the legend ends at the SVG's right edge.
	legSlack = 1.3
)

// palette is Tableau 10: distinct, print-safe, colour-blind friendly.
var palette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, {0xf2, 0x8e, 0x2b, 0xff}, {0xe1, 0x57, 0x59, 0xff},
	{0x76, 0xb7, 0xb2, 0xff}, {0x59, 0xa1, 0x4f, 0xff}, {0xed, 0xc9, 0x48, 0xff},
	{0xb0, 0x7a, 0xa1, 0xff}, {0xff, 0x9d, 0xa7, 0xff}, {0x9c, 0x75, 0x5f, 0xff},
	{0xba, 0xb0, 0xac, 0xff},
}

func colorN(i int) color.RGBA { return palette[i%len(palette)] }

// light returns c blended towards white by f (0: c, 1: white).
func light(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

var (
	black   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	grey    = color.RGBA{0x77, 0x77, 0x77, 0xff}
	article = color.RGBA{0xc0, 0x10, 0x10, 0xff}
)

func face(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// newPlot is a plot with the page's fonts, axis labels and a light grid.
func newPlot(xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = face(10)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Label.TextStyle.Font, p.Y.Label.TextStyle.Font = face(9), face(9)
	p.X.Tick.Label.Font, p.Y.Tick.Label.Font = face(8), face(8)
	p.X.Label.Padding, p.Y.Label.Padding = 2, 2
	g := plotter.NewGrid()
	g.Vertical.Color = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	g.Horizontal.Color = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	p.Add(g)
	return p
}

// newLegend is a legend drawn beside the plot, not over its data.
func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = face(8)
	l.ThumbnailWidth = 16
	l.Top, l.Left = true, true
	l.Padding = 2
	return &l
}

// nominalX names the x positions 0..n-1, tilting long names.
func nominalX(p *plot.Plot, names []string) {
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	longest := 0
	for _, n := range names {
		longest = max(longest, len(n))
	}
	if len(names) > 5 && longest > 8 {
		p.X.Tick.Label.Rotation = math.Pi / 7
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	p.Y.Padding = 0
}

// logY puts p's y axis on a log scale from the nice bounds around lo..hi,
// its labels printed by format.
func logY(p *plot.Plot, lo, hi float64, format func(float64) string) {
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{format}
	p.Y.Min, p.Y.Max = niceLog(lo, hi)
}

// A log axis' label should stay short: gonum places its glyph box at the
// arithmetic middle of the range, near the top on a log scale, and pads the
// plot for it. The unit goes into the tick labels instead.

// msLabel prints milliseconds as "5 ms" or, from a second, "2 s".
func msLabel(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " ms"
}

// plainLabel prints v in its shortest form.
func plainLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// niceLog widens lo..hi (both > 0) to the nearest 1, 2 or 5 times a power
// of ten on each side, so each end has a labelled tick.
func niceLog(lo, hi float64) (float64, float64) {
	if !(lo > 0) || math.IsInf(lo, 0) {
		lo = 1
	}
	if !(hi > 0) || math.IsInf(hi, 0) {
		hi = lo
	}
	lo, hi = min(lo, hi), max(lo, hi)
	down := func(v float64) float64 {
		e := math.Floor(math.Log10(v))
		for _, m := range []float64{5, 2, 1} {
			if x := decimal(m, e); x <= v*(1+1e-9) {
				return x
			}
		}
		return decimal(1, e)
	}
	up := func(v float64) float64 {
		e := math.Floor(math.Log10(v))
		for _, m := range []float64{1, 2, 5, 10} {
			if x := decimal(m, e); x >= v*(1-1e-9) {
				return x
			}
		}
		return decimal(1, e+1)
	}
	l, h := down(lo), up(hi)
	if l == h {
		h = up(h * 1.01)
	}
	return l, h
}

// decimal is m×10^e as the nearest float64 to the decimal, so labels
// print exactly ("0.2", not "0.20000000000000004").
func decimal(m, e float64) float64 {
	v, _ := strconv.ParseFloat(fmt.Sprintf("%ge%d", m, int(e)), 64)
	return v
}

// logTicks labels powers of ten, and 2× and 5× them when the axis spans
// at most two decades; minor ticks at the other multiples.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > 0) {
		return nil
	}
	format := t.format
	if format == nil {
		format = plainLabel
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	labelled := map[float64]bool{1: true}
	if e1-e0 <= 2 {
		labelled[2], labelled[5] = true, true
	}
	var ts []plot.Tick
	for e := e0; e <= e1; e++ {
		for m := 1.0; m < 10; m++ {
			v := decimal(m, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			tk := plot.Tick{Value: v}
			if labelled[m] {
				tk.Label = format(v)
			}
			ts = append(ts, tk)
		}
	}
	return ts
}

// linTicks labels about six round values (1, 2 or 5 times a power of ten
// apart) with minor ticks between them.
type linTicks struct{}

func (linTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	e := math.Floor(math.Log10(raw))
	var step, minor float64
	for _, m := range []float64{1, 2, 5, 10} {
		if step = decimal(m, e); step >= raw*(1-1e-9) {
			minor = step / 5
			if m == 2 {
				minor = step / 4
			}
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ts []plot.Tick
	for i := math.Ceil(lo/minor - 1e-9); ; i++ {
		v := i * minor
		if v > hi+minor*1e-9 {
			break
		}
		tk := plot.Tick{Value: v}
		if q := v / step; math.Abs(q-math.Round(q)) < 1e-6 {
			v = math.Round(q) * step
			tk.Value = v
			tk.Label = strconv.FormatFloat(v, 'f', decimals, 64)
			if tk.Label == "-0" {
				tk.Label = "0"
			}
		}
		ts = append(ts, tk)
	}
	return ts
}

// linear gives p's x and y axes linTicks (a nominal x axis keeps its names).
func linear(p *plot.Plot, x, y bool) {
	if x {
		p.X.Tick.Marker = linTicks{}
	}
	if y {
		p.Y.Tick.Marker = linTicks{}
	}
}

// barLabels prints each positive value above its bar, formatted by format.
func barLabels(xs, vs []float64, format func(float64) string) *plotter.Labels {
	var d plotter.XYLabels
	for i, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			d.XYs = append(d.XYs, plotter.XY{X: xs[i], Y: v})
			d.Labels = append(d.Labels, format(v))
		}
	}
	if len(d.XYs) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(d)
	if err != nil {
		return nil
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font = face(6.5)
		l.TextStyle[i].XAlign = draw.XCenter
		l.TextStyle[i].Color = black
	}
	l.Offset = vg.Point{Y: 2}
	return l
}

// bars are rectangles x±hw from base up to each value, as one polygon;
// nil when no value is above base. On a log axis base is the axis' min.
func bars(xs, vs []float64, hw, base float64, c color.Color) *plotter.Polygon {
	var rings []plotter.XYer
	for i, v := range vs {
		if !(v > base) || math.IsInf(v, 0) {
			continue
		}
		x := xs[i]
		rings = append(rings, plotter.XYs{{X: x - hw, Y: base}, {X: x + hw, Y: base}, {X: x + hw, Y: v}, {X: x - hw, Y: v}})
	}
	return rects(rings, c)
}

// spans are vertical bands x0..x1 over lo..hi (the y axis' range).
func spans(xs [][2]float64, lo, hi float64, c color.Color) *plotter.Polygon {
	var rings []plotter.XYer
	for _, s := range xs {
		if s[1] > s[0] {
			rings = append(rings, plotter.XYs{{X: s[0], Y: lo}, {X: s[1], Y: lo}, {X: s[1], Y: hi}, {X: s[0], Y: hi}})
		}
	}
	return rects(rings, c)
}

// rects fills rectangles in colour c, as one borderless polygon; nil for
// none.
func rects(rings []plotter.XYer, c color.Color) *plotter.Polygon {
	if len(rings) == 0 {
		return nil
	}
	p, err := plotter.NewPolygon(rings...)
	if err != nil {
		return nil
	}
	p.Color = c
	p.LineStyle.Width = 0
	return p
}

// line is a polyline through pts in colour c; nil without points.
func line(pts plotter.XYs, c color.Color, width vg.Length, dashes ...vg.Length) *plotter.Line {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil
	}
	l.Color = c
	l.Width = width
	l.Dashes = dashes
	return l
}

// dots are glyphs at pts; nil without points.
func dots(pts plotter.XYs, c color.Color, r vg.Length, shape draw.GlyphDrawer) *plotter.Scatter {
	if len(pts) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: r, Shape: shape}
	return s
}

// whiskers are vertical ranges lo..hi at x, with caps.
func whiskers(xs, los, his []float64, c color.Color) *plotter.YErrorBars {
	var e struct {
		plotter.XYs
		plotter.YErrors
	}
	for i := range xs {
		if !(los[i] > 0) || !(his[i] >= los[i]) {
			continue
		}
		mid := (los[i] + his[i]) / 2
		e.XYs = append(e.XYs, plotter.XY{X: xs[i], Y: mid})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{mid - los[i], his[i] - mid})
	}
	if len(e.XYs) == 0 {
		return nil
	}
	w, err := plotter.NewYErrorBars(e)
	if err != nil {
		return nil
	}
	w.Color = c
	w.Width = 1.2
	w.CapWidth = 5
	return w
}

// add adds the non-nil plotters to p.
func add(p *plot.Plot, ps ...plot.Plotter) {
	for _, x := range ps {
		if !isNil(x) {
			p.Add(x)
		}
	}
}

// legendAdd adds an entry to l when its thumbnail exists.
func legendAdd(l *plot.Legend, name string, ts ...plot.Thumbnailer) {
	var keep []plot.Thumbnailer
	for _, t := range ts {
		if !isNil(t) {
			keep = append(keep, t)
		}
	}
	if len(keep) > 0 {
		l.Add(name, keep...)
	}
}

// isNil is true for a nil interface or a nil pointer in one.
func isNil(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case *plotter.Polygon:
		return x == nil
	case *plotter.Line:
		return x == nil
	case *plotter.Scatter:
		return x == nil
	case *plotter.YErrorBars:
		return x == nil
	case *plotter.Labels:
		return x == nil
	}
	return false
}

// paint renders plots stacked top to bottom (x axes aligned) with leg
// beside them into a w×h SVG, as the figure's markup. A panic inside
// gonum (e.g. a non-positive value on a log axis) becomes fig.Err.
func (fig *figure) paint(w, h vg.Length, leg *plot.Legend, plots ...*plot.Plot) {
	defer func() {
		if r := recover(); r != nil {
			fig.SVG, fig.Err = "", fmt.Sprint("could not draw the chart: ", r)
		}
	}()
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if leg != nil && leg.Rectangle(dc).Size().X > 0 {
		// The text is left-aligned after the thumbnails: the slack is
		// room on its right for a wider font.
		text := leg.Rectangle(dc).Size().X - leg.ThumbnailWidth
		lw := leg.ThumbnailWidth + text*legSlack + 2*legGap
		leg.Draw(draw.Crop(dc, w-lw+legGap, 0, 0, -legGap))
		dc = draw.Crop(dc, 0, -lw, 0, 0)
	}
	dc = draw.Crop(dc, 2, -2, 2, -4)
	if len(plots) == 1 {
		plots[0].Draw(dc)
	} else {
		rows := make([][]*plot.Plot, len(plots))
		for i, p := range plots {
			rows[i] = []*plot.Plot{p}
		}
		cs := plot.Align(rows, draw.Tiles{Rows: len(plots), Cols: 1, PadY: 8}, dc)
		for i, p := range plots {
			p.Draw(cs[i][0])
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		fig.Err = "could not write the chart: " + err.Error()
		return
	}
	fig.SVG = template.HTML(inlineSVG(buf.String(), fig.Title))
}

// inlineSVG makes a standalone SVG document an element of the page: no
// XML prolog or comment, and a label for screen readers.
func inlineSVG(doc, label string) string {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		doc = doc[i:]
	}
	return `<svg role="img" aria-label="` + html.EscapeString(label) + `"` + strings.TrimPrefix(doc, "<svg")
}
