package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/report"
)

// assertVerdicts asserts each evaluated verdict in a subtest named by its
// id, printing measured against threshold. A verdict whose conditions did
// not run (go test -run picked others) is skipped; one whose conditions
// ran but whose data is missing fails with the reason.
func assertVerdicts(t *testing.T, claims []report.Claim) {
	for _, cl := range claims {
		t.Run(cl.ID, func(t *testing.T) {
			switch cl.Status {
			case report.StatusNotRun:
				t.Skip(cl.Note)
			case report.StatusMissing, report.StatusTooBusy:
				t.Fatalf("%s verdict %q: %s", cl.Kind, cl.Text, cl.Note)
			}
			assert.Truef(t, cl.Holds, "%s verdict %q: measured %.4g %s, threshold %s %s%s",
				cl.Kind, cl.Text, cl.Measured, cl.Unit, cl.Threshold, cl.Unit, noteOf(cl))
		})
	}
}

// noteOf is a claim's note as a failure message's last line, if any.
func noteOf(cl report.Claim) string {
	if cl.Note == "" {
		return ""
	}
	return "\n" + cl.Note
}

// assertTable evaluates verdict table vs (stored as table in claims.json)
// on everything the series measured so far, and asserts each verdict in
// the subtest claims/<id>.
func assertTable(t *testing.T, table engine.VerdictTable) {
	t.Run("claims", func(t *testing.T) {
		if sh := lab.Settings.Shard; sh.Sharded() {
			t.Skipf("shard %s of a series: its verdicts are judged on the merged shards (labreport -merge), never on one", sh)
		}
		claims, err := lab.Reports.Evaluate(table.ID, table.Verdicts)
		require.NoError(t, err)
		assertVerdicts(t, claims)
	})
}

// Judges of a run: validRun asserts that the server failed nothing and the
// lab measured the run whole (article A, the sweep); soundRun only the
// latter, where the server's failures are the outcome measured (the
// resilience matrix).
var (
	validRun = func(r report.Run) bool { return r.Valid }
	soundRun = func(r report.Run) bool { return r.Sound }
)

// runConditions runs each of conds in a subtest named by its id, runs(c)
// times, each run a subtest run<k> asserting judge(run), and writes the
// sampler's series once per condition. Each run declares the one after
// it, whose pod then starts during the run's collection and teardown.
// With settle (engine.Plan.Settle), a condition stops before runs(c) once
// more runs cannot change a verdict that reads it (Reports.Settled), and
// the run after one that may settle it (engine.MaySettle) declares the
// next condition's first.
func runConditions(t *testing.T, conds []engine.Condition, runs func(engine.Condition) int, judge func(report.Run) bool, settle bool) {
	type unit struct {
		c engine.Condition
		k int
	}
	var order []unit
	for _, c := range conds {
		for k := 1; k <= runs(c); k++ {
			order = append(order, unit{c, k})
		}
	}
	planned := lab.Settings.Plan().Planned(lab.Settings.Runs)
	// A pod opened for a run a -run filter skips goes before the next
	// test, which may open pods of its own.
	defer lab.DiscardAhead()
	for i := 0; i < len(order); {
		c, n := order[i].c, runs(order[i].c)
		may := settle && engine.MaySettle(c.ID, planned, lab.Settings.Runs)
		t.Run(c.ID, func(t *testing.T) {
			for k := 1; k <= n; k++ {
				t.Run(fmt.Sprintf("run%d", k), func(t *testing.T) {
					next := i + k
					if may && k < n && 2*k > n {
						next = i + n // it may settle after this run
					}
					if next < len(order) {
						lab.Then(order[next].c, order[next].k)
					}
					r, err := lab.RunA(t, c, k)
					require.NoError(t, err)
					job.RunDone(t.Log, t.Name(), c.ID, engine.UnitA(c, k), k, n, engine.RunLine(c, r))
					assert.True(t, judge(r), "%s run %d: %s", c.ID, k, r.Invalid)
				})
				if may && k < n {
					if ok, read := lab.Reports.Settled(c.ID, planned, lab.Settings.Runs); ok {
						t.Logf("%s: settled after %d of %d runs: more could not change %s", c.ID, k, n, strings.Join(read, ", "))
						break
					}
				}
			}
			require.NoError(t, lab.Reports.Flush())
		})
		i += n
	}
}
