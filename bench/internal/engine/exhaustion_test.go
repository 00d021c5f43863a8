package engine

import (
	"slices"
	"strings"
	"testing"
	"time"
	"wsgilab/bench/internal/load"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExhaustionTable: the full profile runs every verdict's cells; ci the
// two make test asserts (past the limit, the full temp directory) and the
// cell the model is fitted on; every cell is valid, its slow readers
// sized as the table's docs say.
func TestExhaustionTable(t *testing.T) {
	require.NoError(t, ValidateAll(ExhaustionTable))
	for profile, p := range Plans {
		planned := slices.Concat(p.Conditions, p.Exhaustion)
		var ran, skipped []string
		for _, v := range TableExhaustion.Verdicts {
			all := true
			for _, id := range v.Check.Needs() {
				all = all && slices.ContainsFunc(planned, func(c Condition) bool { return c.ID == id })
			}
			if all {
				ran = append(ran, v.ID)
			} else {
				skipped = append(skipped, v.ID)
			}
		}
		if profile == "full" {
			assert.Empty(t, skipped, "full runs every exhaustion verdict")
			continue
		}
		assert.Equal(t, []string{"temp-limit-below-protected", "temp-limit-at-protected", "temp-model-predicts-the-spill",
			"nginx-worker-connections-caps-held", "gevent-worker-connections-stalls", "uvicorn-limit-concurrency-answers-503", "uvicorn-default-serves-beside-silent-connections",
			"uvicorn-backlog-drops-a-burst", "uvicorn-default-backlog-takes-the-burst"}, skipped, profile)
		assert.Len(t, ran, 7, profile)
	}
	past := ExhaustionTable[slices.IndexFunc(ExhaustionTable, func(c Condition) bool { return c.ID == TempLimitID(TempLimitPast) })]
	assert.Greater(t, float64(past.BodyBytes), TempModel.MaxTempBytes, "the cell past the limit is past it")
	full := ExhaustionTable[len(ExhaustionTable)-1]
	assert.Equal(t, FullTempID(FullTempReaders), full.ID)
	assert.Greater(t, float64(full.Downloads)*float64(full.BodyBytes-4<<20), TempModel.RoomBytes,
		"even if the path to the client held 4 MiB each, the readers' spills outgrow the temp directory")
	assert.Equal(t, 16.0, TempModel.MaxTempBytes/float64(past.ReadRate), "past the limit a worker is held 16 s at least")
}

// TestScaleTable: every protecting row steps from 16 to 1,024 slow mobile
// readers and from 16 to 10,000 silent and idle connections, each step a
// valid condition that may exhaust memory and whose load is bounded in
// time; make test's step is one of them.
func TestScaleTable(t *testing.T) {
	cs := ScaleTable()
	require.NoError(t, ValidateAll(cs))
	assert.Len(t, cs, len(ScaleRows)*(len(ScaleSteps)+2*len(ConnSteps)))
	var rows []string
	for _, r := range ScaleRows {
		rows = append(rows, r.Row.ID+"@"+r.Path.ID)
	}
	assert.Equal(t, []string{"gunicorn-sync-2@nginx-on", "gunicorn-sync-2@caddy-buffered", "gunicorn-sync-2@lighttpd",
		"gunicorn-sync-2@varnish", "gunicorn-gevent-2@direct", "gunicorn-uvicorn-2@direct", "uvicorn-2@direct",
		"uwsgi-2-file-offload-2@direct"}, rows)
	assert.Equal(t, []int{16, 64, 256, 1024, 4096, 10000}, ConnSteps)
	for _, c := range cs {
		assert.True(t, c.MayExhaust, c.ID)
		s := c.Load("http://127.0.0.1:8080", "x")
		require.NoError(t, s.Validate(), c.ID)
		if strings.HasPrefix(c.ID, ScaleRead.ID+"-") {
			assert.Equal(t, Mobile, c.TCP, c.ID)
			assert.EqualValues(t, ScaleBodyBytes, c.BodyBytes, c.ID)
			assert.LessOrEqual(t, float64(c.BodyBytes)/c.ReadRate, 30.0, "%s: a reader reads its body in about 30 s at most", c.ID)
			continue
		}
		// A connection step: every connection is open before /fast starts
		// and held past its last request.
		assert.True(t, load.Holds(c.SlowKind), c.ID)
		last := s.FastOffset + time.Duration(s.FastCount-1)*time.Second/time.Duration(s.FastRate)
		assert.Greater(t, s.FastOffset, s.Ramp(), c.ID)
		assert.Greater(t, s.Ramp()+s.HoldFor, last, "%s: the last connection is held past /fast's last request", c.ID)
		assert.LessOrEqual(t, (s.Ramp() + s.HoldFor).Seconds(), 30.0, "%s: a run's load ends within about 30 s", c.ID)
		assert.Greater(t, s.HoldFor, last, "%s: the first connection too", c.ID)
		assert.EqualValues(t, ConnClientMemory, c.Pod("x").Client.Memory, c.ID)
	}
	ci := ScaleCIStep()
	assert.True(t, slices.ContainsFunc(cs, func(c Condition) bool { return c.ID == ci.ID && c.sameCell(ci) }), ci.ID)
	assert.Equal(t, "scale-read-uvicorn-2-direct-256", ci.ID)
	assert.Equal(t, 16, MatrixStepLimit, "the matrix's own capacity steps stop where the scale column starts")
}

// TestLimitTable: each connection-limit cell moves one limit of a
// protecting setup, under the silent column's 1,024 connections, and is
// read against a cell the full profile also runs.
func TestLimitTable(t *testing.T) {
	require.NoError(t, ValidateAll(LimitTable))
	full := slices.Concat(Plans["full"].Exhaustion)
	for _, l := range LimitCells {
		c := l.Condition
		assert.Equal(t, load.KindSilent, c.SlowKind, c.ID)
		assert.Equal(t, LimitConns, c.Downloads, c.ID)
		assert.NotEmpty(t, l.Moved, c.ID)
		assert.True(t, slices.ContainsFunc(full, func(o Condition) bool { return o.ID == l.Against }), "%s against %s", c.ID, l.Against)
		assert.True(t, slices.ContainsFunc(full, func(o Condition) bool { return o.ID == c.ID }), c.ID)
	}
	byID := map[string]Condition{}
	for _, l := range LimitCells {
		byID[l.Condition.ID] = l.Condition
	}
	assert.Contains(t, byID[LimitUvicornConcurrencyID].Server.Cmd, "--limit-concurrency")
	assert.Contains(t, byID[LimitGeventID].Server.Cmd, "--worker-connections")
	assert.Zero(t, byID[LimitUvicornBacklogID].ConnectRate, "a burst")
	conf, err := byID[LimitNginxBacklogID].Path.Proxy.Nginx.Render()
	require.NoError(t, err)
	assert.Contains(t, conf, "worker_connections 256;")
	assert.Contains(t, conf, "backlog=16;")
}
