package htmlreport

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// matrixView is the resilience matrix: one table per column (slow-client
// behaviour), rows by server setup, a cell per path coloured by class;
// then each row's capacity.
type matrixView struct {
	Missing    string
	Note       string
	Overview   overviewView
	Columns    []matrixTable
	Capacity   []capacityRow
	Streams    []streamRow
	Frameworks []frameworkRow
	Versions   versionsView
}

// versionsView is the version cells beside their twins, folded under
// Summary: how many kept their twin's class.
type versionsView struct {
	Summary string
	Rows    []versionRow
}

// versionRow is one version cell beside its twin under the installed
// Gunicorn.
type versionRow struct {
	Release, Server, Column, Path, Class, TwinClass, P95, TwinP95 string
	Same                                                          bool
}

// frameworkRow is one framework cell beside its framework-free twin.
type frameworkRow struct {
	Framework, Server, Column, Path, Class, TwinClass, P50, TwinP50, CostP50, P95, TwinP95, CostP95 string
	Same                                                                                            bool
}

// overviewView is every cell at a glance: rows by column and path, each
// cell its class and /fast p95.
type overviewView struct {
	Columns []overviewColumn
	Rows    []overviewRow
}

type overviewColumn struct {
	ID    string
	Paths []string
}

type overviewRow struct {
	ID    string
	Cells []overviewCell
	// Family, when set, opens a group of rows: the server family (or
	// framework) of this row and those after it, over Span columns.
	Family string
	Span   int
}

type overviewCell struct {
	Class, Text, Title string
}

// streamRow is one condition of the streaming table.
type streamRow struct {
	Condition, Path, Header, Runs, Events, P50, P95, Max, First, Error string
}

type matrixTable struct {
	Title string
	// Counts is the table's cells by class, for its folded summary:
	// "25 server setups: 47 protected, 12 stalled, 3 not run".
	Counts string
	Paths  []string
	Rows   []matrixRowView
}

type matrixRowView struct {
	ID, Cmd, Basis string
	Cells          []matrixCellView
	// Family, when set, opens a group of rows (overviewRow.Family), over
	// Span columns.
	Family string
	Span   int
}

type matrixCellView struct {
	Class, Condition, P95, Range, Max, Failed, Clients, Write, Waits, Memory, Cut string
	Ran                                                                           bool
}

type capacityRow struct {
	Row, Declared, Column, Text, Steps string
}

// matrixPaths is the order of the matrix's paths on the page.
var matrixPaths = []string{"direct", "nginx-off", "nginx-on"}

