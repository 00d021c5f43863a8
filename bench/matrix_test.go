package bench

import (
	"testing"

	"wsgilab/bench/internal/engine"
)

// TestMatrix runs the resilience matrix's own cells and capacity steps of
// the profile (engine.Plans: every row on every path; the capacity of the
// rows the profile steps), then asserts the matrix's verdicts
// (engine.MatrixVerdicts: verdict.Matrix, and one per row behind NGINX
// buffering on) in TestMatrix/claims/<id>. A server's failure (a
// truncated slow client, a failed /fast) is the cell's outcome, not a
// failed run: a run fails only when the lab did not measure it whole.
//
//	go test ./bench -run 'TestMatrix/matrix-slow-read-gunicorn-gevent-2-direct' -v
func TestMatrix(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Matrix, func(engine.Condition) int { return plan.MatrixRuns }, progressMatrix, soundRun)
	assertTable(t, engine.TableMatrix)
}
