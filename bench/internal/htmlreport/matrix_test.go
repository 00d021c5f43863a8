package htmlreport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The matrix's section has one row per server setup, a cell per path
// coloured by its class, and the capacity of the rows the series stepped,
// from matrix.json alone; the matrix's own conditions stay out of article
// A's sections.
func TestMatrixSection(t *testing.T) {
	page := string(render(t, fixtureDir))
	sec := section(t, page, "matrix")
	cells, capacity, ok := strings.Cut(sec, "<h3>Capacity")
	require.True(t, ok)
	assert.Equal(t, 9, strings.Count(cells, "<tr><td><b>"), "one row per server setup")
	assert.Equal(t, 2, strings.Count(capacity, "<tr><td><b>"), "the rows this series stepped")
	assert.Equal(t, 8, strings.Count(sec, `class="m-stalled"`), "sync and 3 uWSGI rows stall direct and behind buffering off")
	assert.Equal(t, 9*3-8, strings.Count(sec, `class="m-protected"`), "every other cell is protected")
	assert.Contains(t, sec, "<b>stalled from 2</b>")
	assert.Contains(t, sec, "<b>stalled from 4</b>")
	assert.Contains(t, sec, "2 complete")
	assert.Contains(t, sec, "poll/poll_schedule_timeout")

	assert.NotContains(t, section(t, page, "article-a-table"), "matrix-slow-read-", "the matrix's cells are not article A's")
}

func TestMatrixAbsent(t *testing.T) {
	dir := copyFixture(t)
	require.NoError(t, os.Remove(filepath.Join(dir, "matrix.json")))
	assert.Contains(t, section(t, string(render(t, dir)), "matrix"), notMeasured)
}
