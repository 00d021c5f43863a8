package engine

import (
	"slices"

	"wsgilab/bench/internal/verdict"
)

// VerdictTable is a table of verdicts as claims.json stores it: the tests
// assert each table on their own series, and labreport -merge judges
// every table on a sharded series once merged.
type VerdictTable struct {
	// ID is the table's key in claims.json ("a", "sweep", ...).
	ID       string
	Verdicts []verdict.Verdict
}

// The series' verdict tables, one per test that asserts them.
var (
	// TableA is TestArticleA's: article A's claims under stock TCP memory
	// and those under the article's host settings.
	TableA = VerdictTable{ID: "a", Verdicts: slices.Concat(verdict.ArticleA, verdict.ArticleHost)}
	// TableSweep is TestSweep's: the sweep's verdicts and the front doors'
	// stall boundaries (which read the matrix's slow-read cells too:
	// TestMatrix runs before TestSweep).
	TableSweep = VerdictTable{ID: "sweep", Verdicts: slices.Concat(verdict.Sweep, verdict.FrontDoorBoundaries())}
	// TableMatrix is TestMatrix's (MatrixVerdicts).
	TableMatrix = VerdictTable{ID: "matrix", Verdicts: MatrixVerdicts()}
	// TableStream is TestStream's.
	TableStream = VerdictTable{ID: "stream", Verdicts: verdict.Streaming}
	// TableExhaustion is TestExhaustion's (ExhaustionVerdicts).
	TableExhaustion = VerdictTable{ID: "exhaustion", Verdicts: slices.Concat(ExhaustionVerdicts(), LimitVerdicts())}
	// TableB is TestArticleB's.
	TableB = VerdictTable{ID: "b", Verdicts: verdict.ArticleB}
	// TablePacers is TestPacers': Toxiproxy's pacing against the lab's.
	TablePacers = VerdictTable{ID: "pacers", Verdicts: verdict.Pacers}
)

// VerdictTables are every table a series judges.
func VerdictTables() []VerdictTable {
	return []VerdictTable{TableA, TableSweep, TableMatrix, TableStream, TableExhaustion, TableB, TablePacers}
}

// StackTable is the claims.json table of the stack checks' requirements,
// which each check judges on its own (Reports.StackVerdicts).
const StackTable = "stack"

// ClaimTables are claims.json's tables in its order: every verdict
// table's, the stack checks' before article B's.
func ClaimTables() []string {
	var out []string
	for _, t := range VerdictTables() {
		if t.ID == TableB.ID {
			out = append(out, StackTable)
		}
		out = append(out, t.ID)
	}
	return out
}
