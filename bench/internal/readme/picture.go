package readme

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"wsgilab/bench/internal/report"
)

// Picture draws the matrix as one SVG picture, for the landing page: a
// row per server setup, a cell per column and path, coloured by the
// cell's class and labelled with its /fast p95. gonum/plot draws it; the
// fonts are named (Liberation Sans), never embedded, so the file is small
// and the same bytes from the same matrix.
func Picture(m *report.Matrix) report.Reporter {
	return func(w io.Writer) error {
		if m == nil || len(m.Cells) == 0 {
			return errors.New("readme: the series has no matrix cell to draw")
		}
		cells := map[[3]string]report.MatrixCell{}
		for _, c := range m.Cells {
			cells[[3]string{c.Column, c.Row, c.Path}] = c
		}
		var rows []report.MatrixRow
		for _, r := range m.Rows {
			if !r.Stack {
				rows = append(rows, r)
			}
		}
		ncells := 0
		for _, col := range m.Columns {
			ncells += len(col.Paths)
		}
		const (
			labelW = 170.0
			cellW  = 46.0
			cellH  = 20.0
			gap    = 6.0
			top    = 58.0
			bottom = 34.0
		)
		width := labelW + float64(ncells)*cellW + float64(len(m.Columns)-1)*gap + 8
		height := top + float64(len(rows))*cellH + bottom
		c := vgsvg.New(vg.Length(width), vg.Length(height))
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		// vg's origin is the bottom left; y counts down from the top here.
		at := func(x, y float64) vg.Point { return vg.Point{X: vg.Length(x), Y: vg.Length(height - y)} }
		text := func(x, y float64, size vg.Length, xa draw.XAlignment, col color.Color, s string) {
			dc.FillText(draw.TextStyle{Color: col, Font: font.Font{Typeface: "Liberation", Variant: "Sans", Size: size},
				XAlign: xa, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}, at(x, y), s)
		}
		text(4, 12, 11, draw.XLeft, ink, fmt.Sprintf("/fast p95 (ms) beside slow clients: %d server setups × %d slow-client behaviours × their paths", len(rows), len(m.Columns)))
		x := labelW
		for _, col := range m.Columns {
			text(x+float64(len(col.Paths))*cellW/2, 30, 9, draw.XCenter, ink, fmt.Sprintf("%s (%d)", col.ID, col.Clients))
			for i, p := range col.Paths {
				text(x+(float64(i)+0.5)*cellW, 46, 7, draw.XCenter, muted, shortPath(p))
			}
			x += float64(len(col.Paths))*cellW + gap
		}
		for i, r := range rows {
			y := top + float64(i)*cellH
			// Left-aligned: a browser's fallback font, wider than
			// Liberation's metrics, runs into the gap, not into the cells.
			text(4, y+cellH/2, 8, draw.XLeft, ink, r.ID)
			x := labelW
			for _, col := range m.Columns {
				for _, p := range col.Paths {
					cell, ok := cells[[3]string{col.ID, r.ID, p}]
					fill, label := classColor(report.ClassNoData), "–"
					if ok {
						fill, label = classColor(cell.Class), p95Label(cell)
					}
					if !col.Runs(r.ID, p) {
						fill, label = skipped, ""
					}
					rect := vg.Rectangle{Min: at(x+1, y+cellH-1), Max: at(x+cellW-1, y+1)}
					dc.SetColor(fill)
					dc.Fill(rect.Path())
					text(x+cellW/2, y+cellH/2, 7.5, draw.XCenter, ink, label)
					x += cellW
				}
				x += gap
			}
		}
		lx := 4.0
		ly := height - bottom/2
		for _, cl := range []string{report.ClassProtected, report.ClassSlowed, report.ClassStalled, report.ClassFailed, report.ClassNoData} {
			rect := vg.Rectangle{Min: at(lx, ly+6), Max: at(lx+12, ly-6)}
			dc.SetColor(classColor(cl))
			dc.Fill(rect.Path())
			text(lx+16, ly, 8, draw.XLeft, ink, classLegend(cl, m))
			lx += 16 + 4.8*float64(len(classLegend(cl, m))) + 18
		}
		_, err := c.WriteTo(w)
		return err
	}
}

var (
	ink   = color.RGBA{0x22, 0x22, 0x22, 0xff}
	muted = color.RGBA{0x66, 0x66, 0x66, 0xff}
	// skipped is a cell whose column does not apply to its row.
	skipped = color.RGBA{0xfa, 0xfa, 0xfa, 0xff}
)

// classColor is a class's colour (report.ClassColors, as the page's).
func classColor(class string) color.Color {
	var c color.RGBA
	if _, err := fmt.Sscanf(report.ClassColors[class], "#%02x%02x%02x", &c.R, &c.G, &c.B); err != nil {
		return skipped
	}
	c.A = 0xff
	return c
}

func classLegend(cl string, m *report.Matrix) string {
	switch cl {
	case report.ClassProtected:
		return fmt.Sprintf("protected: p95 < %g ms, nothing failed", m.ProtectedMs)
	case report.ClassStalled:
		return fmt.Sprintf("stalled: p95 > %g ms", m.StalledMs)
	case report.ClassSlowed:
		return "slowed: between the two"
	case report.ClassFailed:
		return "failed: a slow client cut short"
	}
	return "no data"
}

// shortPath names a path in a narrow cell.
func shortPath(p string) string {
	return strings.NewReplacer("nginx-on-reqbuf-off", "reqbuf off", "nginx-", "nginx ").Replace(p)
}

// p95Label is a cell's label: its p95 as report.ShortMs prints it, or its
// class when no run was valid.
func p95Label(c report.MatrixCell) string {
	if len(c.P95MsRuns) == 0 {
		return c.Class
	}
	return report.ShortMs(c.P95Ms)
}
