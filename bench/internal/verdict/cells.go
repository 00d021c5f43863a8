package verdict

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// What a cell of the four newer columns is asserted to show (CellRule).
const (
	ExpectProtected = report.ClassProtected
	ExpectStalled   = report.ClassStalled
	// ExpectNoStall is /fast p95 under StalledMs, nothing failed: for
	// cells whose p95 lands either side of ProtectedMs from run to run.
	ExpectNoStall = "no-stall"
	// ExpectCut is every slow client truncated or reset.
	ExpectCut = "cut"
)

// CellRule is what a set of cells of one column showed, with its
// mechanism: engine.MatrixVerdicts asserts it for every cell it matches
// (the first rule that matches wins) that no named verdict reads already.
type CellRule struct {
	Column string
	// Paths and Rows pick the cells; nil is every path or every row.
	Paths, Rows []string
	Expect      string
	Why         string
}

// The rows whose workers read a request (or its body) themselves, one at
// a time: Gunicorn's sync workers and uWSGI's, offload threads or not.
var blockingReaders = []string{syncRow, uwsgiGen, uwsgiGenOffload, uwsgiFile, uwsgiFileOffload}

var nginxPaths = []string{"nginx-off", nginxOn}

// CellRules are the newer columns' cells as measured (reports/measurements.md,
// "The resilience matrix, part 2"), each with the mechanism the sampler
// showed.
var CellRules = []CellRule{
	{Column: slowUpload, Paths: []string{"haproxy", "haproxy-bufreq"}, Rows: []string{syncRow}, Expect: ExpectStalled,
		Why: "HAProxy streams a request body to the server as it arrives; option http-buffer-request waits only for its first buffer (tune.bufsize, 16 KiB), " +
			"so each sync worker still reads a 16 MiB body for as long as its client sends it"},
	{Column: slowUpload, Paths: []string{"lighttpd"}, Rows: []string{syncRow}, Expect: ExpectNoStall,
		Why: "lighttpd takes each whole body into temp files (server.stream-request-body 0, its default) before it connects: the worker reads it in a burst"},
	{Column: slowHeaders, Paths: frontDoorPaths(), Expect: ExpectNoStall,
		Why: "the front door reads the header itself and connects upstream only once it is whole: the sync workers never see the client " +
			"(directly they stall at 8.9 s); /fast's p95 ran 2.1 to 18.7 ms over 3 runs of each door, either side of the protected line from run to run; " +
			"Varnish closes (or resets) them after its 5 s timeout_idle, the others hold them for the 9.5 s"},
	{Column: silent, Paths: frontDoorPaths(), Expect: ExpectNoStall,
		Why: "the front door holds the silent connection and never connects upstream: the sync workers never see it (directly they stall at 8.9 s); " +
			"/fast's p95 ran 1.6 to 20.2 ms over 3 runs of each door; Varnish closes them after its 5 s timeout_idle"},
	{Column: slowUpload, Paths: []string{direct, reqbufOff}, Rows: blockingReaders, Expect: ExpectStalled,
		Why: "each sync worker reads a body for as long as its client sends it (8 s), in recvfrom or poll; /fast waits to be accepted"},
	{Column: slowUpload, Paths: []string{reqbufOff}, Rows: []string{gthreadRow}, Expect: ExpectNoStall,
		Why: "2 of gthread's 4 threads read the streamed bodies; p95 6.5 ms, near the protected line"},
	{Column: slowUpload, Paths: []string{direct, reqbufOff}, Expect: ExpectProtected,
		Why: "a thread of 4, a greenlet or a coroutine waits for each body; the rest serve /fast"},
	{Column: slowUpload, Paths: nginxPaths, Expect: ExpectNoStall,
		Why: "NGINX buffers each body and hands it over whole: the app reads 16 MiB in a burst (0.06 to 0.75 s on its quarter core) in which /fast may wait for the CPU, never for the client"},
	{Column: slowHeaders, Paths: []string{direct}, Rows: blockingReaders, Expect: ExpectStalled,
		Why: "each sync worker takes a connection at its first byte and waits in recv for the rest of its header; /fast waits to be accepted"},
	{Column: silent, Paths: []string{direct}, Rows: []string{syncRow}, Expect: ExpectStalled,
		Why: "each sync worker accepts a silent connection and waits in recv for a request that never comes; /fast waits to be accepted"},
	{Column: silent, Paths: []string{direct}, Rows: blockingReaders, Expect: ExpectStalled,
		Why: "uWSGI's TCP_DEFER_ACCEPT (its 4 s socket timeout) keeps a silent connection from accept for about 7 s; then each worker waits in poll for it, and /fast stalls for the rest of the window"},
	{Column: slowHeaders, Paths: []string{direct}, Expect: ExpectProtected,
		Why: "gthread's idle connections wait in its poller and 2 of 4 threads take the slow headers; gevent and Uvicorn wait in their loop (gevent closes them after --keep-alive)"},
	{Column: silent, Paths: []string{direct}, Expect: ExpectProtected,
		Why: "a silent connection waits in gthread's poller or the event loop, taking no worker"},
	{Column: slowHeaders, Paths: nginxPaths, Expect: ExpectProtected,
		Why: "NGINX reads the header itself and connects upstream only once it is whole: the server never sees the client"},
	{Column: silent, Paths: nginxPaths, Expect: ExpectProtected,
		Why: "NGINX holds the silent connection and never connects upstream"},
	{Column: slowTLS, Paths: []string{directTLS}, Rows: blockingReaders, Expect: ExpectStalled,
		Why: "each sync worker accepts a connection and runs its TLS handshake itself, waiting in recv for a ClientHello that never ends; /fast waits to be accepted " +
			"(p95 8.89 to 8.94 s over 3 runs of each of the 5 rows, against the stall line of 1 s)"},
	{Column: slowTLS, Paths: []string{directTLS}, Expect: ExpectNoStall,
		Why: "a thread of gthread's 4, a greenlet or the event loop waits for each hello, and the rest serve /fast; /fast pays its own handshake on the server's quarter core " +
			"(p95 3.9 to 5.1 ms, gthread's 12.5 to 14.6 ms over 3 runs), so the stall line of 1 s, not the protected one, is the verdict"},
	{Column: slowTLS, Expect: ExpectNoStall,
		Why: "NGINX runs the handshake itself and connects upstream only once a request is whole: the server never sees the slow client; /fast pays a handshake on NGINX's 0.20 core " +
			"(p95 3.1 to 6.0 ms over 3 runs of every row, with buffering off as on, against the stall line of 1 s)"},
	{Column: outliveTimeout, Paths: []string{direct}, Rows: []string{syncRow}, Expect: ExpectCut,
		Why: "the sync worker blocked in its send never notifies the arbiter, which kills it at --timeout"},
	{Column: outliveTimeout, Expect: ExpectProtected,
		Why: "the worker notifies the arbiter from its main loop while a thread or coroutine sends (directly), or NGINX takes the body at once: the download completes"},
}

