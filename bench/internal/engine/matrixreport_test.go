package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// summary is a sound, valid 1-run summary of c with p95 and nothing failed.
func summary(c Condition, p95 float64) report.Condition {
	cpus := c.ClientCPUs
	if cpus == 0 {
		cpus = 0.2
	}
	return report.Condition{ID: c.ID, Downloads: c.Downloads, RunsTotal: 1, RunsSound: 1, RunsValid: 1, ClientCPUs: cpus,
		P95Ms: p95, P95MsRuns: []float64{p95}, RequestsOK: 72, RequestsTotal: 72,
		DownloadsComplete: c.Downloads, DownloadsTotal: c.Downloads, WriteS: 6.6}
}

func TestBuildMatrix(t *testing.T) {
	assert.Nil(t, BuildMatrix(nil, nil, nil), "no matrix without a cell or a step")

	gevent, sync := MatrixRows[2], MatrixRows[0]
	cells := MatrixCells()
	cell := cells[slices.IndexFunc(cells, func(c MatrixCell) bool { return c.Row == gevent.ID && c.Path == Direct.ID })].Condition
	require.Equal(t, "matrix-slow-read-gunicorn-gevent-2-direct", cell.ID)
	conds := []report.Condition{summary(cell, 1.4)}
	runs := []report.Run{{Condition: cell.ID, Run: 1, Sound: true, Valid: true}}
	downloads := []report.Download{{Condition: cell.ID, Run: 1, Outcome: "complete", CompletionS: 8},
		{Condition: cell.ID, Run: 1, Outcome: "complete", CompletionS: 8.2}}

	// Sync stepped 1, 2, 3: protected, then stalled from 2. Gevent's steps
	// skip from 8 to 12, where it is slowed: the capacity is bracketed.
	steps := map[int]float64{0: 1.3, 1: 1.2, 2: 5980, 3: 5985}
	for _, st := range Capacity(SlowRead, []Row{sync}, false) {
		conds = append(conds, summary(st.Condition, steps[st.Clients]))
	}
	for _, st := range Capacity(SlowRead, []Row{gevent}, false) {
		if st.Condition.ID != cell.ID {
			p95 := 1.5
			if st.Clients >= 12 {
				p95 = 40
			}
			conds = append(conds, summary(st.Condition, p95))
		}
	}
	m := BuildMatrix(conds, runs, downloads)
	require.NotNil(t, m)
	require.Len(t, m.Cells, 2, "the gevent cell, and sync's direct cell (article A's direct-2dl)")
	c := m.Cells[1]
	assert.Equal(t, report.ClassProtected, c.Class)
	assert.Equal(t, map[string]int{"complete": 2}, c.SlowClients)
	assert.Equal(t, 1, c.RunsSound)
	assert.InDelta(t, 8.1, c.SlowClientS, 1e-9)
	assert.Equal(t, report.ClassStalled, m.Cells[0].Class)

	require.Len(t, m.Rows, len(MatrixRows))
	require.Len(t, m.Rows[0].Capacity, 1)
	assert.Equal(t, "stalled from 2", m.Rows[0].Capacity[0].Text)
	assert.Equal(t, 2, *m.Rows[0].Capacity[0].FirstUnprotected)
	g := m.Rows[2].Capacity[0]
	assert.Equal(t, "slowed from between 9 and 12", g.Text)
	assert.Equal(t, 8, g.LastProtected)
	assert.Equal(t, 0.8, g.Steps[len(g.Steps)-1].ClientCPUs, "16 slow clients get 0.8 core of client")
	assert.Equal(t, 0.2, g.Steps[0].ClientCPUs)

	// A step without data bounds nothing.
	for i := range conds {
		if conds[i].ID == "capacity-slow-read-gunicorn-gevent-2-6" {
			conds[i].RunsValid, conds[i].RunsSound, conds[i].DownloadsTotal = 0, 0, 0
		}
	}
	g = BuildMatrix(conds, runs, downloads).Rows[2].Capacity[0]
	assert.Equal(t, "protected up to 4; unknown from 6 (no valid run)", g.Text)
	assert.Nil(t, g.FirstUnprotected)
}

// Every verdict table a series evaluates lands in claims.json, the
// streaming table's included.
func TestClaimsFileHoldsEveryTable(t *testing.T) {
	dir := t.TempDir()
	r := NewReports(dir, &report.Environment{})
	for table, vs := range map[string][]verdict.Verdict{"matrix": MatrixVerdicts(), "stream": verdict.Streaming} {
		_, err := r.Evaluate(table, vs)
		require.NoError(t, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "claims.json"))
	require.NoError(t, err)
	var claims []report.Claim
	require.NoError(t, json.Unmarshal(b, &claims))
	assert.Len(t, claims, len(MatrixVerdicts())+len(verdict.Streaming))
	assert.True(t, slices.ContainsFunc(claims, func(c report.Claim) bool { return c.ID == "stream-gzip-holds-events" }))
}
