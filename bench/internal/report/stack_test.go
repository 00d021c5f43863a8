package report

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStackText(t *testing.T) {
	s := Stack{Name: "shop-sync", Server: "2 sync workers", Path: "direct", Capacity: 2, Basis: "--workers 2, one request each",
		FastP95Ms: 50, Baseline: StackStep{P95Ms: 1.2447, State: "held", RunsTotal: 1},
		Behaviours: []StackBehaviour{{Noun: "slow readers", Required: 2, Text: "stalls at 2 slow readers",
			Steps: []StackStep{{Clients: 1, P95Ms: 1.19, State: "held", RunsTotal: 1}, {Clients: 2, P95Ms: 5964.7, State: "broken", RunsTotal: 2}}}},
		Advice: "Add NGINX."}
	var b strings.Builder
	require.NoError(t, s.Text(&b))
	assert.Equal(t, `shop-sync: FAIL (2 sync workers, direct; capacity 2: --workers 2, one request each; the fast path's p95 bound 50 ms)
  baseline, no slow client: p95 1.24 ms, held
  FAIL slow readers: requires 2, stalls at 2 slow readers [1: 1.19 ms held (1 run); 2: 5965 ms broken (2 runs)]
Advice: Add NGINX.
`, b.String())
}

// A check's exit code: 0 when every requirement held, 1 when one failed
// on data (whatever else is undecided), 2 when one has no data or the
// check wrote no verdict; and the summary labcheck prints ends with it.
func TestCheckExit(t *testing.T) {
	held := StackBehaviour{Noun: "slow readers", Required: 2, Pass: true, Text: "none up to 3 slow readers"}
	broke := StackBehaviour{Noun: "silent connections", Required: 2, Text: "stalls at 2 silent connections"}
	unknown := StackBehaviour{Noun: "slow uploads", Required: 1, NoData: true, Text: "no data at 1 slow uploads: the lab could not measure run 1: x"}
	for _, tc := range []struct {
		name string
		bs   []StackBehaviour
		want int
	}{
		{"every requirement held", []StackBehaviour{held}, ExitPass},
		{"one failed", []StackBehaviour{held, broke}, ExitFail},
		{"one failed, one undecided", []StackBehaviour{unknown, broke}, ExitFail},
		{"one undecided", []StackBehaviour{held, unknown}, ExitUndecided},
	} {
		pass := true
		for _, b := range tc.bs {
			pass = pass && b.Pass
		}
		code, why := CheckExit([]Stack{{Name: "shop", Behaviours: tc.bs, Pass: pass}}, "shop")
		assert.Equal(t, tc.want, code, "%s: %s", tc.name, why)
	}
	code, why := CheckExit(nil, "shop")
	assert.Equal(t, ExitUndecided, code)
	assert.Contains(t, why, "no verdict of shop")

	var b strings.Builder
	require.NoError(t, CheckSummary([]Stack{{Name: "shop", Behaviours: []StackBehaviour{broke}}}, "shop")(&b))
	assert.True(t, strings.HasSuffix(b.String(), "labcheck: FAIL: shop failed a requirement (silent connections: requires 2, stalls at 2 silent connections); exit 1\n"), b.String())
}

// Every report says a check's verdict in the same word.
func TestStackVerdict(t *testing.T) {
	held := StackBehaviour{Pass: true}
	broke := StackBehaviour{}
	unknown := StackBehaviour{NoData: true}
	assert.Equal(t, VerdictPass, Stack{Pass: true, Behaviours: []StackBehaviour{held}}.Verdict())
	assert.Equal(t, VerdictFail, Stack{Behaviours: []StackBehaviour{held, broke}}.Verdict())
	assert.Equal(t, VerdictExpected, Stack{ExpectFails: true, Behaviours: []StackBehaviour{broke}}.Verdict())
	assert.Equal(t, VerdictUndecided, Stack{Behaviours: []StackBehaviour{held, unknown}}.Verdict())
	assert.Equal(t, VerdictUndecided, Stack{ExpectFails: true, Behaviours: []StackBehaviour{unknown}}.Verdict(), "an example that could not be measured did not fail as meant to")
}
