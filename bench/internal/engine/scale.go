package engine

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
)

// The scale column: hundreds of slow mobile readers against each setup
// that protected /fast from article A's two, stepped geometrically until
// the protection ends. Its bracket (the largest step held, the smallest
// broken) is each row's capacity under ScaleRead in matrix.json.

// Mobile is the TCP profile of the scale column: stock but for a 64 KiB
// send-buffer ceiling (tcp_wmem max). On loopback a segment is 64 KiB, and
// Linux sizes a new connection's send buffer from ten of them, so a server
// hands a MiB to a reader of 16 KiB/s at once and is never held by it. On
// a real network (segments of 1,448 bytes) a reader whose 16 KiB window
// limits the flight gets a send buffer of about 2 x 12 segments: tens of
// KiB. The ceiling gives loopback that. Measured: 384 KiB to 16 readers at
// 16 KiB/s held each Gunicorn sync worker 20.3 s under it, 0.5 ms without
// (reports/measurements.md).
var Mobile = TCPProfile{ID: "mobile", Rmem: podspec.DefaultTCPRmem, Wmem: "4096 16384 65536"}

// The scale column's readers: 384 KiB read at 16 KiB/s (24 s), so a
// run's load stays under about 30 s and 1,024 readers read 16 MiB/s in
// all.
const (
	ScaleBodyBytes = 384 << 10
	ScaleReadRate  = 16 << 10
	// ScaleClientCPUs is the client's quota at every step: the client
	// measured 0.03 to 0.05 core for 256 readers, and each step reports
	// its own CPU, lag and throttling.
	ScaleClientCPUs = 0.5
	// MaxScaleReaders is the last step.
	MaxScaleReaders = 1024
)

// ScaleSteps are the concurrent slow readers the column steps through,
// doubling from article A's largest load (MatrixStepLimit).
var ScaleSteps = []int{16, 32, 64, 128, 256, 512, MaxScaleReaders}

// ScaleRead is the scale column's slow reader.
var ScaleRead = ScaleColumn{Column: Column{ID: "scale-read", Clients: 256,
	Text: "slow mobile readers: 384 KiB downloads read at 16 KiB/s through an 8 KiB receive buffer, under the mobile TCP profile (a 64 KiB send-buffer ceiling)",
	Apply: func(c *Condition, n int) {
		c.Downloads, c.BodyBytes, c.ReadRate, c.TCP, c.ClientCPUs, c.MayExhaust = n, ScaleBodyBytes, ScaleReadRate, Mobile, ScaleClientCPUs, true
	}}, Steps: ScaleSteps}

// The connection columns: silent and idle keep-alive connections, up to
// 10,000, opened ConnRate a second and held 9.5 s after the last one
// opened, while /fast runs its 72 requests from then on.
const (
	// MaxHeldConns is the last step of the connection columns.
	MaxHeldConns = 10000
	// ConnRate is how many connections a second the client opens: 10,000
	// in 4 s, a pace every setup's accept loop keeps up with, so that a
	// step measures the connections held, not a SYN burst against the
	// listen backlog.
	ConnRate = 2500
	// IdleConnRate is the idle column's pace: each idle connection's one
	// request is served before it idles, and 2,500 a second were more
	// than Uvicorn's two workers (a quarter core) serve: at 10,000, 5,642
	// of the requests timed out. At 1,000 a second the ramp is 10 s
	// (load.MaxRamp); a setup that cannot serve that rate fails the step
	// by its throughput, and the step's outcomes say so (refused: a
	// request unanswered).
	IdleConnRate = 1000
	// ConnClientCPUs is the client's quota under the connection columns:
	// opening 4,000 connections a second that NGINX closed at once took
	// the whole of half a core (throttled 0.59 to 0.63 of the ramp's
	// periods).
	ConnClientCPUs = 1.0
	// ConnClientMemory is the client's memory limit under the connection
	// columns: a held connection costs it 12 KiB (heap and stack,
	// load.TestQuietConnectionsAreCheap), 120 MiB for 10,000.
	ConnClientMemory = 512 << 20
)

// ConnSteps are the connections the connection columns step through, by
// four from article A's largest load up to 10,000.
var ConnSteps = []int{16, 64, 256, 1024, 4096, MaxHeldConns}

