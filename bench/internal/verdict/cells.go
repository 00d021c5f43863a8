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
	// ExpectBounded is the app's memory growing less than
	// BoundedGrowthMiB over the window: backpressure held the server's
	// unsent messages to its transport's buffers. ExpectUnbounded is it
	// growing more than UnboundedGrowthMiB: the server queued what its slow
	// consumers had not read, with no bound but what they leave unread.
	ExpectBounded   = "bounded"
	ExpectUnbounded = "unbounded"
	// ExpectUnprotected is /fast p95 over ProtectedMs: slowed or stalled,
	// for cells whose p95 lands either side of StalledMs from run to run.
	ExpectUnprotected = "unprotected"
	// ExpectExhausted is the front door filling its temp directory (a
	// median spill of ExhaustedSpillMiB or more) or killed at its memory
	// limit, in every sound run.
	ExpectExhausted = "exhausted"
	// ExpectAppKilled is the app killed at its memory limit in every
	// sound run.
	ExpectAppKilled = "app-killed"
	// ExpectEnded is every slow client's request ended by the server
	// before its answer: an error status, a cut body, a reset, or the
	// connection closed before any header (a worker killed mid-request).
	ExpectEnded = "ended"
	// ExpectComplete is every slow client served whole.
	ExpectComplete = "complete"
)

// ExhaustedSpillMiB is the spill over which NGINX's temp directory
// (podspec.ProxyTmpfsBytes, 80 MiB, its config and pid file included)
// counts as full.
const ExhaustedSpillMiB = 75

// The memory lines of the columns that push more than the clients read
// (WebSockets, a server's own HTTP/2): their 2 consumers, or 4 streams,
// are pushed 16 MiB each, so a server that queues holds most of 32 MiB
// or more (and its copies), while backpressure holds a few transport
// buffers of 64 KiB.
const (
	BoundedGrowthMiB   = 8
	UnboundedGrowthMiB = 16
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
	// Workers is what the cell's clients did to the app's workers, as
	// the sampler sees them (report.Condition.AppWorkersHeld), asserted
	// beside Expect: WorkersHeld (every one held), WorkersFree (none), or
	// "" (not asserted: it varies from run to run).
	Workers string
	// Fast is what /fast did meanwhile, asserted beside Expect where
	// Expect is about the slow clients alone (ExpectEnded,
	// ExpectComplete): ExpectStalled (p95 over StalledMs), ExpectNoStall
	// (under it), or "" (not asserted).
	Fast string
	// Timeouts is whether Gunicorn logged a worker timeout (its arbiter
	// killed a worker) in every sound run (TimeoutsEvery) or in none
	// (TimeoutsNone), asserted beside Expect; "" is not asserted (not
	// Gunicorn). It tells a handler the server ended from one that broke.
	Timeouts string
	// SleptS, when above 0, is the least time the slow clients' answers
	// may take (their completion, seconds): a handler that did not sleep
	// answers at once, and would pass ExpectComplete.
	SleptS float64
}

// What a CellRule asserts about Gunicorn's worker timeouts.
const (
	TimeoutsEvery = "timeouts-logged"
	TimeoutsNone  = "no-timeout"
)

// What a CellRule asserts about the app's workers (CellRule.Workers).
const (
	WorkersHeldAll = "workers-held"
	WorkersFreeAll = "workers-free"
)

// The rows whose workers read a request (or its body) themselves, one at
// a time: Gunicorn's sync workers and uWSGI's, offload threads or not.
var blockingReaders = []string{syncRow, uwsgiGen, uwsgiGenOffload, uwsgiFile, uwsgiFileOffload}

var nginxPaths = []string{"nginx-off", nginxOn}

// h2Off are NGINX's HTTP/2 paths with buffering off: over TLS, and h2c
// by prior knowledge.
var h2Off = []string{nginxH2Off, nginxH2COff}

// bothProtocols are the paths whose entry point takes HTTP/2 beside
// HTTP/1.1 (by ALPN on TLS): /fast is timed over each (h2c takes HTTP/2
// alone, and /fast goes over it alone).
var bothProtocols = []string{nginxH2Off, "nginx-h2-on", directH2}

