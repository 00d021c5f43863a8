package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// Each framework runs under its 3 servers, serving its own app, with its
// twin's concurrency, on the article's 3 paths only.
func TestFrameworkRows(t *testing.T) {
	var fw []Row
	for _, r := range MatrixRows {
		if r.Framework != "" {
			fw = append(fw, r)
		}
	}
	require.Len(t, fw, 9)
	for _, r := range fw {
		twin := MatrixRows[slices.IndexFunc(MatrixRows, func(t Row) bool { return t.ID == r.Twin })]
		assert.Equal(t, twin.ID+"-"+r.Framework, r.ID)
		assert.Equal(t, twin.Concurrency, r.Concurrency, r.ID)
		assert.Equal(t, twin.Server.Cmd[:len(twin.Server.Cmd)-1], r.Server.Cmd[:len(r.Server.Cmd)-1], "%s: the twin's command line but its app", r.ID)
		assert.Contains(t, r.Server.Cmd[len(r.Server.Cmd)-1], r.Framework+"app:", r.ID)
		assert.Equal(t, FrameworkPaths, r.Paths, r.ID)
	}
	for _, r := range fw {
		assert.Equal(t, FrameworkColumns, r.Only, "%s: both columns, which its twin runs", r.ID)
	}
	// Framework rows are not stepped, nor scaled.
	assert.Empty(t, Capacity(SlowRead, fw, false))
	assert.False(t, slices.ContainsFunc(ScaleRows, func(s ScaleRow) bool { return s.Row.Framework != "" }))
}

// Every framework cell is asserted in its twin's class, and every twin
// cell it is compared with is asserted in that class too: by a named
// verdict, article A's, or its rule.
func TestFrameworkVerdicts(t *testing.T) {
	vs := MatrixVerdicts()
	byNeed, twinNeed := map[string][]verdict.Verdict{}, map[string][]verdict.Verdict{}
	for _, v := range slices.Concat(vs, verdict.ArticleA) {
		fw := strings.HasSuffix(v.ID, "-as-framework-free") || strings.HasSuffix(v.ID, "-framework-cost")
		for _, id := range v.Check.Needs() {
			byNeed[id] = append(byNeed[id], v)
			if !fw {
				twinNeed[id] = append(twinNeed[id], v)
			}
		}
	}
	rows := map[string]Row{}
	for _, r := range MatrixRows {
		rows[r.ID] = r
	}
	twinIDs := map[[3]string]string{}
	for _, c := range MatrixCells() {
		twinIDs[[3]string{c.Column, c.Row, c.Path}] = c.Condition.ID
	}
	n, costs := 0, 0
	for _, c := range MatrixCells() {
		r := rows[c.Row]
		if r.Framework == "" {
			continue
		}
		n++
		vs := byNeed[c.Condition.ID]
		require.NotEmpty(t, vs, c.Condition.ID)
		assert.True(t, strings.HasSuffix(vs[0].ID, "-as-framework-free"), vs[0].ID)
		twin, ok := twinIDs[[3]string{c.Column, r.Twin, c.Path}]
		require.True(t, ok, "%s: twin cell", c.Condition.ID)
		assert.NotEmpty(t, twinNeed[twin], "%s: no verdict of its own asserts the twin cell %s", c.Condition.ID, twin)
		// Where /fast is not held up, the framework's cost against the
		// twin's own cell.
		rule, _ := verdict.TwinRule(c.Column, r.Twin, c.Path)
		if rule.Expect == verdict.ExpectStalled || rule.Expect == verdict.ExpectUnprotected {
			assert.Len(t, vs, 1, c.Condition.ID)
			continue
		}
		require.Len(t, vs, 2, c.Condition.ID)
		assert.Equal(t, []string{c.Condition.ID, twin}, vs[1].Check.Needs())
		costs++
	}
	assert.Equal(t, 9*3+9*3, n)
	// Sync's cells that hold /fast up: directly under both columns, and
	// behind buffering off under slow readers, for the 2 WSGI frameworks.
	assert.Equal(t, n-2*3, costs)
	// make test runs one cell per framework: its class, and but for
	// Flask's on sync (stalled) its cost.
	ci := CIMatrixVerdicts()
	fw := slices.DeleteFunc(slices.Clone(ci), func(v verdict.Verdict) bool {
		return !strings.HasSuffix(v.ID, "-as-framework-free") && !strings.HasSuffix(v.ID, "-framework-cost")
	})
	assert.Len(t, fw, len(podspec.Frameworks)+2)
}

// The cost check fails a framework that adds more than FrameworkCostMs to
// /fast's median, and passes one within it.
func TestFrameworkCostCatches(t *testing.T) {
	rule, ok := verdict.TwinRule(SlowRead.ID, podspec.GunicornGthread(1, 4).ID, Direct.ID)
	require.True(t, ok)
	v, ok := verdict.FrameworkCost(rule, podspec.Django, "gunicorn-gthread-1x4-django", Direct.ID, "fw", "twin")
	require.True(t, ok)
	for _, tc := range []struct {
		fw    float64
		holds bool
	}{{1.8, true}, {3.5, true}, {3.6, false}, {12, false}} {
		o, err := v.Check.Eval(verdict.Data{Conditions: map[string]report.Condition{
			"fw": {ID: "fw", RunsValid: 3, P50Ms: tc.fw}, "twin": {ID: "twin", RunsValid: 3, P50Ms: 1.5}}})
		require.NoError(t, err)
		assert.Equal(t, tc.holds, o.Holds, "p50 %.1f ms against 1.5", tc.fw)
	}
}

// Every row has a family, and the report groups rows by family in
// Families' order.
func TestFamilies(t *testing.T) {
	for _, r := range MatrixRows {
		assert.NotEmpty(t, r.Family(), r.ID)
	}
	assert.Equal(t, "Gunicorn", MatrixRows[0].Family())
	m := BuildMatrix(nil, nil, nil)
	assert.Nil(t, m, "no series, no matrix")
	order := map[string]int{}
	for i, f := range Families {
		order[f.Name] = i
	}
	rows := groupByFamily(slices.Clone(MatrixRows))
	for i := 1; i < len(rows); i++ {
		assert.LessOrEqual(t, order[rows[i-1].Family()], order[rows[i].Family()], "%s before %s", rows[i-1].ID, rows[i].ID)
	}
	assert.Len(t, rows, len(MatrixRows))
}
