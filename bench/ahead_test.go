package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
)

// TestPodsAhead runs two short runs of direct-0dl, the second declared
// with Lab.Then. Its pod must be asked for after the first run's load
// window ended (never during it: that is the fault this guards) and
// before the second run began (or nothing was gained), and both runs must
// be valid. The first run, declared by nobody, opens its pod in place.
//
// The runs go without the safety stop and its redo rule: a discarded
// attempt's redo opens its pod in place (the pod ahead went to the
// discarded attempt), so a client stall in run 2 would fail the test for
// no fault of the pods ahead (a CI run of 2026-12-04: lag-second 7.9 ms).
// Nothing here reads a latency.
func TestPodsAhead(t *testing.T) {
	c := engine.ArticleA[0]
	require.Equal(t, "direct-0dl", c.ID)
	c.ID, c.FastRequests = "ahead-direct-0dl", 24
	dir := t.TempDir()
	l := *lab
	l.Reports, l.Journal, l.Safety = engine.NewReports(dir, &env), nil, nil

	var recs [2]engine.Record
	for k := 1; k <= 2; k++ {
		if k == 1 {
			l.Then(c, 2)
		}
		r, err := l.RunA(t, c, k)
		require.NoError(t, err)
		assert.True(t, r.Valid, r.Invalid)
		b, err := os.ReadFile(filepath.Join(dir, "raw", fmt.Sprintf("%s-run%d.json", c.ID, k)))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &recs[k-1]))
	}
	first, second := recs[0], recs[1]
	windowEnd := time.Unix(0, first.Load.StartUnixNano).Add(first.Load.Elapsed)
	assert.False(t, first.PodOpened.Before(first.Started), "run 1 opened its own pod")
	assert.True(t, second.PodOpened.After(windowEnd), "run 2's pod was asked for %v before run 1's window ended",
		windowEnd.Sub(second.PodOpened))
	assert.True(t, second.PodOpened.Before(second.Started), "run 2's pod was not opened ahead")
	t.Logf("run 2's pod asked for %v after run 1's window, %v before run 2 began; pod phase %.3f s (run 1: %.3f s)",
		second.PodOpened.Sub(windowEnd).Round(time.Millisecond), second.Started.Sub(second.PodOpened).Round(time.Millisecond),
		second.Phases.PodS, first.Phases.PodS)
}
