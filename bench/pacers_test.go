package bench

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// TestPacers runs article A's slow-reader cells again with Toxiproxy's
// bandwidth toxic pacing the downloads on a hop between the client and
// the entry point, instead of the lab's reader (engine.PacerCells:
// direct-2dl under ci, and both NGINX cells under full), and asserts that
// the two instruments agree (verdict.Pacers) in TestPacers/claims/<id>.
// It reads article A's own cells, which TestArticleA runs first.
//
//	go test ./bench -run 'TestArticleA/direct-2dl|TestPacers' -v
func TestPacers(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Pacers, func(c engine.Condition) int { return c.Runs(lab.Settings.Runs) }, validRun, plan.Settle)
	assertTable(t, engine.TablePacers)
}

// TestPacersCatchMisPacedReader shows that the cross-check catches the
// fault it exists for: direct-2dl's Toxiproxy twin paced at twice the
// lab's rate (4 MiB/s: its 16 MiB in about 4 s, not 8) must fail both
// ratio verdicts against the lab-paced cell. One run of the mis-paced
// twin, in a report directory of its own; the lab-paced cell is the
// series' (TestArticleA's), or one run of it here when the series has
// none (a -run filter).
func TestPacersCatchMisPacedReader(t *testing.T) {
	if sh := lab.Settings.Shard; sh.Sharded() {
		t.Skipf("shard %s of a series: the cross-check's verdicts are judged on the merged shards", sh)
	}
	cell := engine.Pick(engine.Under(engine.ArticleA, engine.Stock), "direct-2dl")[0]
	twin := engine.ToxiproxyTwin(cell)
	misPaced := twin
	misPaced.ID += "-twice-the-rate" // never the twin's runs, in a journal or a report
	misPaced.ReadRate *= 2
	scratch := *lab
	scratch.Reports, scratch.Journal = engine.NewReports(t.TempDir(), &env), nil
	conds := map[string]report.Condition{}
	if s, ok := lab.Reports.Condition(cell.ID); ok && s.RunsValid > 0 {
		conds[cell.ID] = s
	} else {
		_, err := scratch.RunA(t, cell, 1)
		require.NoError(t, err)
		conds[cell.ID], _ = scratch.Reports.Condition(cell.ID)
	}
	r, err := scratch.RunA(t, misPaced, 1)
	require.NoError(t, err)
	require.True(t, r.Valid, "the mis-paced run: %s", r.Invalid)
	conds[twin.ID], _ = scratch.Reports.Condition(misPaced.ID) // read as the twin's
	t.Logf("lab-paced %s: completion %.2f s, write %.2f s; Toxiproxy at twice the rate: completion %.2f s, write %.2f s",
		cell.ID, conds[cell.ID].CompletionS, conds[cell.ID].WriteS, conds[twin.ID].CompletionS, conds[twin.ID].WriteS)
	d := verdict.Data{Conditions: conds}
	var checked []string
	for _, v := range verdict.Pacers {
		if !slices.Contains(v.Check.Needs(), cell.ID) {
			continue // the fast verdict reads the twin alone: a stall at 4 MiB/s is still a stall
		}
		c := verdict.Evaluate([]verdict.Verdict{v}, d)[0]
		t.Logf("%s at twice the rate: %s, measured %.3f (%s)", v.ID, c.Status, c.Measured, c.Threshold)
		assert.Equal(t, report.StatusFails, c.Status, "%s: a reader paced at twice the rate went unnoticed: %+v", v.ID, c)
		checked = append(checked, v.ID)
	}
	assert.ElementsMatch(t, []string{"pacers-write-direct-2dl", "pacers-completion-direct-2dl"}, checked, "the ratios it must fail")
}
