package readme

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func TestProtectionListsProtectedPaths(t *testing.T) {
	m := &report.Matrix{ProtectedMs: 10, StalledMs: 1000,
		Columns: []report.MatrixColumn{
			{ID: "slow-read", Clients: 2, Paths: []string{"direct", "nginx-on"}},
			{ID: "outlive-timeout", Clients: 1, Paths: []string{"direct", "nginx-on"}, Rows: []string{"sync"}},
		},
		Rows: []report.MatrixRow{{ID: "sync"}, {ID: "uvicorn"}},
		Cells: []report.MatrixCell{
			{Column: "slow-read", Row: "sync", Path: "direct", Class: report.ClassStalled},
			{Column: "slow-read", Row: "sync", Path: "nginx-on", Class: report.ClassProtected},
			{Column: "slow-read", Row: "uvicorn", Path: "direct", Class: report.ClassProtected},
			{Column: "slow-read", Row: "uvicorn", Path: "nginx-on", Class: report.ClassProtected},
			{Column: "outlive-timeout", Row: "sync", Path: "direct", Class: report.ClassFailed},
		},
	}
	var b strings.Builder
	require.NoError(t, Protection(m)(&b))
	got := b.String()
	assert.Contains(t, got, "| setup | slow-read (2) | outlive-timeout (1) |")
	assert.Contains(t, got, "| `sync` | nginx-on; stalled direct | none; failed direct |")
	assert.Contains(t, got, "| `uvicorn` | direct, nginx-on | – |", "the column does not apply to uvicorn")
	assert.NotContains(t, got, "direct-tls", "no TLS path, no TLS legend")
	m.Columns = append(m.Columns, report.MatrixColumn{ID: "slow-tls", Clients: 2, Paths: []string{"direct-tls", "nginx-tls-on"}})
	b.Reset()
	require.NoError(t, Protection(m)(&b))
	assert.Contains(t, b.String(), "`direct-tls` is the server terminating TLS itself")

	require.Error(t, Protection(&report.Matrix{})(&b), "no cell, no section")
}

func TestSplice(t *testing.T) {
	doc := "a\n" + Begin("x") + "\nold\n" + End("x") + "\nb\n"
	out, err := Splice(doc, "x", "new\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n"+Begin("x")+"\nnew\n"+End("x")+"\nb\n", out)
	sec, err := Section(out, "x")
	require.NoError(t, err)
	assert.Equal(t, "new\n", sec)
	_, err = Splice("no markers", "x", "x")
	assert.ErrorContains(t, err, "markers")
	_, err = Section(out, "y")
	assert.ErrorContains(t, err, "markers", "another section's markers are not these")
}

// Every generated part of the documents is what its committed report file
// renders: the protection table and the matrix's picture from the fixture
// series (a real one, fixtures/report), the make check transcript from a
// real check's stacks.json. Regenerate them with make docs.
func TestDocsAreGenerated(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, d := range Docs {
		t.Run(d.Path+"#"+d.Section, func(t *testing.T) {
			want, err := d.Render(root, d.From)
			require.NoError(t, err)
			got, err := d.Committed(root)
			require.NoError(t, err)
			if want != got {
				t.Errorf("%s (%s) is stale: run make docs (%d bytes rendered, %d committed)", d.Path, d.Section, len(want), len(got))
			}
		})
	}
}

// The picture has every row, column and path of the matrix, and a cell's
// label is its p95.
func TestPicture(t *testing.T) {
	m, err := Load(filepath.Join("..", "..", "..", "fixtures", "report", MatrixFile))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, Picture(m)(&b))
	svg := b.String()
	for _, r := range m.Rows {
		assert.True(t, strings.Contains(svg, ">"+r.ID+"<"), "row %s", r.ID)
	}
	for _, c := range m.Columns {
		assert.True(t, strings.Contains(svg, ">"+c.ID+" ("), "column %s", c.ID)
	}
	assert.True(t, strings.Contains(svg, ">5,978<"), "sync x2 directly under slow readers: its p95")
	assert.False(t, strings.Contains(svg, "@font-face"), "fonts are named, never embedded")
	require.Error(t, Picture(&report.Matrix{})(&b))
}