// sendsItself are the rows whose workers (or threads) send a response
// themselves, one at a time each: Gunicorn's sync workers, gthread's 4
// threads, and uWSGI's workers but for a file its offload threads take.
var sendsItself = []string{syncRow, gthreadRow, uwsgiGen, uwsgiGenOffload, uwsgiFile}

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
	{Column: slowUpload, Paths: []string{direct, reqbufOff}, Rows: []string{modWSGIRow}, Expect: ExpectStalled,
		Why: "each of mod_wsgi's 2 daemon processes runs one thread, which reads a body from Apache for as long as its client sends it; /fast waits for a daemon thread " +
			"(p95 7.40 to 7.42 s directly and behind NGINX with request buffering off, 2 runs of each)"},
	{Column: slowUpload, Rows: []string{daphneRow}, Expect: ExpectUnprotected,
		Why: "Daphne's one process spools each body past 100 KB into a temporary file (Twisted's request content) and then feeds it to the app through its ASGI queue, " +
			"all on its quarter core: /fast waits for the CPU on every path, NGINX's request buffering included (p95 77 to 176 ms over 2 runs of each of the 4 paths, the bodies in /dev/shm; " +
			"in the app's 32 MiB /tmp two bodies filled it, and Daphne answered 500)"},
	{Column: slowUpload, Rows: []string{eventletRow}, Expect: ExpectNoStall,
		Why: "a green thread of eventlet's hub waits for each body (or NGINX hands it over whole) and the rest serve /fast, but /fast's p95 under eventlet lands either side of the protected line from run to run " +
			"(2.1 to 16.9 ms on every path, 2 runs of each under Gunicorn 23.0.0 and 20.1.0)"},
	{Column: slowHeaders, Rows: []string{eventletRow}, Expect: ExpectNoStall,
		Why: "eventlet closes each slow header after Gunicorn's --keep-alive, as gevent does, or NGINX holds it; /fast's p95 under eventlet lands either side of the protected line from run to run " +
			"(directly 6.7 to 15.0 ms, behind NGINX 2.8 to 6.6 ms, 2 runs of each under Gunicorn 23.0.0 and 20.1.0)"},
	{Column: silent, Rows: []string{eventletRow}, Expect: ExpectNoStall,
		Why: "eventlet closes each silent connection after Gunicorn's --keep-alive, or NGINX holds it; /fast's p95 under eventlet lands either side of the protected line from run to run, " +
			"with nothing reaching it behind NGINX too (2.9 to 15.0 ms, 2 runs of each path)"},
	{Column: slowUpload, Paths: []string{direct}, Rows: []string{hypercornRow}, Expect: ExpectNoStall,
		Why: "a coroutine waits for each body and the rest serve /fast (p95 3.7 to 5.0 ms, 2 runs); serving FastAPI, whose Starlette reads each chunk in Python on the quarter core, " +
			"3.2 to 9.4 ms, near the protected line: the stall line is the verdict the framework cell shares"},
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
	{Column: h2SlowRead, Paths: []string{directH2}, Expect: ExpectUnbounded,
		Why: "Hypercorn serving the 4 slow streams of 16 MiB over its own HTTP/2 grew 63.9 to 88.8 MiB (peak 131 to 144 MiB of its 256) in each of 3 runs, against the line of 16: " +
			"about the streams' whole bodies; behind NGINX's HTTP/2, each stream an HTTP/1.1 request to it, 0.3 to 1.5 MiB. At article A's 128 MiB it sat at its limit (growth 73.1 to 74.2 MiB). " +
			"/fast ran 69 to 205 ms at p95 beside it (Intel Xeon). On an AMD EPYC it grew 78.2 to 98.6 MiB and took 14 to 22 s to serve the 4 streams, /fast at 90 to 671 ms, " +
			"with or without /fast's HTTP/2 series beside it (9 runs; 501 to 638 ms over HTTP/2)"},
	{Column: h2SlowRead, Paths: h2Off, Rows: sendsItself, Expect: ExpectStalled,
		Why: "NGINX forwards each HTTP/2 stream as its own HTTP/1.1 request and, with buffering off, reads each response only as fast as its stream's window returns: 2 connections of 2 streams hold 4 workers " +
			"(or gthread's 4 threads) in their sends; /fast waits behind them (p95 5.36 to 12.7 s over 3 runs of each of the 6 rows, against the stall line of 1 s)",
		Workers: WorkersHeldAll},
	{Column: h2SlowRead, Paths: h2Off, Expect: ExpectNoStall,
		Why: "a greenlet, a coroutine or uWSGI's offload thread waits on each stream's response, and the rest serve /fast (p95 3.6 to 4.6 ms over 3 runs; " +
			"with /fast over HTTP/2 beside it, 3.4 to 9.1 ms, and 5.0 to 28.4 ms over HTTP/2, h2c's cells included)"},
	{Column: h2SlowRead, Expect: ExpectNoStall,
		Why: "NGINX takes each stream's 16 MiB whole into its temp directory (64 MiB for the 4) and feeds the windows itself: the workers are free in under a second " +
			"(p95 4.6 to 137 ms over 3 runs of every row, against the stall line of 1 s; with /fast over HTTP/2 beside it, 3.1 to 32.5 ms, and 4.6 to 33.6 ms over HTTP/2)",
		Workers: WorkersFreeAll},
	{Column: h2ManyStreams, Paths: h2Off, Rows: sendsItself, Expect: ExpectStalled,
		Why: "one connection's 128 streams are 128 upstream requests, none of whose bodies NGINX may send on (a window of 0) nor, with buffering off, read on: every worker or thread is held in its send " +
			"with the rest queued behind it (p95 9.05 to 11.4 s over 3 runs of each of the 6 rows; 9.04 to 11.4 s again with /fast over HTTP/2 beside it, 9.13 to 11.4 s over HTTP/2)",
		Workers: WorkersHeldAll},
	{Column: h2ManyStreams, Paths: []string{directH2}, Expect: ExpectAppKilled,
		Why: "one connection of Hypercorn's 100 streams (h2_max_concurrent_streams), a window of 0, took Hypercorn to its 128 MiB limit and the OOM killer in each of 3 runs, " +
			"every stream reset with it; /fast ran 1.3 to 4.8 s at p95 meanwhile"},
	{Column: h2ManyStreams, Paths: h2Off, Rows: []string{hypercornRow}, Expect: ExpectUnprotected,
		Why: "Hypercorn takes all 128 upstream requests and its quarter core serves their first blocks, its memory up 13.5 to 19.5 MiB, before /fast gets a turn " +
			"(p95 25 ms to 3.0 s over 3 runs, either side of the stall line; 449 ms to 3.4 s with /fast over HTTP/2 beside it)"},
	{Column: h2ManyStreams, Paths: h2Off, Rows: []string{geventRow}, Expect: ExpectUnprotected,
		Why: "gevent takes all 128 requests and its quarter core fills 128 sockets with their first half MiB each before /fast gets a turn (p95 0.12 to 1.86 s over 3 runs, either side of the stall line; " +
			"0.89 to 3.8 s with /fast over HTTP/2 beside it, or over h2c)"},
	{Column: h2ManyStreams, Paths: h2Off, Expect: ExpectNoStall,
		Why: "a coroutine or uWSGI's offload thread waits on each held response, and the rest serve /fast (p95 3.2 to 9.2 ms over 3 runs; with /fast over HTTP/2 beside it, 4.5 to 17 ms " +
			"but one run of Gunicorn's Uvicorn worker at 672 ms, its median 16.6 ms)"},
	{Column: h2ManyStreams, Expect: ExpectExhausted,
		Why: "with buffering on, NGINX reads every stream's 16 MiB into its temp directory as fast as the server writes it, for a client that reads none: one connection fills the 80 MiB directory " +
			"(every run: 79.7 to 80.0 MiB) and takes NGINX to its 96 MiB memory limit, which the tmpfs counts; it then resets the streams it has no room for (29 to 122 of 128), " +
			"and the OOM killer ended NGINX in all 3 runs behind uWSGI's offloaded files; /fast ran 50 ms to 8.9 s at p95, no verdict either way"},
	{Column: wsSlowConsumer, Rows: []string{daphneRow}, Expect: ExpectUnbounded,
		Why: "Daphne's send() hands each message to autobahn and Twisted's transport, which queue it and return: the app pushes both consumers' 16 MiB in under 0.1 s, and Daphne holds what they have not read in its memory " +
			"(growth 31.5 to 47.2 MiB for 32 MiB pushed over 3 runs, directly and behind NGINX alike, against the line of 16): no backpressure, so a slower or a stalled consumer costs its whole backlog (django/daphne#170)"},
	{Column: wsSlowConsumer, Expect: ExpectBounded,
		Why: "the server's send() waits while its transport holds more than its high-water mark (websockets' and wsproto's drain), or blocks its greenlet in sendall (gevent-websocket), " +
			"so the app pushes at the consumer's pace (write 3.3 to 6.6 s of its 8 s) " +
			"and the memory stays within a few buffers (growth 0 to 2.7 MiB over 3 runs of each of the 8 cells, against the line of 8); NGINX relays the upgraded connection through its small buffers and passes the backpressure on"},
	{Column: outliveTimeout, Paths: []string{direct}, Rows: []string{syncRow}, Expect: ExpectCut,
		Why: "the sync worker blocked in its send never notifies the arbiter, which kills it at --timeout"},
	{Column: outliveTimeout, Expect: ExpectProtected,
		Why: "the worker notifies the arbiter from its main loop while a thread or coroutine sends (directly), or NGINX takes the body at once: the download completes"},
	{Column: hang, Rows: []string{syncRow}, Expect: ExpectEnded, Fast: ExpectStalled, Timeouts: TimeoutsEvery,
		Why: "each sync worker sleeps in its handler and never notifies the arbiter, which aborts it at --timeout 5: its handler answers 500 as it exits (after 5.8 to 5.9 s), " +
			"and /fast, waiting for the 2 workers meanwhile, stalls (p95 5.58 to 5.82 s over 9 runs, 5.6 times the stall line at least)"},
	{Column: hang, Rows: []string{uwsgiGen}, Expect: ExpectEnded, Fast: ExpectStalled,
		Why: "uWSGI's master kills each worker whose request has run 5 s (--harakiri 5): the client's connection closes before any header, " +
			"and /fast, waiting for the 2 workers meanwhile, stalls (p95 6.23 to 7.27 s over 6 runs)"},
	{Column: hang, Rows: []string{gunicornUvicorn}, Expect: ExpectEnded, Timeouts: TimeoutsEvery,
		Why: "time.sleep blocks the Uvicorn worker's event loop, and with it the task that notifies the arbiter, which kills the worker at --timeout 5: the connection closes before any header. " +
			"/fast is not asserted: a worker's loop may accept both hung requests before it blocks, and the other worker then serves /fast (p95 1.0 to 1.3 ms in 3 runs of 9, 4.5 to 5.8 s in the other 6)"},
	{Column: hang, Rows: []string{gthreadRow, geventRow}, Expect: ExpectComplete, Fast: ExpectNoStall, Timeouts: TimeoutsNone, SleptS: 9.5,
		Why: "gthread's main thread and gevent's hub keep notifying the arbiter while a thread or a greenlet sleeps (gevent's time.sleep yields), so no worker is killed: " +
			"each hung request is answered whole after its 10 s (10.03 to 10.05 s; the line is 9.5), and /fast is served meanwhile (p95 1.59 to 6.59 ms over 6 runs of each)"},
}

