package readme

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// FrontDoorsFrom is the report directory the front-door table is rendered
// from: a real series' matrix.json and sweep.json (make docs).
const FrontDoorsFrom = "fixtures/frontdoors"

// FrontDoorRate is the rate the table's read-ahead and boundary are taken
// at: article A's 2 MiB/s, under the stock TCP profile.
const (
	FrontDoorRate    = 2 << 20
	frontDoorProfile = "stock"
	slowReadColumn   = "slow-read"
)

// FrontDoors writes the table "Which front door protects you" for the
// slow-read column of m, one line per path: what the path reads ahead of
// its client when the app's write ends (the buffer model's C, per
// download, from sw), the stall boundary by size the model predicts from
// it, the front door's own memory and spill peaks for 2 slow readers, and
// each row's class and /fast p95 there (median of its runs, with their
// range). A path or row the series did not run is "not run"; a figure it
// lacks is "–".
func FrontDoors(m *report.Matrix, sw *report.Sweep) report.Reporter {
	return func(w io.Writer) error {
		if m == nil || sw == nil {
			return errors.New("readme: the front-door table needs a series' matrix.json and sweep.json")
		}
		i := slices.IndexFunc(m.Columns, func(c report.MatrixColumn) bool { return c.ID == slowReadColumn })
		if i < 0 {
			return errors.New("readme: the series has no slow-read column")
		}
		col := m.Columns[i]
		cells := map[[2]string]report.MatrixCell{}
		for _, c := range m.Cells {
			if c.Column == col.ID {
				cells[[2]string{c.Path, c.Row}] = c
			}
		}
		var rows []string
		for _, r := range m.Rows {
			ran := slices.ContainsFunc(col.Paths, func(p string) bool { _, ok := cells[[2]string{p, r.ID}]; return ok })
			if !r.Stack && ran && (len(col.Rows) == 0 || slices.Contains(col.Rows, r.ID)) {
				rows = append(rows, r.ID)
			}
		}
		if len(rows) == 0 {
			return errors.New("readme: the series ran no slow-read cell")
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Under %d slow readers (16 MiB read at 2 MiB/s): C is what the path holds per download when the app's write ends (the buffer model's read-ahead, measured), "+
			"the boundary the smallest response that stalls `/fast` (p95 over %g ms) at 2 MiB/s, predicted from what the path held for the download freed first (≥: the path took every response whole, so C and the boundary are lower bounds). "+
			"Memory and spill are the front door's own peaks. Each row's entry is its class and `/fast` p95, the median of its runs with their range.\n\n", col.Clients, m.StalledMs)
		b.WriteString("| path | C per download | boundary at 2 MiB/s | proxy memory | proxy spill |")
		for _, r := range rows {
			fmt.Fprintf(&b, " `%s` |", r)
		}
		b.WriteString("\n|---|---|---|---|---|" + strings.Repeat("---|", len(rows)) + "\n")
		for _, p := range col.Paths {
			var any report.MatrixCell
			ran := false
			for _, r := range rows {
				if c, ok := cells[[2]string{p, r}]; ok && !ran {
					any, ran = c, true
				}
			}
			if !ran {
				continue
			}
			c, bound := capacityAt(sw, p)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |", p, c, bound, mib(any.ProxyMemoryPeakMiB), mib(any.SpillPeakMiB))
			for _, r := range rows {
				c, ok := cells[[2]string{p, r}]
				switch {
				case !ok:
					b.WriteString(" not run |")
				case len(c.P95MsRuns) == 0:
					fmt.Fprintf(&b, " %s |", c.Class)
				default:
					fmt.Fprintf(&b, " %s %s |", c.Class, p95Range(c))
				}
			}
			b.WriteString("\n")
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
}

// capacityAt is path's C and boundary in sw at FrontDoorRate, "–" each
// when the fit has none.
func capacityAt(sw *report.Sweep, path string) (string, string) {
	c, bound := "–", "–"
	for _, k := range sw.Capacities {
		if k.Path == path && k.Profile == frontDoorProfile && k.RateBytesPerS == FrontDoorRate && k.Problem == "" {
			c = fmt.Sprintf("%s%.2f MiB", atLeast(!k.Saturated), k.BytesPerDownload/(1<<20))
		}
	}
	for _, bd := range sw.Boundaries {
		if bd.Path == path && bd.Profile == frontDoorProfile && bd.RateBytesPerS == FrontDoorRate {
			bound = fmt.Sprintf("%s%.1f MiB", atLeast(bd.LowerBound), bd.SizeBytes/(1<<20))
		}
	}
	return c, bound
}

func atLeast(lower bool) string {
	if lower {
		return "≥ "
	}
	return ""
}

func mib(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f MiB", *v)
}

// p95Range is "3.77 s (3.75–3.79)" or "1.52 ms (1.39–1.54)" over a
// cell's runs, the range in the median's unit; a single run has no range.
func p95Range(c report.MatrixCell) string {
	f, unit := func(ms float64) string { return fmt.Sprintf("%.3g", ms) }, "ms"
	if c.P95Ms >= 1000 {
		f, unit = func(ms float64) string { return fmt.Sprintf("%.2f", ms/1000) }, "s"
	}
	s := f(c.P95Ms) + " " + unit
	if len(c.P95MsRuns) > 1 {
		s += " (" + f(c.P95MsMin) + "–" + f(c.P95MsMax) + ")"
	}
	return s
}

// frontDoorDoc renders FrontDoors from the report directory from.
func frontDoorDoc(root, from string) (string, error) {
	dir := under(root, from)
	m, err := Load(filepath.Join(dir, MatrixFile))
	if err != nil {
		return "", err
	}
	sw, err := LoadSweep(filepath.Join(dir, SweepFile))
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = FrontDoors(m, sw)(&b)
	return b.String(), err
}
