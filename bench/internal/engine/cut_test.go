package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/runrec"
)

// A role's descriptors are counted at their most before the load and
// at their fewest over its last FDSettleSpan: a file a starting worker
// opens, or a /fast connection open in one sample, is not a leak; a
// descriptor held to the end is.
func TestObserveFDsSettle(t *testing.T) {
	const start = int64(1_000_000_000_000)
	at := func(d time.Duration) int64 { return start + int64(d) }
	res := load.Result{StartUnixNano: start, Elapsed: 9 * time.Second}
	s := probe.Series{}
	for _, d := range []time.Duration{0, 4 * time.Second, 8500 * time.Millisecond, 9 * time.Second} {
		s.Resources = append(s.Resources, probe.ResourceSample{UnixNano: at(d), Role: "app"})
	}
	for _, f := range []struct {
		d time.Duration
		n int
	}{
		{-30 * time.Millisecond, 27}, {-10 * time.Millisecond, 25}, // before: not read, the sampler's quiet count is
		{100 * time.Millisecond, 28}, {4 * time.Second, 30}, // the load
		{8100 * time.Millisecond, 29}, {8500 * time.Millisecond, 27}, {8900 * time.Millisecond, 28}, // the last second: a leak of 1, a /fast in flight twice
	} {
		// Two of each are an event loop's own pipe ends, not counted.
		s.FDs = append(s.FDs, probe.FDSample{UnixNano: at(f.d), Role: "app", FDs: f.n + 2, Sockets: f.n - 20, Files: 20})
	}
	o := Observe(s, res, nil)
	app := o.Resources["app"]
	assert.Nil(t, app.FDsBefore, "no quiet count, none before")
	require.NotNil(t, app.FDsAtEnd)
	s.QuietFDs = map[string]int{"app": 26, "proxy": 40} // no proxy sampled: not reported
	o = Observe(s, res, nil)
	app = o.Resources["app"]
	require.NotNil(t, app.FDsBefore)
	assert.Equal(t, 26, *app.FDsBefore)
	assert.NotContains(t, o.Resources, "proxy")
	assert.Equal(t, 27, *app.FDsAtEnd)
	assert.Equal(t, 32, app.MaxFDs, "the peak is the window's alone, every descriptor")
}