// RuleFor is the first rule of CellRules that matches a cell.
func RuleFor(col, row, path string) (CellRule, bool) { return firstRule(CellRules, col, row, path) }

// firstRule is the first of rules that matches a cell.
func firstRule(rules []CellRule, col, row, path string) (CellRule, bool) {
	for _, r := range rules {
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
	case ExpectUnprotected:
		v.Check = Above(id, P95, ProtectedMs)
	case ExpectExhausted:
		v.Unit, v.Check = "MiB", ProxyExhausted(id, ExhaustedSpillMiB)
	case ExpectBounded:
		v.Unit, v.Check = "MiB", Below(id, AppMemGrowth, BoundedGrowthMiB)
	case ExpectUnbounded:
		v.Unit, v.Check = "MiB", Above(id, AppMemGrowth, UnboundedGrowthMiB)
	case ExpectAppKilled:
		v.Unit, v.Check = "share", AppKilled(id)
	case ExpectEnded:
		v.Unit, v.Check = "share", Outcomes(id, "status", "truncated", "reset", "refused")
	case ExpectComplete:
		v.Unit, v.Check = "share", Outcomes(id, "complete")
	default:
		panic("verdict: CellRule expects " + r.Expect)
	}
	return v
}

// Companions are the verdicts beside CellVerdict(r, …) on the same cell:
// what r says of the app's workers (CellRule.Workers), and, on a path
// whose entry point speaks HTTP/2, /fast's HTTP/2 series on the same side
// of the stall line as its HTTP/1.1 one, where r draws that line
// (ExpectStalled, ExpectNoStall): NGINX forwards both protocols' requests
// to the same upstream workers, and a server speaking HTTP/2 itself
// schedules both on its one loop.
func Companions(r CellRule, row, path, id string) []Verdict {
	base := strings.TrimPrefix(id, "matrix-")
	where := fmt.Sprintf("%s %s under %s", row, pathText(path), r.Column)
	var vs []Verdict
	switch r.Workers {
	case WorkersHeldAll:
		vs = append(vs, Verdict{ID: base + "-" + WorkersHeldAll, Kind: Lab, Unit: "workers", Check: Below(id, WorkersFree, 0.5),
			Text: where + ": every app worker held, waiting to write to NGINX, for at least a quarter of the window (" + heldWhy + ")"})
	case WorkersFreeAll:
		vs = append(vs, Verdict{ID: base + "-" + WorkersFreeAll, Kind: Lab, Unit: "workers", Check: Below(id, WorkersHeld, 0.5),
			Text: where + ": no app worker held for a quarter of the window (" + heldWhy + ")"})
	}
	switch r.Timeouts {
	case TimeoutsEvery:
		vs = append(vs, Verdict{ID: base + "-" + TimeoutsEvery, Kind: Lab, Unit: "share", Check: Between(id, WorkerTimeoutRuns, 1, 1),
			Text: where + ": Gunicorn's arbiter killed a worker (WORKER TIMEOUT) in every run"})
	case TimeoutsNone:
		vs = append(vs, Verdict{ID: base + "-" + TimeoutsNone, Kind: Lab, Unit: "share", Check: Between(id, WorkerTimeoutRuns, 0, 0),
			Text: where + ": Gunicorn's arbiter killed no worker in any run"})
	}
	if r.SleptS > 0 {
		vs = append(vs, Verdict{ID: base + "-answered-after-the-sleep", Kind: Lab, Unit: "s", Check: Above(id, CompletionS, r.SleptS),
			Text: where + ": each hung request was answered only after its handler's sleep"})
	}
	switch r.Fast {
	case ExpectStalled:
		// Over the sound runs: a run whose slow clients the server
		// ended is never valid.
		vs = append(vs, Verdict{ID: base + "-fast-stalled", Kind: Lab, Unit: "ms", Check: Above(id, P95Sound, StalledMs),
			Text: where + ": /fast stalls meanwhile, waiting for the workers the slow clients hold"})
	case ExpectNoStall:
		vs = append(vs, Verdict{ID: base + "-fast-no-stall", Kind: Lab, Unit: "ms", Check: Below(id, P95Sound, StalledMs),
			Text: where + ": /fast stays under the stall line meanwhile"})
	}
	if slices.Contains(bothProtocols, path) {
		switch r.Expect {
		case ExpectStalled:
			vs = append(vs, Verdict{ID: base + "-stalled-over-h2", Kind: Lab, Unit: "ms", Check: Above(id, P95H2, StalledMs),
				Text: where + ": /fast over HTTP/2 stalls as over HTTP/1.1, its requests waiting for the same workers"})
		case ExpectNoStall:
			vs = append(vs, Verdict{ID: base + "-no-stall-over-h2", Kind: Lab, Unit: "ms", Check: Below(id, P95H2, StalledMs),
				Text: where + ": /fast over HTTP/2 stays under the stall line as over HTTP/1.1"})
		}
	}
	return vs
}

// heldWhy is the held-worker line's justification (engine.WorkerHeldShare).
const heldWhy = "the line is 0.25 of the samples; over 3 runs of every such cell, held workers spent 0.69 to 0.98 of theirs waiting to write behind NGINX's HTTP/2 or h2c with buffering off, " +
	"free ones at most 0.07 under slow readers with buffering on"

func pathText(path string) string {
	switch path {
	case direct:
		return "directly"
	case directTLS:
		return "directly over its own TLS"
	case directH2:
		return "directly over its own HTTP/2"
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

// EveryMessage is the verdict that the slow WebSocket consumers of the
// cell measured by condition id got every message, whole and in order,
// in every sound run: the memory verdicts read valid runs only, and a
// run that lost a message is never valid, so this one says none did.
func EveryMessage(row, path, id string) Verdict {
	return Verdict{ID: strings.TrimPrefix(id, "matrix-") + "-every-message", Kind: Lab, Unit: "share", Check: Outcomes(id, "complete"),
		Text: fmt.Sprintf("%s %s under slow WebSocket consumers: every consumer got all its messages, in order, in every sound run", row, pathText(path))}
}
