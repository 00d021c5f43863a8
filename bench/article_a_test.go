package bench

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/verdict"
)

// TestArticleA runs article A's matrix and its pilot under the profile's
// TCP profiles (engine.PlansA), LAB_RUNS times per condition (3, as the
// article), each run in fresh containers, then asserts its verdicts
// (verdict.ArticleA, and verdict.ArticleHost for the cells under the
// article-host profile) in TestArticleA/claims/<id>.
//
//	go test ./bench -run 'TestArticleA/direct-2dl' -v
func TestArticleA(t *testing.T) {
	conds := lab.Settings.Plan().Conditions
	total := 0
	for _, c := range conds {
		total += c.Runs(lab.Settings.Runs)
	}
	progressA.Start()
	for _, c := range conds {
		t.Run(c.ID, func(t *testing.T) {
			runs := c.Runs(lab.Settings.Runs)
			for k := 1; k <= runs; k++ {
				t.Run(fmt.Sprintf("run%d", k), func(t *testing.T) {
					r, err := lab.RunA(t, c, k)
					require.NoError(t, err)
					progressA.RunDone(t.Log, c.ID, k, runs, total, engine.RunLine(c, r))
					assert.True(t, r.Valid, "%s run %d is invalid: %s", c.ID, k, r.Invalid)
				})
			}
			require.NoError(t, lab.Reports.WriteSampled())
		})
	}
	t.Run("claims", func(t *testing.T) {
		claims, err := lab.Reports.Evaluate("a", slices.Concat(verdict.ArticleA, verdict.ArticleHost))
		require.NoError(t, err)
		assertVerdicts(t, claims)
	})
}
