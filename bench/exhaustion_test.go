package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/verdict"
)

// TestExhaustion runs the exhaustion table's cells of the profile
// (engine.ExhaustionTable: responses below, at and past NGINX's
// proxy_max_temp_file_size, and a temp directory that fills under 8 slow
// readers), then asserts its verdicts (engine.ExhaustionVerdicts) in
// TestExhaustion/claims/<id>. A reader NGINX cuts short is the cell's
// outcome, not a failed run.
//
//	go test ./bench -run 'TestArticleA/nginx-on-2dl$|TestExhaustion' -v
func TestExhaustion(t *testing.T) {
	plan := lab.Settings.Plan()
	runConditions(t, plan.Exhaustion, func(engine.Condition) int { return plan.ExhaustionRuns }, soundRun, false)
	assertTable(t, engine.TableExhaustion)
}

// TestSilentShortBodyCaught injects the fault the no-silent-short-body
// verdict exists for: behind NGINX buffering on, the app answers each
// slow reader with 8 MiB under a Content-Length of 8 MiB, a whole-looking
// response, where the lab asked for 16 MiB. The client must name each a
// silent short body, and the verdict must fail on it.
func TestSilentShortBodyCaught(t *testing.T) {
	c := engine.Condition{ID: "exhaustion-fault-silent-short-nginx-on", Server: podspec.GunicornSync(2), Path: engine.NginxOn,
		Downloads: 2, BodyBytes: load.DefaultLargeSize, ReadRate: load.DefaultDownloadRate, TCP: engine.Stock,
		Target: &engine.Target{FastPath: "/fast", LargePath: "/large?size=8388608", LargeBytes: load.DefaultLargeSize}}
	r, err := lab.RunA(t, c, 1)
	require.NoError(t, err)
	require.True(t, r.Sound, r.Invalid)
	assert.Equal(t, map[string]int{load.OutcomeSilentShort: 2}, r.SlowOutcomes, "each reader got 8 of 16 MiB as if whole")
	var s report.Condition
	for _, sc := range lab.Reports.Conditions() {
		if sc.ID == c.ID {
			s = sc
		}
	}
	require.Equal(t, c.ID, s.ID)
	claims := verdict.Evaluate([]verdict.Verdict{{ID: "no-silent-short-body", Kind: verdict.Harness, Check: verdict.NoSilentShort(c.ID)}},
		verdict.Data{Conditions: map[string]report.Condition{c.ID: s}})
	require.Len(t, claims, 1)
	assert.Equal(t, report.StatusFails, claims[0].Status, "the verdict catches the injected short bodies: %+v", claims[0])
	assert.EqualValues(t, 2, claims[0].Measured)
}
