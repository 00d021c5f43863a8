package verdict

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func TestRuleFor(t *testing.T) {
	r, ok := RuleFor(slowUpload, uwsgiFileOffload, direct)
	require.True(t, ok)
	assert.Equal(t, ExpectStalled, r.Expect, "offload threads take no request body")
	r, _ = RuleFor(slowUpload, gthreadRow, reqbufOff)
	assert.Equal(t, ExpectNoStall, r.Expect, "the first matching rule wins")
	r, _ = RuleFor(silent, uvicornRow, "nginx-off")
	assert.Equal(t, ExpectProtected, r.Expect)
	_, ok = RuleFor("slow-read", syncRow, direct)
	assert.False(t, ok, "the slow readers have their own verdicts")
	// A server's own HTTP/2 has rules of its own, before every row's.
	r, _ = RuleFor(h2SlowRead, hypercornRow, directH2)
	assert.Equal(t, ExpectUnbounded, r.Expect)
	r, _ = RuleFor(h2ManyStreams, hypercornRow, directH2)
	assert.Equal(t, ExpectAppKilled, r.Expect)
	r, _ = RuleFor(h2ManyStreams, hypercornRow, nginxH2Off)
	assert.Equal(t, ExpectUnprotected, r.Expect)
	r, _ = RuleFor(h2SlowRead, hypercornRow, nginxH2Off)
	assert.Equal(t, ExpectNoStall, r.Expect)
}

// Each expectation's check catches the opposite outcome.
func TestCellVerdictCatchesTheOpposite(t *testing.T) {
	stalled, protected := cellSummary("c", 7370), cellSummary("c", 1.2)
	cut := report.Condition{ID: "c", Downloads: 1, RunsSound: 1, RunsTotal: 1, SlowOutcomes: map[string]int{"truncated": 1}}
	whole := report.Condition{ID: "c", Downloads: 1, RunsSound: 1, RunsTotal: 1, SlowOutcomes: map[string]int{"complete": 1}}
	for _, tc := range []struct {
		expect    string
		hold, not report.Condition
	}{
		{ExpectProtected, protected, stalled},
		{ExpectStalled, stalled, protected},
		{ExpectNoStall, cellSummary("c", 314), stalled},
		{ExpectCut, cut, whole},
		{ExpectUnprotected, cellSummary("c", 115), protected},
		{ExpectExhausted, spilled(79.8, 0, nil), spilled(63.7, 0, nil)},
		{ExpectExhausted, spilled(0, 1, []string{"proxy"}), spilled(79.8, 1, []string{"app"})},
		{ExpectBounded, grown(2.7), grown(31.5)},
		{ExpectUnbounded, grown(31.5), grown(2.7)},
		{ExpectAppKilled, spilled(0, 1, []string{"app"}), spilled(79.8, 0, nil)},
		{ExpectAppKilled, killedIn(3, 3), killedIn(2, 3)},
		{ExpectEnded, outcomes("status", "refused"), outcomes("refused", "complete")},
		{ExpectComplete, outcomes("complete", "complete"), outcomes("complete", "refused")},
	} {
		v := CellVerdict(CellRule{Column: silent, Expect: tc.expect, Why: "x"}, syncRow, direct, "c")
		o, err := v.Check.Eval(data(tc.hold))
		require.NoError(t, err, tc.expect)
		assert.True(t, o.Holds, tc.expect)
		o, err = v.Check.Eval(data(tc.not))
		require.NoError(t, err, tc.expect)
		assert.False(t, o.Holds, tc.expect)
	}
	assert.Equal(t, "silent-gunicorn-sync-2-direct-stalled",
		CellVerdict(CellRule{Column: silent, Expect: ExpectStalled}, syncRow, direct, "matrix-silent-gunicorn-sync-2-direct").ID)
}

// outcomes is a cell of 1 sound run whose 2 slow clients ended as os.
func outcomes(os ...string) report.Condition {
	c := report.Condition{ID: "c", Downloads: len(os), RunsSound: 1, RunsTotal: 1, SlowOutcomes: map[string]int{}}
	for _, o := range os {
		c.SlowOutcomes[o]++
	}
	return c
}