// cutOf reads a reset cell's run: where each client was cut, what the
// app recorded, when it was freed, the next requests and what was left.
func TestCutOf(t *testing.T) {
	c, ok := Cell(ResetMidDownload, matrixRows["gunicorn-sync-2"], Direct, 2)
	require.True(t, ok)
	require.NoError(t, c.Validate())
	const start = int64(1_000_000_000_000)
	res := load.Result{StartUnixNano: start, Elapsed: 9 * time.Second, Spec: c.Load("http://pod", "x")}
	for i, n := range []int64{ResetCutBytes - 151, ResetCutBytes - 151} {
		res.Downloads = append(res.Downloads, load.Download{ID: []string{"d1", "d2"}[i], Expected: c.BodyBytes, Bytes: n, Status: 200,
			Start: time.Duration(i) * time.Millisecond, Completion: 2030 * time.Millisecond, Error: "body is short"})
	}
	for k := range 72 {
		res.Fast = append(res.Fast, load.FastRequest{Seq: k, Scheduled: time.Duration(k) * 125 * time.Millisecond,
			Latency: 2 * time.Millisecond, Status: 200, Bytes: 12})
	}
	res.Fast[30].Status = 502 // one failed after the cut
	rec := Record{Load: res, Writes: map[string]runrec.WriteRecord{
		"d1": {ID: "d1", StartNs: start, Write: 2025 * time.Millisecond},
		"d2": {ID: "d2", StartNs: start, Write: 2032 * time.Millisecond, Complete: true},
	}}
	before, end := 26, 28
	o := &report.Observed{Resources: map[string]report.ResourceSummary{"app": {FDsBefore: &before, FDsAtEnd: &end}}}
	cut := cutOf(c, rec, o)
	require.NotNil(t, cut)
	assert.Equal(t, 2, cut.AtCut)
	assert.Equal(t, int64(ResetCutBytes-151), cut.BytesMin)
	assert.InDelta(t, 2.031, cut.CutAtS, 1e-9)
	assert.Equal(t, 2, cut.Records)
	assert.Equal(t, 1, cut.Incomplete)
	assert.Equal(t, 1, cut.Complete)
	require.NotNil(t, cut.FreedAfterCutS)
	assert.InDelta(t, 0.001, *cut.FreedAfterCutS, 1e-9)
	// Started 250 ms or more after 2.031 s: from the 19th (2.375 s) on.
	assert.Equal(t, 72-19, cut.FastAfter)
	assert.Equal(t, 72-19-1, cut.FastAfterOK)
	assert.Equal(t, map[string]int{"app": 2}, cut.FDsLeaked)
	assert.Nil(t, cut.TempFilesLeft, "no front door")
	assert.Empty(t, cutProblems(cut, o))

	// A record that ended before the cut (a front door took the body):
	// freed is negative, the latest record's.
	rec.Writes["d1"] = runrec.WriteRecord{ID: "d1", StartNs: start, Write: 70 * time.Millisecond, Complete: true}
	rec.Writes["d2"] = runrec.WriteRecord{ID: "d2", StartNs: start, Write: 80 * time.Millisecond, Complete: true}
	cut = cutOf(c, rec, o)
	assert.InDelta(t, -1.951, *cut.FreedAfterCutS, 1e-9)

	// A client that got the whole body was not cut; one without a count
	// of descriptors makes the run unsound.
	rec.Load.Downloads[1].Bytes, rec.Load.Downloads[1].Error = c.BodyBytes, ""
	cut = cutOf(c, rec, &report.Observed{Resources: map[string]report.ResourceSummary{}})
	assert.Equal(t, 1, cut.AtCut)
	assert.Equal(t, []string{"no count of the app's descriptors before the load and at its end, which the leak check reads"}, cutProblems(cut, &report.Observed{}))

	// A team's app keeps no records: none counted, none missing, nothing
	// said of when its worker was freed; the rest as for the lab's.
	team := c
	team.Target = &Target{FastPath: "/healthz", LargePath: "/export", LargeBytes: c.BodyBytes}
	cut = cutOf(team, rec, o)
	assert.Equal(t, [4]int{0, 0, 0, 0}, [4]int{cut.Records, cut.Missing, cut.Incomplete, cut.Complete})
	assert.Nil(t, cut.FreedAfterCutS)
	assert.Equal(t, 1, cut.AtCut)
	assert.Equal(t, map[string]int{"app": 2}, cut.FDsLeaked)

	// No fault, no cut.
	c.Fault = ""
	assert.Nil(t, cutOf(c, rec, o))
}

// foldCuts keeps the worst of each figure over the runs.
func TestFoldCuts(t *testing.T) {
	f1, f2 := -0.01, 0.2
	one, none := 1, 0
	a := &report.Cut{Clients: 2, AtCut: 2, BytesMin: 10, BytesMax: 20, Records: 2, Incomplete: 2, FreedAfterCutS: &f1,
		FastAfter: 55, FastAfterOK: 55, FastAfterP95Ms: 2, FDsLeaked: map[string]int{"app": 0, "proxy": 1}, TempFilesLeft: &none}
	b := &report.Cut{Clients: 2, AtCut: 1, BytesMin: 5, BytesMax: 30, Records: 1, Missing: 1, Incomplete: 0, Complete: 1, FreedAfterCutS: &f2,
		FastAfter: 50, FastAfterOK: 49, FastAfterP95Ms: 1.5, FDsLeaked: map[string]int{"app": 2, "proxy": 0}, TempFilesLeft: &one}
	w := foldCuts([]*report.Cut{a, nil, b})
	require.NotNil(t, w)
	assert.Equal(t, 1, w.AtCut)
	assert.Equal(t, int64(5), w.BytesMin)
	assert.Equal(t, int64(30), w.BytesMax)
	assert.Equal(t, 2, w.Records)
	assert.Equal(t, 1, w.Missing)
	assert.Equal(t, 2, w.Incomplete)
	assert.Equal(t, 1, w.Complete)
	assert.Equal(t, 0.2, *w.FreedAfterCutS)
	assert.Equal(t, [2]int{50, 49}, [2]int{w.FastAfter, w.FastAfterOK})
	assert.Equal(t, 2.0, w.FastAfterP95Ms)
	assert.Equal(t, map[string]int{"app": 2, "proxy": 1}, w.FDsLeaked)
	assert.Equal(t, 1, *w.TempFilesLeft)
	assert.Equal(t, 0, a.FDsLeaked["app"], "the runs' own figures are left alone")
	assert.Nil(t, foldCuts([]*report.Cut{nil}))
}
