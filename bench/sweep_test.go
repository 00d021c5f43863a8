package bench

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/verdict"
)

// TestSweep runs the size × rate sweep's own cells of the profile
// (engine.PlansA; LAB_SWEEP_RUNS times each), then fits the buffer model
// on every sweep cell of the series, article A's included (sweep.json),
// and asserts the sweep's verdicts (verdict.Sweep) in
// TestSweep/claims/<id>.
//
//	go test ./bench -run 'TestArticleA/(direct|nginx-off)-2dl$|TestSweep' -v
func TestSweep(t *testing.T) {
	plan := lab.Settings.Plan()
	progressSweep.Start()
	for _, c := range plan.Sweep {
		t.Run(c.ID, func(t *testing.T) {
			for k := 1; k <= plan.SweepRuns; k++ {
				t.Run(fmt.Sprintf("run%d", k), func(t *testing.T) {
					r, err := lab.RunA(t, c, k)
					require.NoError(t, err)
					progressSweep.RunDone(t.Log, c.ID, k, plan.SweepRuns, len(plan.Sweep)*plan.SweepRuns, engine.RunLine(c, r))
					assert.True(t, r.Valid, "%s run %d is invalid: %s", c.ID, k, r.Invalid)
				})
			}
			require.NoError(t, lab.Reports.WriteSampled())
		})
	}
	t.Run("claims", func(t *testing.T) {
		claims, err := lab.Reports.Evaluate("sweep", verdict.Sweep)
		require.NoError(t, err)
		assertVerdicts(t, claims)
	})
}