// A hang cell's rule asserts what /fast did and what Gunicorn's arbiter
// did beside what its clients got, and each companion catches the
// opposite: a handler that broke (an error before its sleep) or never
// slept fails them.
func TestHangCompanions(t *testing.T) {
	ended := func(p95, timeouts float64) report.Condition {
		c := outcomes("status", "status")
		c.RequestsTotal, c.RequestsOK, c.P95MsSound, c.RunsWorkerTimeout = 72, 72, p95, int(timeouts)
		return c
	}
	served := func(p95, completion float64, timeouts int) report.Condition {
		c := cellSummary("c", p95)
		c.P95MsSound, c.CompletionS, c.RunsWorkerTimeout = p95, completion, timeouts
		return c
	}
	byID := func(vs []Verdict) map[string]Verdict {
		m := map[string]Verdict{}
		for _, v := range vs {
			m[strings.TrimPrefix(v.ID, "c-")] = v
		}
		return m
	}
	holds := func(v Verdict, c report.Condition) bool {
		o, err := v.Check.Eval(data(c))
		require.NoError(t, err, v.ID)
		return o.Holds
	}
	r, ok := RuleFor(hang, syncRow, direct)
	require.True(t, ok)
	assert.Equal(t, ExpectEnded, r.Expect)
	vs := byID(Companions(r, syncRow, direct, "c"))
	require.Len(t, vs, 2)
	assert.True(t, holds(vs["fast-stalled"], ended(5700, 1)), "read over the sound runs: none of an ended cell's is valid")
	assert.False(t, holds(vs["fast-stalled"], ended(2, 1)))
	assert.True(t, holds(vs[TimeoutsEvery], ended(5700, 1)))
	assert.False(t, holds(vs[TimeoutsEvery], ended(5700, 0)), "a handler that broke before its sleep is no kill")

	r, _ = RuleFor(hang, gunicornUvicorn, direct)
	vs = byID(Companions(r, gunicornUvicorn, direct, "c"))
	require.Len(t, vs, 1, "Uvicorn's /fast lands either side: not asserted")
	assert.False(t, holds(vs[TimeoutsEvery], ended(2, 0)), "a /hang answered 404 is no kill")

	r, _ = RuleFor(hang, gthreadRow, direct)
	assert.Equal(t, ExpectComplete, r.Expect)
	vs = byID(Companions(r, gthreadRow, direct, "c"))
	require.Len(t, vs, 3)
	assert.True(t, holds(vs["fast-no-stall"], served(1.8, 10.03, 0)))
	assert.False(t, holds(vs["fast-no-stall"], served(5700, 10.03, 0)), "a stall fails the no-stall companion")
	assert.True(t, holds(vs["answered-after-the-sleep"], served(1.8, 10.03, 0)))
	assert.False(t, holds(vs["answered-after-the-sleep"], served(1.8, 0.01, 0)), "a handler that did not sleep")
	assert.False(t, holds(vs[TimeoutsNone], served(1.8, 10.03, 1)))

	_, ok = RuleFor(hang, "gunicorn-eventlet-2", direct)
	assert.False(t, ok, "a row new to the column gets no rule by default")
}

// spilled is a cell of 1 sound run that spilled mib (none, when it ended
// in an OOM kill of killed).
func spilled(mib float64, oom int, killed []string) report.Condition {
	c := report.Condition{ID: "c", Downloads: 1, RunsSound: 1, RunsTotal: 1, RunsOOM: oom, OOMKilled: killed}
	if oom == 0 {
		c.TempfilePeakMiBSoundLeast = &mib
	}
	return c
}

// killedIn is a cell whose app the OOM killer ended in oom of its sound
// runs.
func killedIn(oom, sound int) report.Condition {
	return report.Condition{ID: "c", Downloads: 1, RunsSound: sound, RunsTotal: sound, RunsOOM: oom, OOMKilled: []string{"app"}}
}

// grown is a cell whose app grew mib over its window.
func grown(mib float64) report.Condition {
	c := cellSummary("c", 2)
	c.AppMemoryGrowthMiB = &mib
	return c
}
