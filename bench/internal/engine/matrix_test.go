package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/verdict"
)

func TestMatrixRowsMatchTheVerdicts(t *testing.T) {
	var ids []string
	for _, r := range MatrixRows {
		assert.Equal(t, r.Server.ID, r.ID)
		ids = append(ids, r.ID)
	}
	for _, id := range verdict.MatrixRowIDs {
		assert.Contains(t, ids, id, "verdict.Matrix names a row the engine does not have")
	}
	require.NoError(t, ValidateAll(Own(matrixPlan(MatrixPaths, MatrixRows, false))))
	vs := MatrixVerdicts()
	require.NoError(t, verdict.Validate(vs))
	assert.Len(t, vs, len(verdict.Matrix)+len(MatrixRows), "one nginx-on verdict per row")
}

// Every condition a matrix verdict reads runs in both profiles, as
// article A's condition or the matrix's own.
func TestMatrixVerdictsReadPlannedConditions(t *testing.T) {
	for profile, p := range Plans {
		planned := slices.Concat(p.Conditions, p.Matrix)
		for _, v := range MatrixVerdicts() {
			for _, id := range v.Check.Needs() {
				assert.Truef(t, slices.ContainsFunc(planned, func(c Condition) bool { return c.ID == id }),
					"%s: verdict %s reads %s, which the profile does not run", profile, v.ID, id)
			}
		}
	}
}

// The verdicts name the matrix's conditions as the engine's tables do.
func TestVerdictsNameTheEnginesCells(t *testing.T) {
	for _, c := range MatrixCells() {
		assert.Equal(t, c.Condition.ID, verdict.MatrixCellID(c.Row, c.Path))
	}
	for _, st := range Capacity(SlowRead, MatrixRows, false) {
		if strings.HasPrefix(st.Condition.ID, "capacity-") {
			assert.Equal(t, st.Condition.ID, verdict.CapacityStepID(st.Row, st.Clients))
		}
	}
}

func TestMatrixCellsReuseArticleA(t *testing.T) {
	cells := MatrixCells()
	require.Len(t, cells, len(MatrixRows)*len(MatrixPaths)*len(MatrixColumns))
	id := map[[2]string]string{}
	for _, c := range cells {
		id[[2]string{c.Row, c.Path}] = c.Condition.ID
	}
	assert.Equal(t, "direct-2dl", id[[2]string{"gunicorn-sync-2", "direct"}])
	assert.Equal(t, "nginx-on-2dl", id[[2]string{"gunicorn-sync-2", "nginx-on"}])
	assert.Equal(t, "gthread-2dl", id[[2]string{"gunicorn-gthread-1x4", "direct"}])
	assert.Equal(t, "matrix-slow-read-gunicorn-gthread-1x4-nginx-on", id[[2]string{"gunicorn-gthread-1x4", "nginx-on"}])
	assert.Equal(t, "matrix-slow-read-uvicorn-2-direct", id[[2]string{"uvicorn-2", "direct"}])
}

func TestCapacitySteps(t *testing.T) {
	sync, gthread, gevent := MatrixRows[0], MatrixRows[1], MatrixRows[2]
	assert.Equal(t, []int{0, 1, 2, 3}, CapacitySteps(sync, false))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, CapacitySteps(gthread, false))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 6, 8, 12, 16}, CapacitySteps(gevent, false))
	assert.Equal(t, []int{3, 4}, CapacitySteps(gthread, true))
	assert.Nil(t, CapacitySteps(gevent, true))

	// A step another table holds reads its condition: 0, 1 and 2 sync
	// clients are article A's, 2 gevent clients the matrix's own cell.
	var ids []string
	for _, st := range Capacity(SlowRead, []Row{sync, gevent}, false) {
		ids = append(ids, st.Condition.ID)
	}
	assert.Equal(t, []string{"direct-0dl", "direct-1dl", "direct-2dl", "capacity-slow-read-gunicorn-sync-2-3",
		"capacity-slow-read-gunicorn-gevent-2-0", "capacity-slow-read-gunicorn-gevent-2-1", "matrix-slow-read-gunicorn-gevent-2-direct",
		"capacity-slow-read-gunicorn-gevent-2-3", "capacity-slow-read-gunicorn-gevent-2-4", "capacity-slow-read-gunicorn-gevent-2-6",
		"capacity-slow-read-gunicorn-gevent-2-8", "capacity-slow-read-gunicorn-gevent-2-12", "capacity-slow-read-gunicorn-gevent-2-16"}, ids)

	// The ci plan runs every row direct and behind buffering on, but for
	// article A's cells, and the steps the capacity verdicts read.
	ci := Plans["ci"].Matrix
	assert.Len(t, ci, len(MatrixRows)*2-3+2)
	assert.Equal(t, "capacity-slow-read-gunicorn-gthread-1x4-4", ci[len(ci)-1].ID)
}
