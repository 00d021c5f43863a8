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
	clock := time.Unix(1_000_000, 0)
	j.Now = func() time.Time { return clock }
	j.Quiet = true
	nop := func(...any) {}
	j.Start()
	assert.Equal(t, 50*time.Second+60*time.Second+50*time.Second, j.ETA(), "before anything: the estimates")
	for i, k := range kept {
		clock = clock.Add(100 * time.Millisecond) // a kept unit takes a moment
		j.RunDone(nop, "TestArticleA/c/run1", "c", k, i+1, 10, "kept")
	}
	assert.Equal(t, 160*time.Second, j.ETA(), "a resumed series' kept runs leave the ETA whole")

	// A unit that ran here sets the pace: its 10 s estimate took 20 s, with
	// the kept units' moments, so what is left takes twice its estimate.
	clock = clock.Add(19500 * time.Millisecond)
	j.RunDone(nop, "TestArticleA/c6/run1", "c6", "a/c6-run1", 1, 1, "ran")
	assert.Equal(t, 2*(40*time.Second+60*time.Second+50*time.Second), j.ETA())

	// A unit of a later test ends every part before it: the part timed
	// whole counts as done (at its estimate), the runs a filter left out
	// of TestArticleA drop out.
	clock = clock.Add(90 * time.Second) // TestHardening's 60 s, TestMatrix's first 10 s, at that pace
	j.RunDone(nop, "TestMatrix/m/run1", "m", "a/m-run1", 1, 1, "ran")
	measured := 10*time.Second + 60*time.Second + 10*time.Second
	pace := float64(110*time.Second) / float64(measured)
	assert.Equal(t, time.Duration(float64(40*time.Second)*pace), j.ETA(), "only TestMatrix's 4 runs are left")
}

// The -run and -skip patterns split as go test splits them.
func TestRunFilter(t *testing.T) {
	f, err := ParseRunFilter("^TestArticleA$/^direct-2dl$", "")
	require.NoError(t, err)
	assert.True(t, f.Runs("TestArticleA"))
	assert.False(t, f.Runs("TestArticleB"))
	assert.True(t, f.Runs("TestArticleA", "direct-2dl"))
	assert.False(t, f.Runs("TestArticleA", "direct-1dl"))
	assert.True(t, f.Runs("TestArticleA", "direct-2dl", "run1"), "levels past the pattern match all")

	// A top-level | separates whole patterns; one inside parentheses does
	// not, nor a slash inside brackets.
	f, err = ParseRunFilter("TestArticleA/(direct|nginx-off)-2dl$|TestSweep", "")
	require.NoError(t, err)
	assert.True(t, f.Runs("TestArticleA", "nginx-off-2dl"))
	assert.False(t, f.Runs("TestArticleA", "nginx-on-2dl"))
	assert.True(t, f.Runs("TestSweep"))
	assert.True(t, f.Runs("TestSweep", "sweep-direct-4m-2mps"), "TestSweep's alternative has no second level")
	f, err = ParseRunFilter("TestMatrix/matrix-[a/b]", "")
	require.NoError(t, err)
	assert.True(t, f.Runs("TestMatrix", "matrix-a"))

	// -skip drops what all its levels match.
	f, err = ParseRunFilter("", "TestArticleA/direct-2dl|TestShards")
	require.NoError(t, err)
	assert.True(t, f.Runs("TestArticleA"), "a skip of some subtests leaves the test")
	assert.False(t, f.Runs("TestArticleA", "direct-2dl"))
	assert.False(t, f.Runs("TestShards"))
	assert.True(t, f.Runs("TestMatrix"))

	f, err = ParseRunFilter("", "")
	require.NoError(t, err)
	assert.True(t, f.Runs("anything", "at all"))
	_, err = ParseRunFilter("Test(", "")
	assert.Error(t, err)
	_, err = ParseRunFilter("", "Test[")
	assert.Error(t, err)
}
