package htmlreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// A directory with only stacks.json (from make check) renders its stack
// checks: each verdict, every behaviour's steps and the advice.
func TestStacks(t *testing.T) {
	page := string(render(t, "testdata/stacks"))
	assert.Contains(t, page, `<section id="stacks">`)
	assert.Contains(t, page, `shop-sync: <span class="verdict fail">FAIL</span>`)
	assert.Contains(t, page, `shop-gthread: <span class="verdict pass">PASS</span>`)
	assert.Contains(t, page, "<b>stalls at 2 slow readers</b>")
	assert.Contains(t, page, "2: p95 5965 ms (broken; runs 5965 ms, 5964 ms)")
	assert.Contains(t, page, "in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers")
	assert.Equal(t, 4, strings.Count(page, "<b>Advice:</b>"))
	// Its matrix.json holds a stack row only: no empty cell tables, the
	// row's steps on its own path.
	assert.NotContains(t, page, "matrix-overview")
	assert.NotContains(t, page, "not run</td>")
	assert.Contains(t, page, "slow-read (nginx-custom)")
}

// The page opens with the answer: its first section, right under a short
// header, holds the headline findings and every matrix cell; the verdicts
// follow, those not run in the series folded away, and an example stack
// meant to fail reads as the expected outcome, not as a failure.
func TestAnswerFirst(t *testing.T) {
	dir := copyFixture(t)
	stacks := []report.Stack{{Name: "shop-sync", Server: "2 sync workers", Path: "direct", FastP95Ms: 50, ExpectFails: true,
		Behaviours: []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 2, StallsAt: 2, HeldUpTo: 1, Text: "stalls at 2 slow readers"}}}}
	require.NoError(t, report.WriteFile(dir, "stacks.json", report.JSON(stacks)))
	var claims []report.Claim
	b, err := os.ReadFile(filepath.Join(dir, "claims.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &claims))
	claims = append(claims,
		report.Claim{ID: "stack-shop-sync-slow-read-requirement", Kind: "lab", Status: report.StatusFails, Evaluated: true, Measured: 1, Expected: report.StatusFails},
		report.Claim{ID: "sweep-model-right", Kind: "lab", Status: report.StatusNotRun, Note: "not run: sweep-direct-4m-2mps"})
	require.NoError(t, report.WriteFile(dir, "claims.json", report.JSON(claims)))

	page := string(render(t, dir))
	main := page[strings.Index(page, "<main>"):]
	assert.True(t, strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(main, "<main>")), `<section id="answer">`), "the answer is the page's first section")
	answer := section(t, page, "answer")
	assert.Contains(t, answer, `<ul class="findings">`)
	assert.Contains(t, answer, "Stack shop-sync (2 sync workers, direct): FAIL, as this example is meant to: stalls at 2 slow readers (requires 2).")
	assert.Contains(t, answer, `id="matrix-overview"`, "every matrix cell on the first screen")
	assert.Contains(t, answer, "1 fail as meant to (example stacks that show what the lab catches)")
	assert.Contains(t, answer, "0 fail,", "the example's failure is not counted as one")
	claimsSec := section(t, page, "claims")
	assert.Contains(t, claimsSec, `<span class="verdict expected">fails, as this example is meant to</span>`)
	notRun := claimsSec[strings.Index(claimsSec, "<details>"):]
	assert.Contains(t, notRun, "<summary>1 not run in this series</summary>")
	assert.Contains(t, notRun, "sweep-model-right", "a verdict not run is folded away")
	assert.Contains(t, section(t, page, "stacks"), `shop-sync: <span class="verdict expected">FAIL, as this example is meant to</span>`)
}
