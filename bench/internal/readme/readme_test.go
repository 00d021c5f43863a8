package readme

import (
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

	require.Error(t, Protection(&report.Matrix{})(&b), "no cell, no section")
}

func TestSplice(t *testing.T) {
	doc := "a\n" + Begin + "\nold\n" + End + "\nb\n"
	out, err := Splice(doc, "new\n")
	require.NoError(t, err)
	assert.Equal(t, "a\n"+Begin+"\nnew\n"+End+"\nb\n", out)
	sec, err := Section(out)
	require.NoError(t, err)
	assert.Equal(t, "new\n", sec)
	_, err = Splice("no markers", "x")
	assert.ErrorContains(t, err, "markers")
}

// The README's section is what the committed matrix fixture (a real
// series, fixtures/report) generates: regenerate it with
// labreport -dir fixtures/report -readme README.md.
func TestReadmeSectionIsGenerated(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	m, err := Load(filepath.Join(root, "fixtures", "report", MatrixFile))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, Protection(m)(&b))
	doc, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	sec, err := Section(string(doc))
	require.NoError(t, err)
	assert.Equal(t, b.String(), sec, "README.md's protection section is stale: run labreport -dir fixtures/report -readme README.md")
}