func buildMatrix(m *report.Matrix) matrixView {
	if m == nil {
		return matrixView{Missing: notMeasured}
	}
	v := matrixView{Note: fmt.Sprintf("Each cell: /fast p95 (median of runs, with their range) and max; failed /fast requests; the slow clients' outcomes and their time; the app's write time (how long a response held the server); the app workers' main wait sites. Protected: p95 under %g ms, no failed request, every slow client served as its kind expects. Stalled: p95 over %g ms.", m.ProtectedMs, m.StalledMs)}
	if len(m.Cells) == 0 {
		// A stack check's series (make check): its rows' steps only.
		v.Note = "No cell of the matrix ran in this series: the stack checks' steps are below, as capacity rows on their own paths."
		v.Capacity = capacityRows(m)
		return v
	}
	cells := map[[3]string]report.MatrixCell{}
	for _, c := range m.Cells {
		cells[[3]string{c.Column, c.Row, c.Path}] = c
	}
	for _, col := range m.Columns {
		paths := col.Paths
		if len(paths) == 0 {
			paths = matrixPaths
		}
		clients := "slow clients"
		if col.Clients == 1 {
			clients = "slow client"
		}
		t := matrixTable{Title: fmt.Sprintf("%s (%d %s)", col.Text, col.Clients, clients), Paths: paths}
		v.Overview.Columns = append(v.Overview.Columns, overviewColumn{ID: col.ID, Paths: paths})
		family := ""
		for _, r := range m.Rows {
			if len(col.Rows) > 0 && !slices.Contains(col.Rows, r.ID) {
				continue
			}
			row := matrixRowView{ID: r.ID, Cmd: r.Cmd, Basis: r.Basis, Span: len(paths) + 1}
			if r.Family != family {
				row.Family, family = r.Family, r.Family
			}
			for _, p := range paths {
				c, ok := cells[[3]string{col.ID, r.ID, p}]
				if !ok {
					row.Cells = append(row.Cells, matrixCellView{Class: report.ClassNoData})
					continue
				}
				row.Cells = append(row.Cells, cellView(c))
			}
			t.Rows = append(t.Rows, row)
		}
		t.Counts = classCounts(t.Rows)
		v.Columns = append(v.Columns, t)
	}
	family := ""
	for _, r := range m.Rows {
		if r.Stack { // a stack check's row has steps, no cell
			continue
		}
		row := overviewRow{ID: r.ID, Span: 1}
		for _, col := range v.Overview.Columns {
			row.Span += len(col.Paths)
		}
		if r.Family != family {
			row.Family, family = r.Family, r.Family
		}
		for _, col := range v.Overview.Columns {
			for _, p := range col.Paths {
				c, ok := cells[[3]string{col.ID, r.ID, p}]
				switch {
				case !ok:
					row.Cells = append(row.Cells, overviewCell{Class: report.ClassNoData, Text: "–"})
				case len(c.P95MsRuns) == 0:
					row.Cells = append(row.Cells, overviewCell{Class: c.Class, Text: c.Class, Title: c.Condition})
				default:
					row.Cells = append(row.Cells, overviewCell{Class: c.Class, Text: report.ShortMs(c.P95Ms), Title: c.Condition + ": " + c.Class + ", p95 " + num(c.P95Ms) + " ms"})
				}
			}
		}
		v.Overview.Rows = append(v.Overview.Rows, row)
	}
	for _, s := range m.Streams {
		v.Streams = append(v.Streams, streamView(s))
	}
	for _, f := range m.Frameworks {
		v.Frameworks = append(v.Frameworks, frameworkView(f))
	}
	v.Versions = versionsOf(m.Versions)
	v.Capacity = capacityRows(m)
	return v
}

// notRun counts the cells a series did not run (classCounts).
const notRun = "not run"

// classCounts is "N server setups: n protected, n slowed, …" over rows'
// cells, in the classes' order of severity, then those that ran with no
// valid run, then those not run.
func classCounts(rows []matrixRowView) string {
	n := map[string]int{}
	for _, r := range rows {
		for _, c := range r.Cells {
			if !c.Ran {
				n[notRun]++
				continue
			}
			n[c.Class]++
		}
	}
	parts := []string{}
	for _, class := range []string{report.ClassProtected, report.ClassSlowed, report.ClassStalled, report.ClassFailed, report.ClassNoData, notRun} {
		if n[class] == 0 {
			continue
		}
		name := class
		if class == report.ClassNoData {
			name = "with no valid run"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n[class], name))
	}
	setups := "server setups"
	if len(rows) == 1 {
		setups = "server setup"
	}
	return fmt.Sprintf("%d %s: %s", len(rows), setups, strings.Join(parts, ", "))
}

// msRuns is a median in ms with its runs' range, when more than one ran.
func msRuns(median float64, runs []float64) string {
	out := num(median) + " ms"
	if len(runs) > 1 {
		out += " (" + rangeText(slices.Min(runs), slices.Max(runs)) + ")"
	}
	return out
}

// versionsOf is the version cells' table, with a summary of the classes
// kept and changed.
func versionsOf(cells []report.VersionCell) versionsView {
	var v versionsView
	same := 0
	for _, c := range cells {
		r := versionRow{Release: c.Release, Server: c.Twin, Column: c.Column, Path: c.Path, Class: c.Class, TwinClass: c.TwinClass,
			Same: c.Class == c.TwinClass, P95: msRuns(c.P95Ms, c.P95MsRuns), TwinP95: msRuns(c.TwinP95Ms, c.TwinP95MsRuns)}
		if r.Same {
			same++
		}
		v.Rows = append(v.Rows, r)
	}
	if len(cells) > 0 {
		v.Summary = fmt.Sprintf("%d cells: %d in their twin's class, %d in another", len(cells), same, len(cells)-same)
	}
	return v
}

