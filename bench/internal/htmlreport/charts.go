package htmlreport

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"wsgilab/bench/internal/report"
)

// maxLinePoints bounds the points of one series in a chart; longer series
// are thinned to every k-th point (the last one kept).
const maxLinePoints = 400

// thin keeps at most maxLinePoints of pts, evenly spaced.
func thin(pts plotter.XYs) plotter.XYs {
	if len(pts) <= maxLinePoints {
		return pts
	}
	k := (len(pts) + maxLinePoints - 1) / maxLinePoints
	var out plotter.XYs
	for i := 0; i < len(pts); i += k {
		out = append(out, pts[i])
	}
	if last := pts[len(pts)-1]; out[len(out)-1] != last {
		out = append(out, last)
	}
	return out
}

// 3. p95 per condition, log scale, the article's figure across each bar.
func p95Charts(cs []report.Condition) chartsView {
	switch {
	case cs == nil:
		return chartsView{Missing: notA}
	case len(cs) == 0:
		return chartsView{Missing: "conditions.json holds no condition"}
	}
	return chartsView{Figures: []figure{p95Chart(cs)}, Wide: true}
}

func p95Chart(cs []report.Condition) figure {
	fig := figure{Name: "p95", Title: "p95 of /fast per condition: ours and the article's",
		Caption: "Bars: median over valid runs of each run's p95; dots: each run's p95; " +
			"red line: the article's p95, red whisker: the range of its runs. Log scale."}
	var names []string
	var xs, ours []float64
	var runs, art plotter.XYs
	var axs, alo, ahi []float64
	lo, hi := math.Inf(1), 0.0
	see := func(v float64) {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	for i, c := range cs {
		x := float64(i)
		names = append(names, c.ID)
		xs = append(xs, x)
		v := 0.0
		if c.RunsValid > 0 {
			v = c.P95Ms
		}
		ours = append(ours, v)
		see(v)
		for _, r := range c.P95MsRuns {
			if r > 0 {
				runs = append(runs, plotter.XY{X: x, Y: r})
				see(r)
			}
		}
		if c.ArticleP95Ms > 0 {
			art = append(art, plotter.XY{X: x, Y: c.ArticleP95Ms})
			see(c.ArticleP95Ms)
		}
		if r := c.ArticleP95MsRange; len(r) == 2 && r[0] > 0 {
			axs, alo, ahi = append(axs, x+0.36), append(alo, r[0]), append(ahi, r[1])
			see(r[0])
			see(r[1])
		}
	}
	p := newPlot("", "p95")
	nominalX(p, names)
	// A third below the smallest value, so the shortest bar still shows.
	logY(p, lo/3, hi, msLabel)
	leg := newLegend()
	b := bars(xs, ours, 0.28, p.Y.Min, light(colorN(0), 0.3))
	rd := dots(runs, black, 1.8, draw.RingGlyph{})
	add(p, b, rd)
	legendAdd(leg, "ours: median p95", b)
	legendAdd(leg, "ours: each run", rd)
	var artLine *plotter.Line
	for _, a := range art {
		l := line(plotter.XYs{{X: a.X - 0.36, Y: a.Y}, {X: a.X + 0.36, Y: a.Y}}, article, 2)
		add(p, l)
		artLine = l
	}
	add(p, whiskers(axs, alo, ahi, article))
	p.X.Min, p.X.Max = -0.6, float64(len(cs))-0.4
	legendAdd(leg, "article: p95 (whisker: range)", artLine)
	fig.paint(wideW, wideH, leg, p)
	return fig
}

// 4. Latency timelines per condition: every /fast request by its
// scheduled send time, one series per run, the downloads' spans shaded.
func timelines(f *files) chartsView {
	switch {
	case f.conditions == nil:
		return chartsView{Missing: notA}
	case f.requests == nil:
		return chartsView{Missing: notMeasured}
	}
	v := chartsView{}
	if f.downloads == nil {
		v.Note = "downloads.json is absent: the downloads' spans are not shown."
	}
	// One y range for every timeline, so they compare at a glance.
	lo, hi, xmax := math.Inf(1), 0.0, 0.0
	byCond := map[string][]report.Request{}
	for _, r := range f.requests {
		if r.Proto != "" {
			continue // the timelines are the HTTP/1.1 series'
		}
		byCond[r.Condition] = append(byCond[r.Condition], r)
		if r.LatencyMs > 0 {
			lo, hi = min(lo, r.LatencyMs), max(hi, r.LatencyMs)
		}
		xmax = max(xmax, r.ScheduledMs/1000)
	}
	for _, d := range f.downloads {
		if _, ok := byCond[d.Condition]; ok {
			xmax = max(xmax, d.StartMs/1000+d.CompletionS)
		}
	}
	ylo, yhi := niceLog(lo, hi)
	for _, c := range f.conditions {
		reqs := byCond[c.ID]
		if len(reqs) == 0 {
			continue
		}
		v.Figures = append(v.Figures, timeline(c.ID, reqs, f.downloads, ylo, yhi, xmax))
	}
	if len(v.Figures) == 0 {
		v.Missing = "requests.jsonl holds no request of the conditions in conditions.json"
	}
	return v
}

func timeline(id string, reqs []report.Request, downloads []report.Download, ylo, yhi, xmax float64) figure {
	byRun := map[int][]report.Request{}
	for _, r := range reqs {
		byRun[r.Run] = append(byRun[r.Run], r)
	}
	runs := slices.Sorted(maps.Keys(byRun))
	var ds []report.Download
	for _, d := range downloads {
		if d.Condition == id {
			ds = append(ds, d)
		}
	}
	fig := figure{Name: "timeline-" + id, Title: id,
		Caption: fmt.Sprintf("%d runs, %d requests, %d downloads. Each point a /fast request at its scheduled send time; "+
			"shaded: each download from its start to its completion; dashed: the app's write end.", len(runs), len(reqs), len(ds))}
	p := newPlot("scheduled send time (s)", "latency")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{msLabel}
	linear(p, true, false)
	leg := newLegend()

	var spanXs [][2]float64
	for _, d := range ds {
		spanXs = append(spanXs, [2]float64{d.StartMs / 1000, d.StartMs/1000 + d.CompletionS})
	}
	alpha := math.Max(0.04, math.Min(0.25, 0.6/float64(max(1, len(ds)))))
	sp := spans(spanXs, ylo, yhi, color.NRGBA{0x70, 0x70, 0x70, uint8(255 * alpha)})
	add(p, sp)
	if sp != nil {
		// The legend's swatch as dark as two overlapping spans.
		legendAdd(leg, "download", spans(spanXs[:1], ylo, yhi, color.NRGBA{0x70, 0x70, 0x70, 0x60}))
	}
	var we *plotter.Line
	for _, d := range ds {
		if d.WriteS > 0 && d.WriteComplete {
			x := d.StartMs/1000 + d.WriteS
			l := line(plotter.XYs{{X: x, Y: ylo}, {X: x, Y: yhi}}, grey, 0.8, 3, 2)
			add(p, l)
			we = l
		}
	}
	legendAdd(leg, "app write end", we)

	var failed plotter.XYs
	for i, run := range runs {
		rs := byRun[run]
		slices.SortFunc(rs, func(a, b report.Request) int { return cmp.Compare(a.Seq, b.Seq) })
		var pts plotter.XYs
		for _, r := range rs {
			pt := plotter.XY{X: r.ScheduledMs / 1000, Y: r.LatencyMs}
			if r.LatencyMs <= 0 {
				pt.Y = ylo
			}
			if r.Error != "" || r.Status != 200 {
				failed = append(failed, pt)
				continue
			}
			pts = append(pts, pt)
		}
		pts = thin(pts)
		c := colorN(i)
		l, d := line(pts, c, 0.7), dots(pts, c, 1.3, draw.CircleGlyph{})
		add(p, l, d)
		legendAdd(leg, fmt.Sprintf("run %d", run), l, d)
	}
	fd := dots(failed, article, 3, draw.CrossGlyph{})
	add(p, fd)
	legendAdd(leg, "failed request", fd)
	// Set the ranges last: Add widens them to the data.
	p.Y.Min, p.Y.Max = ylo, yhi
	p.X.Min, p.X.Max = 0, xmax
	fig.paint(gridW, gridH, leg, p)
	return fig
}

// 5. The app's write time against the client's completion time, ours and
// the article's, for the two-download conditions.
func writeCompletion(cs []report.Condition) chartsView {
	if cs == nil {
		return chartsView{Missing: notA}
	}
	two := twoDownloads(cs)
	if len(two) == 0 {
		return chartsView{Missing: "no condition with two downloads in this run"}
	}
	fig := figure{Name: "write-completion", Title: "App write time and client completion time, two downloads",
		Caption: "Medians over valid runs of each run's median download. The app's write ends when its last byte " +
			"is handed to the kernel (or to NGINX); the client completes when it has read 16 MiB at 2 MiB/s."}
	var names []string
	series := [4][]float64{}
	var xs [4][]float64
	offs := [4]float64{-0.3, -0.1, 0.1, 0.3}
	top := 0.0
	for i, c := range two {
		names = append(names, c.ID)
		vals := [4]float64{c.WriteS, c.ArticleWriteS, c.CompletionS, c.ArticleCompletionS}
		if c.RunsValid == 0 {
			vals[0], vals[2] = 0, 0
		}
		for k := range 4 {
			xs[k] = append(xs[k], float64(i)+offs[k])
			series[k] = append(series[k], vals[k])
			top = max(top, vals[k])
		}
	}
	p := newPlot("", "seconds")
	nominalX(p, names)
	leg := newLegend()
	labels := [4]string{"ours: app write", "article: app write", "ours: client completion", "article: client completion"}
	colors := [4]color.Color{colorN(0), light(colorN(0), 0.55), colorN(1), light(colorN(1), 0.55)}
	for k := range 4 {
		b := bars(xs[k], series[k], 0.09, 0, colors[k])
		add(p, b, barLabels(xs[k], series[k], num))
		legendAdd(leg, labels[k], b)
	}
	linear(p, false, true)
	p.Y.Min, p.Y.Max = 0, math.Max(1, top*1.1)
	p.X.Min, p.X.Max = -0.6, float64(len(two))-0.4
	fig.paint(wideW*0.8, wideH, leg, p)
	return chartsView{Figures: []figure{fig}, Wide: true}
}

// hopOrder fixes each hop's colour across charts.
var hopOrder = []string{"app->client", "client<-app", "app->nginx", "nginx->app", "nginx->client", "client<-nginx", "listen"}

func ordered(names []string, order []string) []string {
	rank := func(s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
	return out
}

// twoDownloadSeries is the two-download conditions whose sampler series the
// socket and resource charts draw, or why there is nothing to draw.
func twoDownloadSeries(f *files, haveSeries bool) ([]report.Condition, string) {
	switch {
	case f.conditions == nil:
		return nil, notA
	case !haveSeries:
		return nil, notMeasured
	}
	two := twoDownloads(f.conditions)
	if len(two) == 0 {
		return nil, "no condition with two downloads in this run"
	}
	return two, ""
}

// 6a. Bytes queued per socket hop, two-download conditions, first run.
func socketCharts(f *files) chartsView {
	two, missing := twoDownloadSeries(f, f.sockets != nil)
	if missing != "" {
		return chartsView{Missing: missing}
	}
	v := chartsView{}
	for _, c := range two {
		run, ok := firstRun(f.sockets, c.ID, func(r report.SocketRow) (string, int) { return r.Condition, r.Run })
		if !ok {
			continue
		}
		// A hop absent from a sample had no socket then: 0 bytes.
		q := map[string]map[float64]int64{}
		var times []float64
		seenT := map[float64]bool{}
		for _, r := range f.sockets {
			if r.Condition != c.ID || r.Run != run {
				continue
			}
			h := string(r.Hop)
			if q[h] == nil {
				q[h] = map[float64]int64{}
			}
			q[h][r.TMs] += r.SendQBytes + r.RecvQBytes
			if !seenT[r.TMs] {
				seenT[r.TMs] = true
				times = append(times, r.TMs)
			}
		}
		slices.Sort(times)
		fig := figure{Name: "sockets-" + c.ID, Title: fmt.Sprintf("%s, run %d", c.ID, run),
			Caption: "Send plus receive queue per socket hop, summed over the hop's sockets, every sampler sample."}
		p := newPlot("time from the load's start (s)", "queued (MiB)")
		linear(p, true, true)
		leg := newLegend()
		for _, h := range ordered(slices.Collect(maps.Keys(q)), hopOrder) {
			pts := make(plotter.XYs, 0, len(times))
			for _, t := range times {
				pts = append(pts, plotter.XY{X: t / 1000, Y: float64(q[h][t]) / (1 << 20)})
			}
			i := slices.Index(hopOrder, h)
			if i < 0 {
				i = len(hopOrder)
			}
			l := line(thin(pts), colorN(i), 1.1)
			add(p, l)
			legendAdd(leg, h, l)
		}
		p.Y.Min = 0
		fig.paint(gridW, gridH, leg, p)
		v.Figures = append(v.Figures, fig)
	}
	if len(v.Figures) == 0 {
		v.Missing = "sockets.jsonl holds no sample of the two-download conditions"
	}
	return v
}

// 6b. NGINX's open temp files over time, buffering-on conditions, each run.
func tempfileCharts(f *files) chartsView {
	switch {
	case f.conditions == nil:
		return chartsView{Missing: notA}
	case f.tempfiles == nil:
		return chartsView{Missing: notMeasured}
	}
	v := chartsView{}
	for _, c := range f.conditions {
		if !strings.HasPrefix(c.ID, "nginx-on") {
			continue
		}
		byRun := map[int]plotter.XYs{}
		for _, r := range f.tempfiles {
			if r.Condition == c.ID {
				byRun[r.Run] = append(byRun[r.Run], plotter.XY{X: r.TMs / 1000, Y: float64(r.TotalBytes) / (1 << 20)})
			}
		}
		if len(byRun) == 0 {
			continue
		}
		fig := figure{Name: "tempfiles-" + c.ID, Title: c.ID,
			Caption: "Logical size of the temp files NGINX holds open under proxy_temp_path, every sampler sample, one line per run."}
		if c.TempfilePeakMiB != nil && c.TempfilePeakMiBMax != nil {
			fig.Caption += fmt.Sprintf(" Peak: median %s MiB, largest run %s MiB.", num(*c.TempfilePeakMiB), num(*c.TempfilePeakMiBMax))
		}
		p := newPlot("time from the load's start (s)", "temp files (MiB)")
		linear(p, true, true)
		leg := newLegend()
		for i, run := range slices.Sorted(maps.Keys(byRun)) {
			pts := byRun[run]
			slices.SortStableFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
			l := line(thin(pts), colorN(i), 1.1)
			add(p, l)
			legendAdd(leg, fmt.Sprintf("run %d", run), l)
		}
		p.Y.Min = 0
		p.Y.Max = math.Max(p.Y.Max, 1)
		fig.paint(gridW, gridH, leg, p)
		v.Figures = append(v.Figures, fig)
	}
	if len(v.Figures) == 0 {
		v.Missing = "no NGINX-buffering-on condition in tempfiles.jsonl"
	}
	return v
}

// containerOrder fixes each container's colour across charts.
var containerOrder = []string{"app", "proxy", "client", "hop"}

// resourceStep is the shortest interval the CPU and throttling rates are
// taken over: 50 ms samples of 10 ms CFS periods are too coarse alone.
const resourceStep = 200.0 // ms

// 6c. CPU and CFS throttling per container, two-download conditions,
// first run.
func resourceCharts(f *files) chartsView {
	two, missing := twoDownloadSeries(f, f.resources != nil)
	if missing != "" {
		return chartsView{Missing: missing}
	}
	v := chartsView{}
	for _, c := range two {
		run, ok := firstRun(f.resources, c.ID, func(r report.ResourceRow) (string, int) { return r.Condition, r.Run })
		if !ok {
			continue
		}
		byC := map[string][]report.ResourceRow{}
		for _, r := range f.resources {
			if r.Condition == c.ID && r.Run == run {
				byC[r.Container] = append(byC[r.Container], r)
			}
		}
		fig := figure{Name: "resources-" + c.ID, Title: fmt.Sprintf("%s, run %d", c.ID, run),
			Caption: fmt.Sprintf("Per container, from the cgroup counters over steps of at least %s ms: CPU as %% of one core "+
				"(top) and the share of CFS periods that hit the quota (bottom).", num(resourceStep))}
		cpu := newPlot("", "CPU (% of a core)")
		thr := newPlot("time from the load's start (s)", "throttled (%)")
		linear(cpu, true, true)
		linear(thr, true, true)
		leg := newLegend()
		t0, t1 := math.Inf(1), math.Inf(-1)
		for _, name := range ordered(slices.Collect(maps.Keys(byC)), containerOrder) {
			rows := byC[name]
			slices.SortStableFunc(rows, func(a, b report.ResourceRow) int { return cmp.Compare(a.TMs, b.TMs) })
			t0, t1 = min(t0, rows[0].TMs/1000), max(t1, rows[len(rows)-1].TMs/1000)
			var cp, tp plotter.XYs
			prev := rows[0]
			for _, r := range rows[1:] {
				dt := r.TMs - prev.TMs
				if dt < resourceStep {
					continue
				}
				t := (r.TMs + prev.TMs) / 2 / 1000
				cp = append(cp, plotter.XY{X: t, Y: 100 * float64(r.CPUUsageNs-prev.CPUUsageNs) / (dt * 1e6)})
				share := 0.0
				if dp := r.NrPeriods - prev.NrPeriods; dp > 0 {
					share = 100 * float64(r.NrThrottled-prev.NrThrottled) / float64(dp)
				}
				tp = append(tp, plotter.XY{X: t, Y: share})
				prev = r
			}
			i := slices.Index(containerOrder, name)
			if i < 0 {
				i = len(containerOrder)
			}
			l1, l2 := line(thin(cp), colorN(i), 1.1), line(thin(tp), colorN(i), 1.1)
			add(cpu, l1)
			add(thr, l2)
			legendAdd(leg, name, l1)
		}
		cpu.Y.Min, thr.Y.Min = 0, 0
		thr.Y.Max = 100
		cpu.Y.Max = math.Max(cpu.Y.Max, 10)
		cpu.X.Min, cpu.X.Max = t0, t1
		thr.X.Min, thr.X.Max = t0, t1
		fig.paint(gridW, gridH*1.45, leg, cpu, thr)
		v.Figures = append(v.Figures, fig)
	}
	if len(v.Figures) == 0 {
		v.Missing = "resources.jsonl holds no sample of the two-download conditions"
	}
	return v
}

// 7. The share of samples each worker spent blocked in a send.
func waitsChart(ws []waitShares) figure {
	fig := figure{Name: "waits", Title: "Share of the load window a worker spent blocked in a send",
		Caption: "Medians over valid runs: the app's most and least blocked worker, and NGINX's most blocked worker " +
			"(a multi-threaded worker counts as sending when any of its threads is)."}
	var names []string
	var xs [3][]float64
	var vs [3][]float64
	offs := [3]float64{-0.25, 0, 0.25}
	for i, w := range ws {
		names = append(names, w.id)
		vals := [3]float64{w.most, w.least, w.proxy}
		for k := range 3 {
			xs[k] = append(xs[k], float64(i)+offs[k])
			vs[k] = append(vs[k], 100*vals[k])
		}
	}
	p := newPlot("", "blocked in send (% of samples)")
	nominalX(p, names)
	leg := newLegend()
	labels := [3]string{"app: most blocked worker", "app: least blocked worker", "nginx: most blocked worker"}
	colors := [3]color.Color{colorN(2), light(colorN(2), 0.55), colorN(3)}
	pctLabel := func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
	for k := range 3 {
		b := bars(xs[k], vs[k], 0.11, 0, colors[k])
		add(p, b, barLabels(xs[k], vs[k], pctLabel))
		legendAdd(leg, labels[k], b)
	}
	linear(p, false, true)
	p.Y.Min, p.Y.Max = 0, 105
	p.X.Min, p.X.Max = -0.6, float64(len(ws))-0.4
	fig.paint(wideW, wideH, leg, p)
	return fig
}

// 8. Article B: req/s per condition, ours and ab beside the article's.
func throughputChart(ts []report.Throughput) figure {
	fig := figure{Name: "throughput", Title: "Article B: requests per second",
		Caption: "Our closed-loop generator and ab against each server, beside the article's figure (mean of its two runs; " +
			"where it gave words instead, they are in the table). Log scale."}
	var ids []string
	vals := map[string]*[3]float64{}
	for _, t := range ts {
		if vals[t.ID] == nil {
			ids = append(ids, t.ID)
			vals[t.ID] = &[3]float64{}
		}
		switch t.Generator {
		case "ours":
			vals[t.ID][0] = t.ReqPerS
		case "ab":
			vals[t.ID][1] = t.ReqPerS
		}
		if t.ArticleReqPerS > 0 {
			vals[t.ID][2] = t.ArticleReqPerS
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, v := range vals {
		for _, x := range v {
			if x > 0 {
				lo, hi = min(lo, x), max(hi, x)
			}
		}
	}
	p := newPlot("", "req/s")
	nominalX(p, ids)
	logY(p, lo/3, hi, plainLabel)
	leg := newLegend()
	offs := [3]float64{-0.25, 0, 0.25}
	labels := [3]string{"ours", "ab", "article"}
	colors := [3]color.Color{colorN(0), colorN(4), light(article, 0.45)}
	for k := range 3 {
		var xs, vs []float64
		for i, id := range ids {
			xs, vs = append(xs, float64(i)+offs[k]), append(vs, vals[id][k])
		}
		b := bars(xs, vs, 0.11, p.Y.Min, colors[k])
		add(p, b)
		if len(ids) <= 6 { // more would crowd the labels; the table has them
			add(p, barLabels(xs, vs, num))
		}
		legendAdd(leg, labels[k], b)
	}
	p.X.Min, p.X.Max = -0.6, float64(len(ids))-0.4
	fig.paint(wideW, wideH, leg, p)
	return fig
}