// ScaleSilent and ScaleIdle are the connection columns: connections that
// never send a byte, and keep-alive connections idle after one request.
var (
	ScaleSilent = connColumn(load.KindSilent, ConnRate, "silent connections: connected, nothing sent, opened 2,500 a second and held 9.5 s after the last opened")
	ScaleIdle   = connColumn(load.KindIdle, IdleConnRate, "idle keep-alive connections: one request for /fast answered, then nothing sent, opened 1,000 a second and held 9.5 s after the last opened")
)

func connColumn(kind string, rate float64, text string) ScaleColumn {
	return ScaleColumn{Column: Column{ID: "scale-" + kind, Clients: 1024, Text: text,
		Apply: func(c *Condition, n int) {
			c.Downloads, c.SlowKind, c.ConnectRate, c.ClientCPUs, c.ClientMemory, c.MayExhaust = n, kind, rate, ConnClientCPUs, ConnClientMemory, true
		}}, Steps: ConnSteps}
}

// ScaleColumn is a column the scale table steps geometrically on every
// protecting setup: its condition ids are <column>-<row>-<path>-<n>.
type ScaleColumn struct {
	Column
	Steps []int
}

// ScaleColumns are the scale table's columns.
var ScaleColumns = []ScaleColumn{ScaleRead, ScaleSilent, ScaleIdle}

// ScaleRow is a setup the scale column steps: a matrix row on the path
// where it protected /fast from article A's slow readers.
type ScaleRow struct {
	Row  Row
	Path Path
}

// ScaleRows are the protecting setups: two sync workers behind NGINX
// buffering on and behind each front door that protected them from
// article A's readers (Caddy's buffer_responses, lighttpd at its
// default, Varnish), and directly the rows that declare no limit at
// article A's load (gevent, Gunicorn's Uvicorn worker, Uvicorn, uWSGI
// handing files to its offload threads).
var ScaleRows = func() []ScaleRow {
	var out []ScaleRow
	for _, p := range []Path{NginxOn, CaddyBuffered, Lighttpd, Varnish} {
		out = append(out, ScaleRow{MatrixRows[0], p})
	}
	for _, r := range MatrixRows {
		if r.Concurrency == 0 && r.Only == nil && r.Twin == "" {
			out = append(out, ScaleRow{r, Direct})
		}
	}
	return out
}()

// ScaleID is a scale step's condition id: <column>-<row>-<path>-<n>.
func ScaleID(col ScaleColumn, r ScaleRow, n int) string {
	return fmt.Sprintf("%s-%s-%s-%d", col.ID, r.Row.ID, r.Path.ID, n)
}

// Scale are the steps of row r under col.
func Scale(col ScaleColumn, r ScaleRow) []CapacityStep {
	var out []CapacityStep
	for _, n := range col.Steps {
		if c, ok := cell(ScaleID(col, r, n), col.Column, r.Row, r.Path, n); ok {
			out = append(out, CapacityStep{Row: r.Row.ID, Column: col.ID, Clients: n, Condition: c})
		}
	}
	return out
}

// ScaleTable are every column's steps, column by column, row by row.
func ScaleTable() []Condition {
	var out []Condition
	for _, col := range ScaleColumns {
		for _, r := range ScaleRows {
			for _, st := range Scale(col, r) {
				out = append(out, st.Condition)
			}
		}
	}
	return out
}

// ScaleCIReaders is the step make test runs, on ScaleCIRow.
const ScaleCIReaders = 256

// ScaleCIRow is the row make test steps once: Uvicorn's two workers,
// directly. At 256 slow mobile readers its /fast p95 was 1.44 to 1.51 ms
// (its max 2.4 to 4.8 ms); gevent's was 2.8 to 8.9 ms, too near the
// protected class's 10 ms to decide in one run (reports/measurements.md).
var ScaleCIRow = ScaleRows[slices.IndexFunc(ScaleRows, func(r ScaleRow) bool { return r.Row.ID == podspec.Uvicorn(2).ID })]

// ScaleCIStep is the step make test runs.
func ScaleCIStep() Condition {
	c, ok := cell(ScaleID(ScaleRead, ScaleCIRow, ScaleCIReaders), ScaleRead.Column, ScaleCIRow.Row, ScaleCIRow.Path, ScaleCIReaders)
	if !ok {
		panic("engine: the scale column skips " + ScaleCIRow.Row.ID)
	}
	return c
}
