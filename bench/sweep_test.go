package bench

import (
	"testing"

	"wsgilab/bench/internal/engine"
)

// TestSweep runs the size × rate sweep's own cells of the profile
// (engine.Plans; LAB_SWEEP_RUNS times each), then fits the buffer model
// on every sweep cell of the series, article A's included (sweep.json),
// and asserts the sweep's verdicts (verdict.Sweep) in
// TestSweep/claims/<id>.
//
//	go test ./bench -run 'TestArticleA/(direct|nginx-off)-2dl$|TestSweep' -v
func TestSweep(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Sweep, func(engine.Condition) int { return plan.SweepRuns }, validRun, false)
	assertTable(t, engine.TableSweep)
}