// frameworkView is f's row: each side's /fast median with its runs'
// range, and the cost.
func frameworkView(f report.FrameworkCost) frameworkRow {
	ms := msRuns
	return frameworkRow{Framework: f.Framework, Server: f.Twin, Column: f.Column, Path: f.Path, Class: f.Class, TwinClass: f.TwinClass,
		Same: f.Class == f.TwinClass,
		P50:  ms(f.P50Ms, f.P50MsRuns), TwinP50: ms(f.TwinP50Ms, f.TwinP50MsRuns), CostP50: fmt.Sprintf("%+.2f ms", f.CostP50Ms),
		P95: ms(f.P95Ms, f.P95MsRuns), TwinP95: ms(f.TwinP95Ms, f.TwinP95MsRuns), CostP95: fmt.Sprintf("%+.2f ms", f.CostP95Ms)}
}

// capacityRows are every row's stepped columns but the scale columns,
// which have their own sections (buildScale).
func capacityRows(m *report.Matrix) []capacityRow {
	var out []capacityRow
	for _, r := range m.Rows {
		for _, c := range r.Capacity {
			if isScaleColumn(c.Column) {
				continue
			}
			declared := "none under the step limit"
			if r.Concurrency > 0 {
				declared = fmt.Sprint(r.Concurrency)
			}
			var steps []string
			for _, st := range c.Steps {
				steps = append(steps, fmt.Sprintf("%d: %s ms (%s; client %s core, lag max %s ms)", st.Clients, num(st.P95Ms), st.Class, num(st.ClientCPUs), num(st.LagMaxMs)))
			}
			column := c.Column
			if c.Path != "" {
				column += " (" + c.Path + ")"
			}
			out = append(out, capacityRow{Row: r.ID, Declared: declared + " (" + r.Basis + ")",
				Column: column, Text: c.Text, Steps: strings.Join(steps, "; ")})
		}
	}
	return out
}

func cellView(c report.MatrixCell) matrixCellView {
	v := matrixCellView{Ran: true, Class: c.Class, Condition: c.Condition, P95: "–", Max: "–",
		Range:  fmt.Sprintf("%d of %d runs", len(c.P95MsRuns), c.RunsTotal),
		Failed: fmt.Sprintf("%d of %d failed", c.RequestsFailed, c.RequestsTotal), Write: "–"}
	var outcomes []string
	for _, o := range slices.Sorted(maps.Keys(c.SlowClients)) {
		outcomes = append(outcomes, fmt.Sprintf("%d %s", c.SlowClients[o], o))
	}
	if len(c.P95MsRuns) > 0 { // figures come from valid runs only
		v.P95, v.Max = num(c.P95Ms)+" ms", num(c.MaxMs)+" ms"
		if c.SlowKind != "headers" && c.SlowKind != "silent" { // held connections write nothing
			v.Write = seconds(c.WriteS)
		}
	}
	if c.P95MsMin != c.P95MsMax {
		v.Range += ": " + rangeText(c.P95MsMin, c.P95MsMax)
	}
	if c.P95MsH2 != nil {
		v.P95 += "; over HTTP/2 " + num(*c.P95MsH2) + " ms"
		if lo, hi := slices.Min(c.P95MsH2Runs), slices.Max(c.P95MsH2Runs); lo != hi {
			v.P95 += " (" + rangeText(lo, hi) + ")"
		}
	}
	if c.RequestsTotalH2 > 0 {
		v.Failed += fmt.Sprintf("; over HTTP/2 %d of %d", c.RequestsFailedH2, c.RequestsTotalH2)
	}
	v.Clients = strings.Join(outcomes, ", ")
	if len(outcomes) > 0 {
		v.Clients += ", " + seconds(c.SlowClientS) + " (max " + seconds(c.SlowClientSMax) + ")"
	}
	var waits []string
	for i, w := range c.Waits {
		if i == 2 || w.Share < 0.05 {
			break
		}
		waits = append(waits, w.Site+" "+pct(w.Share))
	}
	v.Waits = strings.Join(waits, ", ")
	if c.WorkersHeld != nil && c.Workers != nil && *c.Workers > 0 {
		held := fmt.Sprintf("workers held %s of %s", num(*c.WorkersHeld), num(*c.Workers))
		v.Waits = strings.TrimSuffix(held+"; "+v.Waits, "; ")
	}
	if c.AcceptQueuePeak != nil && *c.AcceptQueuePeak > 0 {
		v.Waits += fmt.Sprintf("; accept queue peak %s", num(*c.AcceptQueuePeak))
	}
	if c.AppThrottledShare >= 0.05 {
		v.Waits += "; app throttled " + pct(c.AppThrottledShare)
	}
	if c.WorkerTimeouts > 0 {
		v.Clients += fmt.Sprintf("; %d worker timeouts logged", c.WorkerTimeouts)
	}
	v.Memory = memoryText(c)
	v.Cut = cutText(c.Cut, true)
	return v
}