// RuleFor is the first rule of CellRules that matches a cell.
func RuleFor(col, row, path string) (CellRule, bool) {
	for _, r := range CellRules {
		if r.Column == col && (r.Paths == nil || slices.Contains(r.Paths, path)) && (r.Rows == nil || slices.Contains(r.Rows, row)) {
			return r, true
		}
	}
	return CellRule{}, false
}

// CellVerdict is rule r's verdict on the cell measured by condition id.
func CellVerdict(r CellRule, row, path, id string) Verdict {
	v := Verdict{ID: strings.TrimPrefix(id, "matrix-") + "-" + r.Expect, Kind: Lab, Unit: "ms",
		Text: fmt.Sprintf("%s %s under %s: %s", row, pathText(path), r.Column, r.Why)}
	switch r.Expect {
	case ExpectProtected:
		v.Check = Protected(id)
	case ExpectStalled:
		v.Check = Stalls(id)
	case ExpectNoStall:
		v.Check = Below(id, P95, StalledMs)
	case ExpectCut:
		v.Unit, v.Check = "share", Outcomes(id, "truncated", "reset")
	default:
		panic("verdict: CellRule expects " + r.Expect)
	}
	return v
}

func pathText(path string) string {
	switch path {
	case direct:
		return "directly"
	case directTLS:
		return "directly over its own TLS"
	}
	return "behind " + path
}

// frontDoorPaths are the paths of the FrontDoors table.
func frontDoorPaths() []string {
	var out []string
	for _, f := range FrontDoors {
		out = append(out, f.Path)
	}
	return out
}
