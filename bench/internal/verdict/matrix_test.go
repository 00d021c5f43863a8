package verdict

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// cellSummary is a 2-download cell of 1 run with p95 and nothing failed.
func cellSummary(id string, p95 float64) report.Condition {
	return report.Condition{ID: id, Downloads: 2, RunsTotal: 1, RunsSound: 1, RunsValid: 1, P95Ms: p95, P95MsRuns: []float64{p95},
		RequestsOK: 72, RequestsTotal: 72, DownloadsComplete: 2, DownloadsTotal: 2, WriteS: 6.6, CompletionS: 8}
}

func TestClass(t *testing.T) {
	assert.Equal(t, report.ClassProtected, Class(cellSummary("x", 1.5)))
	assert.Equal(t, report.ClassSlowed, Class(cellSummary("x", 10)), "10 ms is not under 10 ms")
	assert.Equal(t, report.ClassStalled, Class(cellSummary("x", 5960)))
	truncated := cellSummary("x", 1.5)
	truncated.DownloadsComplete, truncated.RunsValid = 1, 0
	assert.Equal(t, report.ClassFailed, Class(truncated), "a slow client cut short is a failure whatever the p95")
	failed := cellSummary("x", 1.5)
	failed.RequestsOK = 71
	assert.Equal(t, report.ClassFailed, Class(failed))
	none := report.Condition{ID: "x", RunsTotal: 1}
	assert.Equal(t, report.ClassNoData, Class(none))
	missing := cellSummary("x", 1.5)
	missing.DownloadsTotal, missing.DownloadsComplete = 1, 1
	assert.Equal(t, report.ClassNoData, Class(missing), "a run whose slow clients did not all run says nothing")
	// HTTP/2: 2 connections of 2 streams keep 4 records a run.
	h2 := cellSummary("x", 11997)
	h2.Records, h2.DownloadsTotal, h2.DownloadsComplete = 2*h2.Downloads, 2*h2.DownloadsTotal, 2*h2.DownloadsComplete
	assert.Equal(t, report.ClassStalled, Class(h2), "a stream is a record")
	h2.Records = 0
	assert.Equal(t, report.ClassNoData, Class(h2), "counted as connections, the streams are too many")
}

// The protected check catches what it exists for: a cell whose p95 is
// low but whose slow client was truncated is not protected.
func TestProtectedCatchesATruncatedClient(t *testing.T) {
	ok := cellSummary("c", 1.5)
	cut := cellSummary("c", 1.5)
	cut.DownloadsComplete = 1
	for _, tc := range []struct {
		c     report.Condition
		holds bool
	}{{ok, true}, {cut, false}} {
		o, err := Protected("c").Eval(Data{Conditions: map[string]report.Condition{"c": tc.c}})
		require.NoError(t, err)
		assert.Equal(t, tc.holds, o.Holds, o.Threshold)
	}
	o, err := Stalls("c").Eval(Data{Conditions: map[string]report.Condition{"c": cellSummary("c", 5960)}})
	require.NoError(t, err)
	assert.True(t, o.Holds)
	_, err = Protected("c").Eval(Data{Conditions: map[string]report.Condition{"c": {ID: "c", RunsTotal: 1}}})
	assert.ErrorContains(t, err, "no sound run", "no data never passes")
}

func TestFirstStalled(t *testing.T) {
	ids, clients := []string{"a", "b", "c"}, []int{3, 4, 5}
	d := func(p95 ...float64) Data {
		m := map[string]report.Condition{}
		for i, id := range ids {
			m[id] = cellSummary(id, p95[i])
		}
		return Data{Conditions: m}
	}
	o, err := FirstStalled(ids, clients, 4).Eval(d(1.4, 5900, 5950))
	require.NoError(t, err)
	assert.True(t, o.Holds)
	assert.Equal(t, 4.0, o.Measured)

	o, _ = FirstStalled(ids, clients, 4).Eval(d(1.4, 1.6, 5950))
	assert.False(t, o.Holds, "a row that takes one more client than it declares fails")
	assert.Equal(t, 5.0, o.Measured)

	o, _ = FirstStalled(ids, clients, 4).Eval(d(1.4, 1.6, 1.5))
	assert.False(t, o.Holds)
	assert.Equal(t, -1.0, o.Measured, "never stalled")

	o, _ = FirstStalled(ids, clients, 4).Eval(d(12, 5900, 5950))
	assert.True(t, o.Holds, "a slowed step below is no stall")

	_, err = FirstStalled(ids, clients, 4).Eval(Data{Conditions: map[string]report.Condition{"a": cellSummary("a", 1)}})
	assert.ErrorContains(t, err, "b: no summary")
}

