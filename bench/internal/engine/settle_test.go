package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// A condition settles once its runs so far decide every verdict that
// reads it, and not while a run still missing could change one.
func TestSettled(t *testing.T) {
	planned := Plans["ci"].Planned(DefaultRuns)
	c := Pick(ArticleA, "direct-0dl")[0]
	require.True(t, MaySettle(c.ID, planned, DefaultRuns), "only direct-0dl-idle reads direct-0dl under ci")
	assert.False(t, MaySettle("nginx-off-0dl", planned, DefaultRuns), "its temp-file verdict reads every run")
	assert.False(t, MaySettle("direct-2dl", planned, DefaultRuns), "the sweep's fit reads it")
	assert.False(t, MaySettle("gthread-2dl", planned, DefaultRuns), "the matrix's class verdict reads it")
	assert.False(t, MaySettle(c.ID, map[string]int{}, DefaultRuns), "a condition no judged verdict reads never settles")
	ah := "nginx-off-2dl@" + ArticleHost.ID
	require.Equal(t, 5, planned[ah], "bimodal: 5 runs for its medians' sake")
	assert.True(t, MaySettle(ah, planned, DefaultRuns), "its temp-file verdict reads the article's 3 runs, its medians may settle")
	assert.False(t, MaySettle(ah, planned, 5), "with LAB_RUNS 5 the temp-file verdict reads every run")

	// Runs as a summary counts them: valid and sound, with their p95.
	run := func(r *Reports, k int, p95Ms float64) {
		if len(r.conditions) == 0 {
			r.conditions = append(r.conditions, c)
		}
		r.runs = append(r.runs, report.Run{Condition: c.ID, Run: k, Valid: true, Sound: true, P95Ms: p95Ms})
	}

	r := NewReports(t.TempDir(), &report.Environment{})
	run(r, 1, 2)
	ok, _ := r.Settled(c.ID, planned, DefaultRuns)
	assert.False(t, ok, "one run of three: two more could take the median over 10 ms")
	run(r, 2, 3)
	ok, read := r.Settled(c.ID, planned, DefaultRuns)
	assert.True(t, ok, "two idle runs of three: the median stays between them")
	assert.Equal(t, []string{"direct-0dl-idle"}, read)

	r = NewReports(t.TempDir(), &report.Environment{})
	run(r, 1, 2)
	run(r, 2, 40)
	ok, _ = r.Settled(c.ID, planned, DefaultRuns)
	assert.False(t, ok, "a stalled run of two: the third decides")
}
