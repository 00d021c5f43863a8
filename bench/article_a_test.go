package bench

import (
	"testing"
	"time"

	"wsgilab/bench/internal/engine"
)

// TestArticleA runs article A's matrix and its pilot under the profile's
// TCP profiles (engine.Plans), LAB_RUNS times per condition (3, as the
// article), each run in fresh containers, then asserts its verdicts
// (verdict.ArticleA, and verdict.ArticleHost for the cells under the
// article-host profile) in TestArticleA/claims/<id>. TestArticleA/pods-ahead
// checks, over the series' records, that no pod opened ahead was asked
// for during another run's window (assertPodsAhead).
//
//	go test ./bench -run 'TestArticleA/direct-2dl' -v
func TestArticleA(t *testing.T) {
	since := time.Now()
	runConditions(t, lab.Settings.Plan().Conditions, func(c engine.Condition) int { return c.Runs(lab.Settings.Runs) }, validRun, lab.Settings.Plan().Settle)
	t.Run("pods-ahead", func(t *testing.T) { assertPodsAhead(t, since) })
	assertTable(t, engine.TableA)
}
