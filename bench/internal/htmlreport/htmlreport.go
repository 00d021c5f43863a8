// Package htmlreport renders a report directory (the JSON files described
// in reports/README.md) as one self-contained, offline HTML page: tables,
// and charts drawn by gonum/plot as inline SVG, with the CSS inline too.
// The page is built from the files alone, so re-rendering an old
// directory gives the same page:
//
//	err := htmlreport.Write("reports/out") // reports/out/report.html
package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// FileName is the page Write writes into the report directory.
const FileName = "report.html"

var (
	//go:embed template.html
	pageTemplate string
	//go:embed style.css
	styleCSS string

	tmpl = template.Must(template.New("page").Parse(pageTemplate))
)

// Render reads the report files in dir and writes the page to w. Only
// conditions.json is required; a section whose file is absent says so. A
// file that does not parse is an error naming it, and nothing is written.
func Render(dir string, w io.Writer) error {
	f, err := load(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct {
		page
		CSS template.CSS
	}{build(f), template.CSS(styleCSS + classCSS())}); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// Write renders dir into dir/report.html, atomically: a failed render
// leaves the previous page.
func Write(dir string) error {
	return report.WriteFile(dir, FileName, func(w io.Writer) error { return Render(dir, w) })
}

// classCSS colours the overview's cells as reports/matrix.svg does, from
// the one table of class colours.
func classCSS() string {
	var b strings.Builder
	for _, c := range slices.Sorted(maps.Keys(report.ClassColors)) {
		fmt.Fprintf(&b, "table.overview td.m-%s { background: %s; }\n", c, report.ClassColors[c])
	}
	return b.String()
}
