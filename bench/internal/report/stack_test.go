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