// The packages table lists python3 and its packages with their versions,
// nothing else.
func TestPackages(t *testing.T) {
	got, err := Packages(map[string]string{"python3": "3.11.2-1+b1", "python3-flask": "2.2.2-3", "nginx": "1.22.1-9"})
	require.NoError(t, err)
	assert.Contains(t, got, "| `python3-flask` | 2.2.2-3 |")
	assert.NotContains(t, got, "nginx")
	_, err = Packages(map[string]string{"nginx": "1"})
	assert.Error(t, err)
}

// AddRows takes the rows a later series measured, their cells under the
// fixture's columns and paths only, and leaves the fixture's own.
func TestAddRows(t *testing.T) {
	m := &report.Matrix{
		Columns: []report.MatrixColumn{{ID: "slow-read", Paths: []string{"direct", "nginx-on"}}, {ID: "silent", Paths: []string{"direct"}}},
		Rows:    []report.MatrixRow{{ID: "sync"}},
		Cells:   []report.MatrixCell{{Column: "slow-read", Row: "sync", Path: "direct", Class: report.ClassStalled}},
	}
	from := &report.Matrix{
		Columns: []report.MatrixColumn{{ID: "slow-read", Paths: []string{"direct", "nginx-on", "haproxy"}, Rows: []string{"sync", "flask", "waitress"},
			Only: map[string][]string{"nginx-on": {"sync", "waitress"}, "haproxy": {"sync"}}},
			{ID: "silent", Paths: []string{"direct"}, Rows: []string{"sync"}}, {ID: "h2", Rows: []string{"waitress"}}},
		Rows: []report.MatrixRow{{ID: "sync", Family: "Gunicorn"}, {ID: "waitress", Family: "waitress"}, {ID: "flask", Family: "Flask"}, {ID: "daphne", Family: "Daphne"}},
		Cells: []report.MatrixCell{
			{Column: "slow-read", Row: "sync", Path: "direct", Class: report.ClassProtected},
			{Column: "slow-read", Row: "flask", Path: "direct", Class: report.ClassStalled},
			{Column: "slow-read", Row: "flask", Path: "haproxy", Class: report.ClassStalled},
			{Column: "slow-read", Row: "waitress", Path: "nginx-on", Class: report.ClassProtected},
			{Column: "h2", Row: "waitress", Path: "direct", Class: report.ClassStalled},
			{Column: "h2", Row: "daphne", Path: "direct", Class: report.ClassStalled},
		},
	}
	from.Frameworks = []report.FrameworkCost{{Row: "flask", Twin: "sync", Column: "slow-read", CostP50Ms: 0.2}, {Row: "other", Twin: "sync", Column: "slow-read"}}
	got := AddRows(m, from)
	assert.Equal(t, from.Frameworks[:1], got.Frameworks, "the added framework row's cost")
	assert.Equal(t, []report.MatrixRow{{ID: "sync", Family: "Gunicorn"}, {ID: "waitress", Family: "waitress"}, {ID: "flask", Family: "Flask"}}, got.Rows)
	assert.Equal(t, []report.MatrixCell{m.Cells[0], from.Cells[1], from.Cells[3]}, got.Cells,
		"the fixture's own cell kept; only the new rows' cells on its paths; daphne, with none, not added")
	assert.Equal(t, []string{"sync", "waitress", "flask"}, got.Columns[0].Rows)
	assert.Equal(t, map[string][]string{"nginx-on": {"sync", "waitress"}}, got.Columns[0].Only, "flask does not run nginx-on; haproxy is not the fixture's path")
	assert.True(t, got.Columns[0].Runs("sync", "nginx-on"))
	assert.False(t, got.Columns[0].Runs("flask", "nginx-on"))
	assert.Nil(t, m.Columns[0].Only, "m is left as it was")

	// A path m limits and from does not: the new rows run it.
	m.Columns[0].Only = map[string][]string{"direct": {}}
	from.Columns[0].Only = nil
	got = AddRows(m, from)
	assert.Equal(t, map[string][]string{"direct": {"waitress", "flask"}}, got.Columns[0].Only)
	assert.False(t, got.Columns[0].Runs("sync", "direct"))
	assert.True(t, got.Columns[0].Runs("flask", "direct"))
	assert.Equal(t, []string{"sync"}, got.Columns[1].Rows, "silent does not serve the new rows")
	assert.Len(t, m.Rows, 1, "m is left as it was")
	assert.Empty(t, m.Rows[0].Family)

	// A row m ran under some columns only takes from's cells under the
	// others, with its Only and, m having none, its capacity.
	m2 := &report.Matrix{
		Columns: []report.MatrixColumn{{ID: "slow-read", Paths: []string{"direct"}, Rows: []string{"sync", "waitress"}},
			{ID: "silent", Paths: []string{"direct"}, Rows: []string{"sync"}}},
		Rows:  []report.MatrixRow{{ID: "sync"}, {ID: "waitress", Only: []string{"slow-read"}}},
		Cells: []report.MatrixCell{{Column: "slow-read", Row: "waitress", Path: "direct", Class: report.ClassProtected}},
	}
	from2 := &report.Matrix{
		Columns: []report.MatrixColumn{{ID: "slow-read", Paths: []string{"direct"}, Rows: []string{"sync", "waitress"}},
			{ID: "silent", Paths: []string{"direct"}, Rows: []string{"sync", "waitress"}}},
		Rows: []report.MatrixRow{{ID: "sync"}, {ID: "waitress", Only: []string{"slow-read", "silent"},
			Capacity: []report.Capacity{{Column: "slow-read", Text: "protected up to 16"}}}},
		Cells: []report.MatrixCell{
			{Column: "slow-read", Row: "waitress", Path: "direct", Class: report.ClassSlowed},
			{Column: "silent", Row: "waitress", Path: "direct", Class: report.ClassProtected},
		},
	}
	got = AddRows(m2, from2)
	assert.Equal(t, []string{"sync", "waitress"}, got.Columns[1].Rows)
	assert.Equal(t, []report.MatrixCell{m2.Cells[0], from2.Cells[1]}, got.Cells, "the fixture's own cell kept; the grown column's cell taken")
	assert.Equal(t, from2.Rows[1].Only, got.Rows[1].Only)
	assert.Equal(t, from2.Rows[1].Capacity, got.Rows[1].Capacity)
	assert.Equal(t, []string{"slow-read"}, m2.Rows[1].Only, "m is left as it was")
}

var addRowsFrom = flag.String("add-rows-from", "",
	"add to fixtures/report/matrix.json the rows of this report directory's matrix.json that it lacks (then run make docs)")

// TestAddFixtureRows writes AddRows(fixture, the series' matrix.json) to
// the fixture when -add-rows-from names a report directory:
//
//	go test ./bench/internal/readme -run TestAddFixtureRows -add-rows-from /tmp/lab/rows
//	make docs
func TestAddFixtureRows(t *testing.T) {
	if *addRowsFrom == "" {
		t.Skip("set -add-rows-from DIR (a report directory) to add its rows to fixtures/report/matrix.json")
	}
	path := filepath.Join("..", "..", "..", "fixtures", "report", MatrixFile)
	m, err := Load(path)
	require.NoError(t, err)
	from, err := Load(filepath.Join(*addRowsFrom, MatrixFile))
	require.NoError(t, err)
	b, err := json.MarshalIndent(AddRows(m, from), "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}
