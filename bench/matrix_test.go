package bench

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// TestMatrix runs the resilience matrix's own cells and capacity steps of
// the profile (engine.Plans: every row on every path; the capacity of the
// rows the profile steps), then asserts the matrix's verdicts
// (engine.MatrixVerdicts: verdict.Matrix, and one per row behind NGINX
// buffering on) in TestMatrix/claims/<id>. A server's failure (a
// truncated slow client, a failed /fast) is the cell's outcome, not a
// failed run: a run fails only when the lab did not measure it whole.
//
//	go test ./bench -run 'TestMatrix/matrix-slow-read-gunicorn-gevent-2-direct' -v
func TestMatrix(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Matrix, func(engine.Condition) int { return plan.MatrixRuns }, soundRun, false)
	assertTable(t, engine.TableMatrix)
}

// TestSingleProcessServer: a server of one process (Uvicorn without
// --workers, as it is usually started) serves in that process, and the
// sampler counts it as the app's worker, so its run is sound and gets a
// class: protected, under article A's two slow readers, with its one
// worker waiting in its loop's epoll_wait.
func TestSingleProcessServer(t *testing.T) {
	srv := podspec.Uvicorn(1)
	w := slices.Index(srv.Cmd, "--workers")
	require.GreaterOrEqual(t, w, 0)
	srv.ID, srv.Cmd = "uvicorn-single", slices.Delete(slices.Clone(srv.Cmd), w, w+2) // no --workers at all
	row := engine.Row{ID: srv.ID, Server: srv}
	c, ok := engine.Cell(engine.SlowRead, row, engine.Direct, engine.SlowRead.Clients)
	require.True(t, ok)
	r, err := lab.RunA(t, c, 1)
	require.NoError(t, err)
	require.True(t, r.Sound, "a single-process server's run is measured whole: %s", r.Invalid)
	require.NotNil(t, r.Observed)
	var app []report.WorkerWaits
	for _, w := range r.Observed.Workers {
		if w.Role == "app" {
			app = append(app, w)
		}
	}
	require.Len(t, app, 1, "the one process is the app's one worker")
	assert.Greater(t, app[0].Samples, 0)
	conds := lab.Reports.Conditions()
	i := slices.IndexFunc(conds, func(s report.Condition) bool { return s.ID == c.ID })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, report.ClassProtected, verdict.Class(conds[i]), "p95 %.2f ms", r.P95Ms)
}
