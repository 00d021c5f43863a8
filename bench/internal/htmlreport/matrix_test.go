package htmlreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
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
	// issue 33's 7 servers under the 4 HTTP/1.1 columns; 9 framework rows
	// on 3 paths under slow reads and uploads; and 5 Gunicorn 20.1.0 rows
	// under the columns their twins run (gevent-websocket's, whose column
	// the fixture lacks, is not there).
	assert.Equal(t, 9+7+9+5, strings.Count(overview, "<tr><td><b>"), "one overview row per server setup")
	assert.Equal(t, 11, strings.Count(overview, `<tr class="family">`), "the rows grouped by family: 7 server families, Gunicorn 20.1.0 and 3 frameworks")
	assert.Equal(t, 30*(3*3+4+2), strings.Count(overview, "<td class=\"m-"), "every column's paths in every row")
	assert.Equal(t, 5*2+7*2+9*(1+3+3+2)+2, strings.Count(overview, `<td class="m-no-data" title="">–</td>`),
		"the worker timeout's 2 paths on the 5 rows it skips, the 7 new rows and eventlet's 20.1.0 row; uploads' 4th path, headers, silent and the timeout on the framework rows")
	assert.Equal(t, 30+30+21+21+8, strings.Count(cells, "<tr><td><b>"), "a table per column, a row per setup it applies to")
	assert.Equal(t, 5, strings.Count(cells, `<details class="column">`), "each column's table folded: the overview is the glance")
	assert.Contains(t, cells, "(2 slow clients)</h3> 30 server setups: 69 protected, 5 slowed, 16 stalled</summary>")
	assert.Contains(t, cells, "(1 slow client)</h3> 8 server setups: 14 protected, 2 failed</summary>")
	assert.Contains(t, cells, "30 server setups: 74 protected, 21 slowed, 16 stalled, 9 not run</summary>", "slow uploads: the framework rows run no 4th path")
	for class, n := range map[string]int{"stalled": 16 + 16 + 6 + 6, "protected": 69 + 74 + 56 + 57 + 14, "slowed": 5 + 21 + 1, "failed": 2} {
		assert.Equal(t, n, strings.Count(cells, `class="m-`+class+`"`), class)
		assert.Equal(t, n, strings.Count(overview, `class="m-`+class+`"`), class)
	}
	assert.Equal(t, 2+7, strings.Count(capacity, "<tr><td><b>"), "the rows the series stepped: sync and gthread, and issue 33's 7 servers")
	assert.Contains(t, capacity, "<b>slowed from 1; stalled from 4</b>", "waitress")
	assert.Contains(t, capacity, "<b>protected up to 16</b>", "Hypercorn, uWSGI's loops")
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

// The version cells' table: each beside its twin, a class not the twin's
// in bold, folded under how many kept their twin's class. The fixture's
// series ran eventlet's twins under 3 columns beside their 20.1.0 cells;
// a series with none says so.
func TestVersionsTable(t *testing.T) {
	_, fixture, ok := strings.Cut(section(t, string(render(t, fixtureDir)), "matrix"), `<h3 id="versions">`)
	require.True(t, ok)
	assert.Contains(t, fixture, "<summary>10 cells: 9 in their twin&#39;s class, 1 in another</summary>")
	assert.Contains(t, fixture, `<td>slow-headers</td><td>direct</td><td class="m-slowed">slowed <b>(protected)</b></td>`, "eventlet's /fast either side of the line")

	dir := copyFixture(t)
	path := filepath.Join(dir, "matrix.json")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "versions")
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	assert.Contains(t, section(t, string(render(t, dir)), "matrix"), "no version cell ran beside its twin in this series")
	m["versions"] = []report.VersionCell{
		{Release: "20.1.0", Row: "gunicorn-sync-2-20.1.0", Twin: "gunicorn-sync-2", Column: "hang", Path: "direct", Class: report.ClassFailed, TwinClass: report.ClassFailed,
			P95Ms: 6572, P95MsRuns: []float64{6498, 6647}, TwinP95Ms: 5700, TwinP95MsRuns: []float64{5580, 5820}},
		{Release: "20.1.0", Row: "gunicorn-gevent-2-20.1.0", Twin: "gunicorn-gevent-2", Column: "slow-upload", Path: "nginx-on", Class: report.ClassProtected, TwinClass: report.ClassSlowed,
			P95Ms: 4.16, P95MsRuns: []float64{4.05, 4.28}, TwinP95Ms: 65.4, TwinP95MsRuns: []float64{65.4}},
	}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	sec := section(t, string(render(t, dir)), "matrix")
	_, versions, ok := strings.Cut(sec, `<h3 id="versions">`)
	require.True(t, ok)
	assert.Contains(t, versions, "<summary>2 cells: 1 in their twin&#39;s class, 1 in another</summary>")
	assert.Equal(t, 2, strings.Count(versions, "<tr><td>20.1.0</td>"))
	assert.Contains(t, versions, `<td class="m-protected">protected <b>(slowed)</b></td>`, "the class that is not the twin's")
	assert.Contains(t, versions, `<td class="m-failed">failed</td>`)
}
