package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/verdict"
)

// Every Gunicorn server row runs again under bookworm's own Gunicorn:
// its twin's command line, PYTHONPATH put on 20.1.0's directory, its
// columns, and every path but the front doors beyond NGINX.
func TestVersionRows(t *testing.T) {
	var gunicorn, versions []Row
	for _, r := range MatrixRows {
		switch {
		case r.Gunicorn != "":
			versions = append(versions, r)
		case r.Twin == "" && isGunicorn(r.Server):
			gunicorn = append(gunicorn, r)
		}
	}
	require.Len(t, gunicorn, 6, "sync, gthread, gevent, Uvicorn's worker, eventlet and gevent-websocket")
	require.Len(t, versions, len(gunicorn))
	doors := slices.Concat(FrontDoors, UploadDoors)
	for i, r := range versions {
		twin := gunicorn[i]
		assert.Equal(t, twin.ID, r.Twin)
		assert.Equal(t, twin.ID+"-"+podspec.GunicornBookworm, r.ID)
		assert.Equal(t, twin.Server.Cmd, r.Server.Cmd, r.ID)
		assert.Equal(t, []string{"PYTHONPATH=" + podspec.GunicornReleases[podspec.GunicornBookworm]}, r.Server.Env, r.ID)
		assert.Equal(t, twin.Only, r.Only, r.ID)
		assert.Equal(t, twin.Concurrency, r.Concurrency, r.ID)
		assert.Equal(t, "Gunicorn 20.1.0 (Debian bookworm's own)", r.Family(), r.ID)
		for _, p := range doors {
			assert.NotContains(t, r.Paths, p.ID, r.ID)
		}
	}
	// Their cells: their twins' on every column but on the front doors,
	// each server under 20.1.0, the column's own changes kept (Gunicorn's
	// --timeout, its TLS files).
	twinCells, cells := 0, 0
	isDoor := func(p string) bool { return slices.ContainsFunc(doors, func(d Path) bool { return d.ID == p }) }
	for _, c := range MatrixCells() {
		r := matrixRows[c.Row]
		switch {
		case r.Gunicorn != "":
			cells++
			assert.Contains(t, c.Condition.Server.Env, "PYTHONPATH=/opt/gunicorn-20.1.0", c.Condition.ID)
			assert.True(t, strings.HasPrefix(c.Condition.Server.ID, r.ID), c.Condition.ID)
		case r.Twin == "" && isGunicorn(r.Server) && !isDoor(c.Path) && !strings.HasPrefix(c.Path, "nginx-h2c-") && !IsFaultColumn(c.Column):
			twinCells++
		}
	}
	assert.Equal(t, twinCells, cells, "the twins' cells but NGINX's h2c paths, which run sync, gthread and gevent only, and the faults' (FaultRows)")
	// Not stepped: the twin's steps are the server's capacity.
	assert.Empty(t, Capacity(SlowRead, versions, false))
}

// Every version cell is asserted under its twin's rule (-as-gunicorn-23),
// with the rule's companions; make test asserts none of them.
func TestVersionVerdicts(t *testing.T) {
	byNeed := map[string][]verdict.Verdict{}
	for _, v := range MatrixVerdicts() {
		for _, id := range v.Check.Needs() {
			byNeed[id] = append(byNeed[id], v)
		}
	}
	n := 0
	for _, c := range MatrixCells() {
		r := matrixRows[c.Row]
		if r.Gunicorn == "" {
			continue
		}
		n++
		vs := byNeed[c.Condition.ID]
		require.NotEmpty(t, vs, c.Condition.ID)
		assert.Equal(t, strings.TrimPrefix(c.Condition.ID, "matrix-")+"-as-gunicorn-23", vs[0].ID)
		rule, ok := verdict.TwinRule(c.Column, r.Twin, c.Path)
		require.True(t, ok, c.Condition.ID)
		_, changed := verdict.ChangeFor(c.Column, r.Twin, c.Path, r.Gunicorn)
		assert.Len(t, vs, 1+len(verdict.Companions(rule, r.ID, c.Path, c.Condition.ID))+btoi(c.Column == WSSlowConsumer.ID)+btoi(changed), c.Condition.ID)
	}
	assert.Equal(t, 109, n)
	// Where the releases differ, the version verdict says so rather than
	// the twin's mechanism, and both sides are asserted.
	for _, v := range MatrixVerdicts() {
		switch v.ID {
		case "hang-gunicorn-sync-2-20.1.0-direct-as-gunicorn-23":
			assert.Contains(t, v.Text, "the same verdict by another way")
			assert.NotContains(t, v.Text, "its handler answers 500 as it exits (after")
		case "hang-gunicorn-sync-2-direct-every-status", "hang-gunicorn-sync-2-20.1.0-direct-every-refused":
			n--
		}
	}
	assert.Equal(t, 109-2, n, "both sides of the hang cell's change")
	for _, v := range CIMatrixVerdicts() {
		assert.NotContains(t, v.ID, "-as-gunicorn-23", "make test runs no version cell")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
