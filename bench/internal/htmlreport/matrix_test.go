package htmlreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page's answer has the matrix's overview (every row by every column
// and path, coloured by class); the matrix's section then has one table
// per column with one row per server setup it applies to, a cell per path
// coloured by its class, the capacity of the rows the series stepped, and
// the streaming table, from matrix.json alone; the matrix's own
// conditions stay out of article A's sections.
func TestMatrixSection(t *testing.T) {
	page := string(render(t, fixtureDir))
	overview, _, ok := strings.Cut(section(t, page, "answer")[strings.Index(section(t, page, "answer"), `id="matrix-overview"`):], "</table>")
	require.True(t, ok)
	sec := section(t, page, "matrix")
	cells, after, ok := strings.Cut(sec, "<h3>Capacity")
	require.True(t, ok)
	capacity, stream, ok := strings.Cut(after, `<h3 id="streaming">`)
	require.True(t, ok)

	// The fixture: 9 rows; slow read, headers and silent on 3 paths,
	// uploads on 4, the worker timeout on 2 for the 4 Gunicorn rows. Then
	// issue 33's 16: 7 servers under slow reads alone, 9 framework rows
	// on 3 paths under slow reads and, but Hypercorn's, uploads.
	assert.Equal(t, 9+16, strings.Count(overview, "<tr><td><b>"), "one overview row per server setup")
	assert.Equal(t, 10, strings.Count(overview, `<tr class="family">`), "the rows grouped by family: 7 server families and 3 frameworks")
	assert.Equal(t, 25*(3*3+4+2), strings.Count(overview, "<td class=\"m-"), "every column's paths in every row")
	assert.Equal(t, 5*2+(7+1)*(4+3+3+2)+8*(1+3+3+2), strings.Count(overview, `<td class="m-no-data" title="">–</td>`),
		"the worker timeout's 2 paths on the 5 rows it skips; the columns the new rows do not run; uploads' 4th path on the framework rows")
	assert.Equal(t, 9*4+4+16+8, strings.Count(cells, "<tr><td><b>"), "a table per column, a row per setup it applies to")
	assert.Equal(t, 5, strings.Count(cells, `<details class="column">`), "each column's table folded: the overview is the glance")
	assert.Contains(t, cells, "(2 slow clients)</h3> 25 server setups: 56 protected, 5 slowed, 14 stalled</summary>")
	assert.Contains(t, cells, "(1 slow client)</h3> 4 server setups: 7 protected, 1 failed</summary>")
	assert.Contains(t, cells, "17 server setups: 40 protected, 8 slowed, 12 stalled, 8 not run</summary>")
	for class, n := range map[string]int{"stalled": 36, "protected": 147, "slowed": 13, "failed": 1} {
		assert.Equal(t, n, strings.Count(cells, `class="m-`+class+`"`), class)
		assert.Equal(t, n, strings.Count(overview, `class="m-`+class+`"`), class)
	}
	assert.Equal(t, 2, strings.Count(capacity, "<tr><td><b>"), "the rows this series stepped")
	assert.Contains(t, capacity, "<b>stalled from 2</b>")
	assert.Contains(t, capacity, "<b>stalled from 4</b>")
	assert.Contains(t, cells, "2 complete")
	assert.Contains(t, cells, "2 held")
	assert.Contains(t, cells, "2 closed", "gevent closes slow headers")
	assert.Contains(t, cells, "1 truncated, ", "the download cut by the worker timeout")
	assert.Contains(t, cells, "1 worker timeouts logged")
	assert.Contains(t, cells, "accept queue peak 72")
	assert.Contains(t, cells, "poll/poll_schedule_timeout")

	assert.Equal(t, 7, strings.Count(stream, "<tr><td>stream-"), "the streaming table's 7 conditions")
	assert.Contains(t, stream, "X-Accel-Buffering: no")
	assert.Regexp(t, `<tr><td>stream-nginx-on-gzip</td><td>nginx-on-gzip</td><td>–</td><td>1 of 1 sound</td><td>50 of 50 \(gzip\)</td><td>[0-9,.]+ ms</td><td><b>4[0-9]{3} ms</b>`, stream,
		"gzip behind buffering on holds the events for seconds")

	assert.NotContains(t, section(t, page, "article-a-table"), "matrix-slow-read-", "the matrix's cells are not article A's")
}

func TestMatrixAbsent(t *testing.T) {
	dir := copyFixture(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "matrix.json")))
	assert.Contains(t, section(t, string(render(t, dir)), "matrix"), notMeasured)
}
