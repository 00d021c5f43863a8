package engine

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

func planIDs(p Plan) []string {
	var ids []string
	for _, c := range slices.Concat(p.Conditions, p.Sweep, p.Pacers) {
		ids = append(ids, c.ID)
	}
	return ids
}

func TestPlansreValidAndMatchTheProfiles(t *testing.T) {
	assert.ElementsMatch(t, slices.Collect(maps.Keys(ProfilesB)), slices.Collect(maps.Keys(Plans)),
		"LAB_PROFILE picks both article B's load and article A's plan")
	for name, p := range Plans {
		require.NoError(t, ValidateAll(slices.Concat(p.Conditions, p.Sweep)), name)
		assert.Positive(t, p.SweepRuns, name)
	}
	full := Plans["full"]
	assert.Len(t, full.Conditions, 2*len(ArticleA), "every article A cell under both profiles")
	// 5 sizes x 3 rates x 2 paths x 2 profiles, less the cells article A
	// holds: 16 MiB at 2 MiB/s (direct-2dl, nginx-off-2dl) and the pilot's
	// 8 MiB at 1 MiB/s, on both paths, under both profiles; then 5 sizes
	// on each front door at 2 MiB/s, less the 16 MiB cell the matrix holds
	// and Caddy buffered's 24 MiB (verdict.FrontDoor.SweepMaxMiB).
	assert.Len(t, full.Sweep, 60-8+len(FrontDoors)*4-1)
	assert.Len(t, Plans["ci"].Sweep, 8)
	assert.Len(t, Plans["ci"].Conditions, len(ArticleA)+3)
}

func TestSweepLeavesArticleACellsToArticleA(t *testing.T) {
	for _, c := range Sweep(Stock, SweepSizes, SweepRates) {
		assert.NotEqual(t, "sweep-direct-16m-2mps", c.ID, "that is direct-2dl")
		assert.NotEqual(t, "sweep-nginx-off-8m-1mps", c.ID, "that is pilot-nginx-off")
	}
	assert.Equal(t, "sweep-nginx-off-24m-4mps@article-host", SweepID(NginxOff, 24<<20, 4<<20, ArticleHost))
	assert.Equal(t, "sweep-direct-4m-1mps", SweepID(Direct, 4<<20, 1<<20, Stock))
}

func TestUnderSuffixesIDsAndSetsTheProfile(t *testing.T) {
	cs := Under(Pick(ArticleA, "nginx-off-2dl"), ArticleHost)
	require.Len(t, cs, 1)
	assert.Equal(t, "nginx-off-2dl@article-host", cs[0].ID)
	assert.Equal(t, "nginx-off-2dl", cs[0].Ref, "the article's figures stay the cell's")
	assert.Equal(t, ArticleHost, cs[0].TCP)
	assert.Equal(t, "4096 16384 8388608", cs[0].Pod("x").TCPWmem)
}

func TestTheBimodalCellTakesFiveRuns(t *testing.T) {
	for name, p := range Plans {
		c := Pick(p.Conditions, "nginx-off-2dl@article-host")
		require.Len(t, c, 1, name)
		assert.Equal(t, 5, c[0].Runs(3), name)
		assert.Equal(t, 7, c[0].Runs(7), name)
		assert.Equal(t, 3, Pick(p.Conditions, "direct-2dl@article-host")[0].Runs(3), name)
	}
	bad := Pick(ArticleA, "direct-2dl")[0]
	bad.MinRuns = -1
	assert.ErrorContains(t, bad.Validate(), "MinRuns -1: want 0 to 100")
}

// Every verdict reads conditions the full plan runs, and the sweep's
// verdicts read conditions the ci plan runs (make test asserts them).
func TestVerdictsReadPlannedConditions(t *testing.T) {
	full, ci := planIDs(Plans["full"]), planIDs(Plans["ci"])
	for _, c := range Plans["full"].Matrix {
		full = append(full, c.ID)
	}
	for _, v := range slices.Concat(verdict.ArticleA, verdict.ArticleHost, TableSweep.Verdicts) {
		for _, id := range v.Check.Needs() {
			assert.Contains(t, full, id, "verdict %s", v.ID)
		}
	}
	lab := slices.DeleteFunc(slices.Clone(verdict.ArticleHost), func(v verdict.Verdict) bool {
		return !slices.Contains([]string{"nginx-off-2dl-near-article@article-host", "pilot-nginx-off-idle@article-host",
			"pilot-nginx-off-write-free@article-host"}, v.ID)
	})
	require.Len(t, lab, 3)
	for _, v := range slices.Concat(verdict.Sweep, lab) {
		for _, id := range v.Check.Needs() {
			assert.Contains(t, ci, id, "verdict %s", v.ID)
		}
	}
	require.NoError(t, verdict.Validate(slices.Concat(verdict.ArticleA, verdict.ArticleHost, TableSweep.Verdicts)))

	// The pacer cross-check's verdicts read conditions the full plan
	// runs, and its direct-2dl ones conditions make test runs.
	for _, v := range verdict.Pacers {
		for _, id := range v.Check.Needs() {
			assert.Contains(t, full, id, "verdict %s", v.ID)
			if strings.HasSuffix(v.ID, "-direct-2dl") {
				assert.Contains(t, ci, id, "verdict %s", v.ID)
			}
		}
	}
	require.NoError(t, verdict.Validate(verdict.Pacers))
}

func TestFitSweepTakesOnlyTwoSyncWorkersWithTwoDownloads(t *testing.T) {
	sum := func(c Condition) report.Condition {
		s := SummarizeCondition(c, nil, report.ArticleValue{})
		s.RunsValid, s.DownloadsComplete, s.PathPeakBytes = 1, 2, report.Float(1e6)
		return s
	}
	assert.Nil(t, FitSweep([]report.Condition{sum(Pick(ArticleA, "nginx-on-2dl")[0]), sum(Pick(ArticleA, "gthread-2dl")[0])}))
	s := FitSweep([]report.Condition{sum(Pick(ArticleA, "direct-2dl")[0]), sum(Pick(ArticleA, "direct-1dl")[0])})
	require.NotNil(t, s)
	require.Len(t, s.Cells, 1)
	assert.Equal(t, "direct-2dl", s.Cells[0].Condition)
	// Nor are the pacer cross-check's twins, paced by Toxiproxy.
	var twins []report.Condition
	for _, c := range PacerCells("direct-2dl", "nginx-off-2dl", "nginx-on-2dl") {
		twins = append(twins, sum(c))
	}
	assert.Nil(t, FitSweep(twins), "a twin paced by Toxiproxy is not a sweep cell")

	// The matrix's other slow clients on the same server and paths are
	// not sweep cells.
	var others []report.Condition
	for _, c := range MatrixCells() {
		if c.Row == "gunicorn-sync-2" && c.Column != SlowRead.ID {
			others = append(others, sum(c.Condition))
		}
	}
	require.NotEmpty(t, others)
	assert.Nil(t, FitSweep(others), "uploads, held connections and the worker-timeout download are not the sweep's")
}