func TestMatrixVerdictsHoldOnTheMeasuredShape(t *testing.T) {
	cs := map[string]report.Condition{}
	for _, row := range MatrixRowIDs {
		for _, p := range []string{"direct", "nginx-off", "nginx-on"} {
			cs[MatrixCellID(row, p)] = cellSummary(MatrixCellID(row, p), 1.5)
		}
	}
	for _, row := range []string{syncRow, uwsgiGen, uwsgiGenOffload, uwsgiFile, modWSGIRow} {
		cs[MatrixCellID(row, "direct")] = cellSummary(MatrixCellID(row, "direct"), 5970)
	}
	// waitress's spill on its quarter core: slowed, not stalled.
	cs[MatrixCellID(waitressRow, "direct")] = cellSummary(MatrixCellID(waitressRow, "direct"), 60)
	for _, id := range []string{MatrixCellID(geventRow, "direct"), MatrixCellID(gunicornUvicorn, "direct"), MatrixCellID(uvicornRow, "direct")} {
		c := cs[id]
		c.AppWaitSites = []report.SiteShare{{Site: "epoll_wait/do_epoll_wait", Share: 0.96}, {Site: "running", Share: 0.04}}
		cs[id] = c
	}
	poll := []report.SiteShare{{Site: "poll/poll_schedule_timeout.constprop.0", Share: 0.72}, {Site: "epoll_wait/do_epoll_wait", Share: 0.28}}
	for _, row := range []string{uwsgiGenOffload, uwsgiFile} {
		c := cs[MatrixCellID(row, "direct")]
		c.AppWaitSites = poll
		cs[c.ID] = c
	}
	fo := cs[MatrixCellID(uwsgiFileOffload, "direct")]
	fo.WriteS = 0.001
	fo.AppWaitSites = []report.SiteShare{{Site: "epoll_wait/do_epoll_wait", Share: 1}}
	cs[fo.ID] = fo
	cs["direct-1dl"] = cellSummary("direct-1dl", 1.2)
	cs[CapacityStepID(gthreadRow, 3)] = cellSummary(CapacityStepID(gthreadRow, 3), 1.6)
	cs[CapacityStepID(gthreadRow, 4)] = cellSummary(CapacityStepID(gthreadRow, 4), 5900)
	require.NoError(t, Validate(Matrix))
	for _, c := range Evaluate(Matrix, Data{Conditions: cs}) {
		assert.Truef(t, c.Holds, "%s: %s (measured %g, %s)", c.ID, c.Note, c.Measured, c.Threshold)
	}
}

func TestWaitAt(t *testing.T) {
	c := report.Condition{RunsValid: 1, AppWaitSites: []report.SiteShare{{Site: "poll/poll_schedule_timeout.constprop.0", Share: 0.5},
		{Site: "epoll_wait/do_epoll_wait", Share: 0.3}, {Site: "sendto/wait_woken", Share: 0.2}}}
	v, err := WaitAt("poll", "sendto").of(c)
	require.NoError(t, err)
	assert.InDelta(t, 0.7, v, 1e-9)
	_, err = WaitAt("poll").of(report.Condition{RunsValid: 1})
	assert.ErrorContains(t, err, "no poll wait share from the sampler", "no sites never pass")
}

// The event-loop check catches what it exists for: workers that wait in a
// blocking send, as sync workers do, fail it.
func TestEventLoopCheckCatchesBlockingSends(t *testing.T) {
	v, ok := Find(Matrix, "async-workers-wait-in-their-loop")
	require.True(t, ok)
	cs := map[string]report.Condition{}
	for _, id := range v.Check.Needs() {
		c := cellSummary(id, 1.5)
		c.AppWaitSites = []report.SiteShare{{Site: "epoll_wait/do_epoll_wait", Share: 0.99}}
		cs[id] = c
	}
	o, err := v.Check.Eval(Data{Conditions: cs})
	require.NoError(t, err)
	assert.True(t, o.Holds)
	blocked := cs[MatrixCellID(uvicornRow, "direct")]
	blocked.AppWaitSites = []report.SiteShare{{Site: "sendto/wait_woken", Share: 0.72}, {Site: "pselect6/poll_schedule_timeout.constprop.0", Share: 0.28}}
	cs[blocked.ID] = blocked
	o, err = v.Check.Eval(Data{Conditions: cs})
	require.NoError(t, err)
	assert.False(t, o.Holds, "sync-like waits fail it")
	assert.Equal(t, 0.0, o.Measured)
}

func TestWaitAtKnowsArm64(t *testing.T) {
	c := report.Condition{RunsValid: 1, AppWaitSites: []report.SiteShare{{Site: "epoll_pwait/do_epoll_wait", Share: 0.9}, {Site: "ppoll/do_sys_poll", Share: 0.1}}}
	v, err := WaitAt(epollCalls...).of(c)
	require.NoError(t, err)
	assert.InDelta(t, 0.9, v, 1e-9)
	v, err = WaitAt(pollCalls...).of(c)
	require.NoError(t, err)
	assert.InDelta(t, 0.1, v, 1e-9)
}

// Behind NGINX buffering on, a row is held to the protected line, but
// Daphne and waitress, whose own CPU slows /fast there, to the stall
// line: 26.7 ms passes them and fails the others, and 1.2 s fails both.
func TestNginxOnBusyRows(t *testing.T) {
	cond := func(p95 float64) Data {
		return Data{Conditions: map[string]report.Condition{"c": cellSummary("c", p95)}}
	}
	for _, tc := range []struct {
		row   string
		p95   float64
		id    string
		holds bool
	}{
		{daphneRow, 26.7, "daphne-1-nginx-on-no-stall", true},
		{waitressRow, 36.4, "waitress-4-nginx-on-no-stall", true},
		{waitressRow, 1200, "waitress-4-nginx-on-no-stall", false},
		{syncRow, 26.7, "gunicorn-sync-2-nginx-on-protected", false},
		{syncRow, 2.4, "gunicorn-sync-2-nginx-on-protected", true},
	} {
		v := NginxOnProtected(tc.row, "c")
		assert.Equal(t, tc.id, v.ID)
		o, err := v.Check.Eval(cond(tc.p95))
		require.NoError(t, err)
		assert.Equal(t, tc.holds, o.Holds, "%s at %.1f ms", tc.row, tc.p95)
	}
}
