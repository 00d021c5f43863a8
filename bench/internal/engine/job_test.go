package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testJob(kept []string) *Job {
	return NewJob([]JobPart{
		{Test: "TestArticleA", Units: 10, Unit: "runs", Each: 10 * time.Second, Kept: len(kept)},
		{Test: "TestHardening", Units: 1, Unit: UnitTest, Each: 60 * time.Second},
		{Test: "TestMatrix", Units: 5, Unit: "runs", Each: 10 * time.Second},
	}, kept)
}

// The plan says what runs and how long it should take, the whole first.
func TestJobPlan(t *testing.T) {
	var b strings.Builder
	require.NoError(t, testJob([]string{"a/direct-0dl-run1", "a/direct-0dl-run2"}).Plan(&b, "wsgilab: the job"))
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "wsgilab: the job: 3 tests, 14 units, about 3m0s\n"), out)
	assert.Contains(t, out, "TestArticleA")
	assert.Contains(t, out, "10 runs")
	assert.Contains(t, out, "(2 from the journal)")
}

// One ETA for the whole job: every unit left, at the estimates until
// units ran here, then at the pace they ran. Right after a resume the
// journal's units count for nothing, so the first ETA is the rest of the
// job, not the time a kept unit took.
func TestJobETA(t *testing.T) {
	kept := []string{"a/c1-run1", "a/c2-run1", "a/c3-run1", "a/c4-run1", "a/c5-run1"}
	j := testJob(kept)
	j.Quiet = true
	j.Start()
	assert.Equal(t, 50*time.Second+60*time.Second+50*time.Second, j.ETA(), "before anything: the estimates")
	for i, k := range kept {
		j.RunDone(func(...any) {}, "TestArticleA/c/run1", "c", k, i+1, 10, "kept")
	}
	assert.Equal(t, 160*time.Second, j.ETA(), "a resumed series' kept runs leave the ETA whole")

	// A unit that ran here sets the pace: its 10 s estimate took as long
	// as the job has run so far.
	time.Sleep(20 * time.Millisecond)
	j.RunDone(func(...any) {}, "TestArticleA/c6/run1", "c6", "a/c6-run1", 1, 1, "ran")
	pace := float64(time.Since(j.started)) / float64(10*time.Second)
	assert.InEpsilon(t, 150*time.Second, time.Duration(float64(j.ETA())/pace), 0.05, "150 s of units left, at this pace")

	// A unit of a later test ends every part before it: the parts timed
	// whole count as done, the runs a filter left out drop from the ETA.
	j.RunDone(func(...any) {}, "TestMatrix/m/run1", "m", "a/m-run1", 1, 1, "ran")
	assert.Less(t, j.ETA(), time.Duration(float64(40*time.Second)*pace*1.5), "only TestMatrix's 4 runs are left")
	j.Finish()
}

// The -run pattern splits as go test splits it.
func TestRunFilter(t *testing.T) {
	f, err := ParseRunFilter("^TestArticleA$/^direct-2dl$")
	require.NoError(t, err)
	assert.True(t, f.Matches(0, "TestArticleA"))
	assert.False(t, f.Matches(0, "TestArticleB"))
	assert.True(t, f.Matches(1, "direct-2dl"))
	assert.False(t, f.Matches(1, "direct-1dl"))
	assert.True(t, f.Matches(2, "run1"), "levels past the pattern match all")

	f, err = ParseRunFilter("TestArticleA/(direct|nginx-off)-2dl$|TestSweep")
	require.NoError(t, err)
	require.Len(t, f, 2, "a slash inside parentheses does not split")
	assert.True(t, f.Matches(1, "nginx-off-2dl"))

	f, err = ParseRunFilter("")
	require.NoError(t, err)
	assert.True(t, f.Matches(0, "anything"))
	_, err = ParseRunFilter("Test(")
	assert.Error(t, err)
}