// cutText says what a cut did and left (report.Cut): where the clients
// were cut, what the app recorded, when its worker was freed, the next
// /fast requests and the descriptors and temp files left; "" for none.
// records: the lab app's, which a team's app does not keep.
func cutText(c *report.Cut, records bool) string {
	if c == nil {
		return ""
	}
	parts := []string{fmt.Sprintf("%d of %d cut at %s to %s KiB", c.AtCut, c.Clients, num(float64(c.BytesMin)/1024), num(float64(c.BytesMax)/1024))}
	switch {
	case !records:
	case c.Records == 0:
		parts = append(parts, "no app record (kept from the app)")
	default:
		parts = append(parts, fmt.Sprintf("app records %d incomplete, %d whole, %d missing", c.Incomplete, c.Complete, c.Missing))
	}
	if c.FreedAfterCutS != nil {
		parts = append(parts, fmt.Sprintf("last record %+.3f s from the cut", *c.FreedAfterCutS))
	}
	parts = append(parts, fmt.Sprintf("/fast after it %d of %d served, p95 %s ms", c.FastAfterOK, c.FastAfter, num(c.FastAfterP95Ms)))
	var left []string
	for _, role := range slices.Sorted(maps.Keys(c.FDsLeaked)) {
		left = append(left, fmt.Sprintf("%s %+d", role, c.FDsLeaked[role]))
	}
	if c.TempFilesLeft != nil {
		left = append(left, fmt.Sprintf("temp files %d", *c.TempFilesLeft))
	}
	if len(left) > 0 {
		parts = append(parts, "left: descriptors "+strings.Join(left, ", "))
	}
	return strings.Join(parts, "; ")
}

func streamView(s report.StreamCell) streamRow {
	r := streamRow{Condition: s.Condition, Path: s.Path, Header: "–", Runs: fmt.Sprintf("%d of %d sound", s.RunsSound, s.RunsTotal),
		Events: "–", P50: "–", P95: "–", Max: "–", First: "–"}
	if s.XAccelNo {
		r.Header = "X-Accel-Buffering: no"
	}
	if st := s.Stream; st != nil {
		r.Events = fmt.Sprintf("%d of %d", st.Events, st.Expected)
		if st.Encoding != "" {
			r.Events += " (" + st.Encoding + ")"
		}
		r.P50, r.P95, r.Max, r.First = num(st.DelayP50Ms)+" ms", num(st.DelayP95Ms)+" ms", num(st.DelayMaxMs)+" ms", num(st.FirstEventDelayMs)+" ms"
		if len(st.DelayP95MsRuns) > 1 {
			lo, hi := slices.Min(st.DelayP95MsRuns), slices.Max(st.DelayP95MsRuns)
			r.P95 += " (" + rangeText(lo, hi) + ")"
		}
		r.Error = st.Error
	}
	return r
}

// memoryText is what a cell cost in memory, where measured: the app's
// growth over the window (a WebSocket server's queued messages), the
// front door's peak and its temp files' (HTTP/2 streams it buffered).
func memoryText(c report.MatrixCell) string {
	var parts []string
	if c.AppMemoryGrowthMiB != nil && (c.SlowKind == wsKind || *c.AppMemoryGrowthMiB >= unboundedGrowthMiB) {
		parts = append(parts, "app grew "+num(*c.AppMemoryGrowthMiB)+" MiB")
	}
	if c.ProxyMemoryPeakMiB != nil {
		parts = append(parts, "proxy peak "+num(*c.ProxyMemoryPeakMiB)+" MiB")
	}
	if c.SpillPeakMiB != nil && *c.SpillPeakMiB > 0 {
		parts = append(parts, "spilled "+num(*c.SpillPeakMiB)+" MiB")
	}
	return strings.Join(parts, ", ")
}
