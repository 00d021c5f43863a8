package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// TestArticleB runs article B (engine.ServersB): every server with and
// without the 0.1 s blocking call, loaded by our generator and by ab
// against the same pod, then asserts its verdicts (verdict.ArticleB) in
// TestArticleB/claims/b/<id>.
//
//	go test ./bench -run 'TestArticleB/gunicorn-gevent-block100' -v
func TestArticleB(t *testing.T) {
	prof := engine.ProfilesB[lab.Settings.Profile]
	t.Logf("article B profile %s: %s", lab.Settings.Profile, prof.Describe)
	progressB.Start()
	for _, srv := range engine.ServersB {
		for _, block := range engine.BlockingMs {
			id := verdict.Cell(srv.ID, block)
			t.Run(id, func(t *testing.T) {
				runs, err := lab.CellB(t, srv, block, prof)
				require.NoError(t, err)
				for _, gen := range engine.GeneratorsB {
					row := engine.RowB(srv, block, gen, runs[gen])
					require.NoError(t, lab.Reports.AddThroughput(row, engine.Sampled(runs[gen])))
					progressB.RunDone(t.Log, id+"/"+gen, 1, 1, len(engine.ServersB)*len(engine.BlockingMs)*len(engine.GeneratorsB), engine.RowLine(row))
					assert.Zerof(t, row.Failed, "%s with %s: %d failed requests %v", id, gen, row.Failed, row.FailedBy)
				}
				require.NoError(t, lab.Reports.WriteSampled())
			})
		}
	}
	assertTable(t, "b", verdict.ArticleB)
}

// TestCrossCheckCatchesSlowGenerator shows that b/ours-matches-ab and
// b/generator-has-headroom catch the fault they exist for: our generator
// made the bottleneck by burning 1 ms of CPU per request
// (load.ClosedSpec.Burn), run in the same pairs against the same server
// as the real cross-check, must fail both.
func TestCrossCheckCatchesSlowGenerator(t *testing.T) {
	const burn = time.Millisecond
	prof := engine.ProfilesB[lab.Settings.Profile]
	srv := engine.ServersB[slices.IndexFunc(engine.ServersB, func(s engine.ServerB) bool { return s.ID == "gunicorn-gthread-4" })]
	// Its records go to a directory of its own: they are not the series'.
	slowed := *lab
	slowed.Reports = engine.NewReports(t.TempDir(), &env)
	pod := slowed.StartB(t, srv, 0)
	runs, err := slowed.MeasurePairsB(pod, srv, 0, prof, burn)
	require.NoError(t, err)
	ours, ab := engine.RowB(srv, 0, verdict.Ours, runs[verdict.Ours]), engine.RowB(srv, 0, verdict.AB, runs[verdict.AB])
	ratio, err := verdict.PairedRatio(ours, ab)
	require.NoError(t, err)
	d := verdict.Data{Throughput: []report.Throughput{ours, ab}}
	for _, v := range []verdict.Verdict{
		{ID: "rate", Kind: verdict.Harness, Check: verdict.OursMatchesAB([]string{ours.ID}, verdict.OursVsABTolerance)},
		{ID: "headroom", Kind: verdict.Harness, Check: verdict.GeneratorHeadroom([]string{ours.ID}, verdict.MaxGeneratorBusy)},
	} {
		c := verdict.Evaluate([]verdict.Verdict{v}, d)[0]
		t.Logf("burn %v per request, %s check: ours %.0f req/s %v, ab %.0f req/s %v, paired ratio %.3f, generator busy %.3f %v: %s",
			burn, v.ID, ours.ReqPerS, ours.ReqPerSRuns, ab.ReqPerS, ab.ReqPerSRuns, ratio, ours.GeneratorBusy, ours.GeneratorBusyRuns, c.Status)
		assert.Equal(t, report.StatusFails, c.Status, "the slowed generator went unnoticed by the %s check: %+v", v.ID, c)
	}
}
