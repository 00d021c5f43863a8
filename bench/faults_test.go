package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// LeakFDsEnv makes the lab's app leak a descriptor per slow client
// (wsgiapp/writelog.py): the broken app the leak check must catch.
const LeakFDsEnv = "LAB_LEAK_FDS=1"

// TestResetCatchesLeakyApp shows that the reset cells' leak check
// catches the fault it exists for: make test's reset cell
// (engine.CIFaultCell: sync's two workers, each slow reader cut at
// 4 MiB) with an app patched to keep a descriptor open for each slow
// client (LeakFDsEnv) must fail its no-fd-leak verdict, by the 2
// descriptors its 2 readers leaked, and hold every other verdict of the
// cell. One run, in a report directory of its own (TestMatrix asserts
// the cell itself, TestMatrix/claims).
//
//	go test ./bench -run TestResetCatchesLeakyApp -v
func TestResetCatchesLeakyApp(t *testing.T) {
	if sh := lab.Settings.Shard; sh.Sharded() {
		t.Skipf("shard %s of a series: the fault cells' verdicts are judged on the merged shards", sh)
	}
	i := slices.IndexFunc(engine.MatrixCells(), func(c engine.MatrixCell) bool { return c.Condition.ID == engine.CIFaultCell })
	require.GreaterOrEqual(t, i, 0)
	cell := engine.MatrixCells()[i]
	leaky := cell.Condition
	leaky.ID += "-leaky-app" // never the cell's runs, in a journal or a report
	leaky.Server.ID += "-leaky"
	leaky.Server.Env = append(slices.Clone(leaky.Server.Env), LeakFDsEnv)
	leakCaught(t, leaky, verdict.CutVerdicts(cell.Column, cell.Row, cell.Path, leaky.ID, false))
}

// leakCaught runs c once, in a report directory of its own (never the
// series' reports or journal), and judges it by its cut verdicts vs: the
// no-fd-leak verdict must fail by one descriptor per slow client, and
// every other verdict hold.
func leakCaught(t *testing.T, c engine.Condition, vs []verdict.Verdict) {
	t.Helper()
	scratch := *lab
	scratch.Reports, scratch.Journal = engine.NewReports(t.TempDir(), &env), nil
	r, err := scratch.RunA(t, c, 1)
	require.NoError(t, err)
	require.True(t, r.Sound, "the leaky app's run is measured whole: %s", r.Invalid)
	s, ok := scratch.Reports.Condition(c.ID)
	require.True(t, ok)
	require.NotNil(t, s.Cut)
	t.Logf("leaky app: %d of %d slow clients cut at %d to %d bytes; records %d incomplete of %d; descriptors left %v; fast path after the cut %d of %d served, p95 %.2f ms",
		s.Cut.AtCut, s.Cut.Clients, s.Cut.BytesMin, s.Cut.BytesMax, s.Cut.Incomplete, s.Cut.Records, s.Cut.FDsLeaked, s.Cut.FastAfterOK, s.Cut.FastAfter, s.Cut.FastAfterP95Ms)
	d := verdict.Data{Conditions: map[string]report.Condition{c.ID: s}}
	for _, v := range vs {
		cl := verdict.Evaluate([]verdict.Verdict{v}, d)[0]
		t.Logf("%s: %s, measured %g (%s)", v.ID, cl.Status, cl.Measured, cl.Threshold)
		if strings.HasSuffix(v.ID, "-no-fd-leak") {
			assert.Equal(t, report.StatusFails, cl.Status, "%s: a descriptor left per slow client went unnoticed: %+v", v.ID, cl)
			assert.Equal(t, float64(c.Downloads), cl.Measured, "one descriptor a slow client")
			continue
		}
		assert.Equal(t, report.StatusHolds, cl.Status, "%s: the leak alone should fail: %+v", v.ID, cl)
	}
}
