package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

func data(cs ...report.Condition) Data {
	m := map[string]report.Condition{}
	for _, c := range cs {
		m[c.ID] = c
	}
	return Data{Conditions: m}
}

// The outcome check catches a download that was not cut (the fault the
// timeout verdict exists for) and never passes on missing clients.
func TestOutcomesCatchAnUncutDownload(t *testing.T) {
	cut := report.Condition{ID: "c", Downloads: 1, RunsSound: 3, RunsTotal: 3, SlowOutcomes: map[string]int{"truncated": 2, "reset": 1}}
	o, err := Outcomes("c", "truncated", "reset").Eval(data(cut))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	assert.Equal(t, 1.0, o.Measured)

	whole := cut
	whole.SlowOutcomes = map[string]int{"truncated": 2, "complete": 1}
	o, err = Outcomes("c", "truncated", "reset").Eval(data(whole))
	require.NoError(t, err)
	assert.False(t, o.Holds, "one download of three completed")
	assert.InDelta(t, 2.0/3, o.Measured, 1e-9)

	short := cut
	short.SlowOutcomes = map[string]int{"truncated": 2}
	_, err = Outcomes("c", "truncated").Eval(data(short))
	assert.ErrorContains(t, err, "all its slow clients", "a run without its client says nothing")
	_, err = Outcomes("c", "complete").Eval(data(report.Condition{ID: "c", Downloads: 1, RunsTotal: 1}))
	assert.Error(t, err)
}

func TestWorkerTimeoutInEveryRun(t *testing.T) {
	c := report.Condition{ID: "c", RunsSound: 3, WorkerTimeouts: 3, RunsWorkerTimeout: 3}
	o, err := Between("c", WorkerTimeoutRuns, 1, 1).Eval(data(c))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	c.WorkerTimeouts, c.RunsWorkerTimeout = 3, 2
	o, err = Between("c", WorkerTimeoutRuns, 1, 1).Eval(data(c))
	require.NoError(t, err)
	assert.False(t, o.Holds, "a run without a logged timeout: the kill the verdict claims did not happen in it")
}

// The streaming checks catch a held stream and never pass on a stream
// that lost events.
func TestStreamMetrics(t *testing.T) {
	s := func(first, p95 float64, events int) report.Condition {
		return report.Condition{ID: "s", RunsSound: 1, RunsValid: 1,
			Stream: &report.Stream{Status: 200, Events: events, Expected: 50, DelayP95Ms: p95, FirstEventDelayMs: first}}
	}
	o, err := Below("s", EventDelayP95, PromptEventMs).Eval(data(s(0.3, 0.4, 50)))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	o, err = Below("s", EventDelayP95, PromptEventMs).Eval(data(s(4900, 4700, 50)))
	require.NoError(t, err)
	assert.False(t, o.Holds, "a held stream is not prompt")
	o, err = Above("s", FirstEventDelay, HeldEventMs).Eval(data(s(4900, 4700, 50)))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	_, err = Below("s", EventDelayP95, PromptEventMs).Eval(data(s(0.3, 0.4, 49)))
	assert.ErrorContains(t, err, "49 of 50 events")
	_, err = Below("s", EventDelayP95, PromptEventMs).Eval(data(report.Condition{ID: "s", RunsSound: 1}))
	assert.ErrorContains(t, err, "no event stream")
}

func TestCellID(t *testing.T) {
	assert.Equal(t, "direct-2dl", CellID("slow-read", syncRow, "direct"))
	assert.Equal(t, "matrix-silent-gunicorn-sync-2-direct", CellID("silent", syncRow, "direct"))
	require.NoError(t, Validate(SlowClients))
	require.NoError(t, Validate(Streaming))
}
