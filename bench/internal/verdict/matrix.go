package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"wsgilab/bench/internal/report"
)

// The resilience matrix's thresholds.
const (
	// ProtectedMs is the /fast p95 under which a cell is protected (with
	// no failed request and every slow client served as its kind expects).
	ProtectedMs = 10
	// StalledMs is the /fast p95 over which a cell stalls: /fast waited
	// for a slow client's transfer, not for CPU.
	StalledMs = 1000
)

// pollCalls and epollCalls are the syscalls of poll(2) and epoll_wait(2)
// on amd64 and arm64 (which has only the p-variants).
var (
	pollCalls  = []string{"poll", "ppoll"}
	epollCalls = []string{"epoll_wait", "epoll_pwait", "epoll_pwait2"}
)

// WaitAt is the share of the app workers' samples at wait sites whose
// syscall is one of syscalls (report.Condition.AppWaitSites): where the
// workers waited, from the wait-site sampler.
func WaitAt(syscalls ...string) Metric {
	name := strings.Join(syscalls, "/") + " wait share"
	// Wait sites are pooled over the runs, not a median: no bound is kept.
	return folded(sampled(name, func(c report.Condition) *float64 {
		if c.AppWaitSites == nil {
			return nil
		}
		var sum float64
		for _, w := range c.AppWaitSites {
			sc, _, _ := strings.Cut(w.Site, "/")
			if slices.Contains(syscalls, sc) {
				sum += w.Share
			}
		}
		return &sum
	}), foldOther)
}

// Class is condition s's class in the matrix (report.Class*): no-data
// without a sound run, or when its sound runs did not all run the
// condition's slow clients; failed when a /fast request failed, a slow
// client was not served as its kind expects (a request of /fast's
// HTTP/2 series counts as one of /fast's), or the OOM killer hit the
// app or the proxy in any sound run; else by the median /fast
// p95 of its valid runs, protected under ProtectedMs, stalled over
// StalledMs, slowed between.
func Class(s report.Condition) string {
	switch {
	case s.RunsSound == 0 || s.RequestsTotal == 0 || s.DownloadsTotal != s.RecordsPerRun()*s.RunsSound:
		return report.ClassNoData
	case s.RequestsTotal-s.RequestsOK > 0 || s.RequestsTotalH2-s.RequestsOKH2 > 0 || s.DownloadsTotal-s.DownloadsComplete > 0 || s.RunsOOM > 0:
		return report.ClassFailed
	case s.RunsValid == 0:
		return report.ClassNoData
	case s.P95Ms < ProtectedMs:
		return report.ClassProtected
	case s.P95Ms > StalledMs:
		return report.ClassStalled
	}
	return report.ClassSlowed
}

// errNoClass is why a condition has no class.
var errNoClass = fmt.Errorf("no sound run with all its slow clients, or no valid run")

// Protected holds when condition id is in class protected: /fast p95
// under ProtectedMs, no /fast request failed and every slow client was
// served as its kind expects, over all of its runs. The measured value is the p95 (0
// when something failed).
func Protected(id string) Check { return classCheck{id, report.ClassProtected} }

// Stalls holds when condition id is in class stalled: nothing failed and
// /fast p95 over StalledMs.
func Stalls(id string) Check { return classCheck{id, report.ClassStalled} }

type classCheck struct {
	id, want string
}

func (c classCheck) Needs() []string { return []string{c.id} }

func (c classCheck) Eval(d Data) (Outcome, error) {
	s, ok := d.Conditions[c.id]
	if !ok {
		return Outcome{}, fmt.Errorf("%s: no summary", c.id)
	}
	class := Class(s)
	if class == report.ClassNoData {
		return Outcome{}, fmt.Errorf("%s: %w", c.id, errNoClass)
	}
	th := map[string]string{
		report.ClassProtected: fmt.Sprintf("< %d ms, no failed request, every slow client served", ProtectedMs),
		report.ClassStalled:   fmt.Sprintf("> %d ms, no failed request, every slow client served", StalledMs),
	}[c.want]
	if class == report.ClassFailed {
		th += fmt.Sprintf(" (measured: %d failed requests, %d slow clients not whole)",
			s.RequestsTotal-s.RequestsOK, s.DownloadsTotal-s.DownloadsComplete)
		return Outcome{Measured: 0, Threshold: th, Holds: false}, nil
	}
	return Outcome{Measured: s.P95Ms, Threshold: th, Holds: class == c.want}, nil
}

// MatrixCellID is the condition measuring a slow-read cell of the
// matrix: the engine's MatrixID, or article A's own condition for the
// cells its table holds (an engine test checks it against
// engine.MatrixCells).
func MatrixCellID(row, path string) string {
	switch {
	case row == syncRow && (path == "direct" || path == "nginx-off" || path == "nginx-on"):
		return path + "-2dl"
	case row == gthreadRow && path == "direct":
		return "gthread-2dl"
	}
	return "matrix-slow-read-" + row + "-" + path
}

// CellID is the condition measuring a cell of column col: MatrixCellID's
// for the slow-read column, matrix-<col>-<row>-<path> for the others (an
// engine test checks it against engine.MatrixCells).
func CellID(col, row, path string) string {
	if col == slowRead {
		return MatrixCellID(row, path)
	}
	return "matrix-" + col + "-" + row + "-" + path
}

// The matrix's columns and paths, by id (engine.MatrixColumns).
const (
	slowRead       = "slow-read"
	slowUpload     = "slow-upload"
	slowHeaders    = "slow-headers"
	silent         = "silent"
	outliveTimeout = "outlive-timeout"
	hang           = "hang"
	slowTLS        = "slow-tls"
	h2SlowRead     = "h2-slow-read"
	h2ManyStreams  = "h2-many-streams"
	nginxH2Off     = "nginx-h2-off"
	nginxH2COff    = "nginx-h2c-off"
	nginxH2On      = "nginx-h2-on"
	directH2       = "direct-h2"
	wsSlowConsumer = "ws-slow-consumer"
	nginxWS        = "nginx-ws"
	direct         = "direct"
	directTLS      = "direct-tls"
	nginxOn        = "nginx-on"
	reqbufOff      = "nginx-on-reqbuf-off"
)

// CapacityStepID is a slow-read capacity step's own condition
// (engine.CapacityID; an engine test checks it).
func CapacityStepID(row string, n int) string { return fmt.Sprintf("capacity-slow-read-%s-%d", row, n) }

// The matrix's rows, by id (engine.MatrixRows).
const (
	syncRow          = "gunicorn-sync-2"
	gthreadRow       = "gunicorn-gthread-1x4"
	geventRow        = "gunicorn-gevent-2"
	gunicornUvicorn  = "gunicorn-uvicorn-2"
	uvicornRow       = "uvicorn-2"
	uwsgiGen         = "uwsgi-2-generator"
	uwsgiGenOffload  = "uwsgi-2-generator-offload-2"
	uwsgiFile        = "uwsgi-2-file"
	uwsgiFileOffload = "uwsgi-2-file-offload-2"
	daphneRow        = "daphne-1"
	hypercornRow     = "hypercorn-2"
	geventWSRow      = "gunicorn-geventws-2"
	// Issue 33's servers, under the HTTP/1.1 columns.
	waitressRow    = "waitress-4"
	modWSGIRow     = "modwsgi-2x1"
	uwsgiGeventRow = "uwsgi-2-gevent-100"
	uwsgiAsyncRow  = "uwsgi-2-asyncio-100"
	eventletRow    = "gunicorn-eventlet-2"
)

// MatrixRowIDs are the rows Matrix names (an engine test checks that the
// engine has each).
var MatrixRowIDs = []string{syncRow, gthreadRow, geventRow, gunicornUvicorn, uvicornRow,
	uwsgiGen, uwsgiGenOffload, uwsgiFile, uwsgiFileOffload, daphneRow, hypercornRow, geventWSRow,
	waitressRow, modWSGIRow, uwsgiGeventRow, uwsgiAsyncRow, eventletRow}

// NginxOnProtected is the verdict that row, measured by condition id
// behind NGINX buffering on, is protected: asserted for every row of the
// engine's table (engine.MatrixVerdicts) but nginxOnNoStall's, so a new row
// gets it with no edit here.
func NginxOnProtected(row, id string) Verdict {
	if why, ok := nginxOnNoStall[row]; ok {
		return Verdict{ID: row + "-nginx-on-no-stall", Kind: Lab, Unit: "ms", Check: Below(id, P95, StalledMs),
			Text: row + " behind NGINX buffering on keeps /fast under the stall line under 2 slow readers, but not always protected: " + why}
	}
	return Verdict{ID: row + "-nginx-on-protected", Kind: Lab, Unit: "ms", Check: Protected(id),
		Text: row + " behind NGINX buffering on keeps /fast protected under 2 slow readers: NGINX takes each response at once"}
}

// nginxOnNoStall are the rows whose /fast, behind NGINX buffering on
// under slow readers, lands either side of the protected line from run to
// run: the stall line, not the protected one, is their verdict. Daphne
// and waitress spend their quarter core on the responses NGINX takes at
// once, so that /fast waits for the CPU (3 runs each and one more, an AMD
// EPYC, 2026-12-07; reports/measurements.md, stop 63); eventlet's /fast
// lands either side of the line in every column, behind NGINX too.
var nginxOnNoStall = map[string]string{
	daphneRow: "Daphne's one process takes both 16 MiB responses from the app at once and pushes them through Twisted's transport as fast as NGINX reads " +
		"(p95 8.3 to 26.7 ms over 4 runs, either side of the protected line; 2.31 ms in one run of stop 62)",
	waitressRow: "waitress copies each response past 1 MiB into its temporary file and out again as fast as NGINX reads (write 0.72 to 0.83 s), " +
		"on its quarter core (p95 19.8 to 36.4 ms over 4 runs; 1.46 ms in one run of stop 62)",
	eventletRow: "a green thread of eventlet's hub waits for each slow reader, but /fast's p95 under eventlet lands either side of the protected line in every column, " +
		"NGINX in front or not (2.6 to 13.7 ms over 3 runs under Gunicorn 23.0.0, 3.9 to 6.0 ms over 2 under 20.1.0; 15.0 ms in one run with silent connections, which never reach it; reports/measurements.md, stop 64)",
}

// nginxOnNoStallRows are nginxOnNoStall's rows, in order.
func nginxOnNoStallRows() []string { return slices.Sorted(maps.Keys(nginxOnNoStall)) }

// Matrix are the resilience matrix's verdicts about named rows, asserted
// with one per row of the engine's table (engine.MatrixVerdicts) in
// TestMatrix/claims/<id>: the ones whose outcome the mechanism makes
// certain, each with the distribution behind its margin in
// reports/measurements.md. The wait-site thresholds (0.5 of samples in
// poll, 0.8 in epoll_wait) sit far from both sides: a worker that waits
// for its client spends about 0.72 of the window in its write wait and
// 0.28 in epoll_wait, a free one 0.92 to 1.00 in epoll_wait over 61
// cells and steps.
var Matrix = func() []Verdict {
	vs := []Verdict{
		// Without a buffering proxy.
		{ID: "sync-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(MatrixCellID(syncRow, "direct")),
			Text: "2 Gunicorn sync workers stall /fast under 2 slow readers: each worker waits in a send for its client"},
		{ID: "gthread-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(gthreadRow, "direct")),
			Text: "gthread 1x4 keeps /fast protected under 2 slow readers: 2 of its 4 threads stay free"},
		{ID: "gevent-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(geventRow, "direct")),
			Text: "2 gevent workers keep /fast protected under 2 slow readers: a send that would block yields to the hub"},
		{ID: "gunicorn-uvicorn-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(gunicornUvicorn, "direct")),
			Text: "2 of Uvicorn's workers under Gunicorn keep /fast protected under 2 slow readers: send() awaits the drain in the event loop"},
		{ID: "uvicorn-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(uvicornRow, "direct")),
			Text: "Uvicorn alone, 2 workers, keeps /fast protected under 2 slow readers"},
		{ID: "async-workers-wait-in-their-loop", Kind: Lab, Unit: "share",
			Check: AllAbove([]string{MatrixCellID(geventRow, "direct"), MatrixCellID(gunicornUvicorn, "direct"), MatrixCellID(uvicornRow, "direct")}, WaitAt(epollCalls...), 0.8),
			Text:  "gevent and Uvicorn workers wait in their event loop's epoll_wait while the slow readers' writes are pending: a write that would block parks its request, and the loop serves /fast"},
		// uWSGI's offload threads.
		{ID: "uwsgi-generator-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(MatrixCellID(uwsgiGen, "direct")),
			Text: "uWSGI, 2 sync processes, a generator's body: /fast stalls under 2 slow readers"},
		{ID: "uwsgi-generator-offload-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(MatrixCellID(uwsgiGenOffload, "direct")),
			Text: "offload threads do not help a generator's body: /fast still stalls under 2 slow readers"},
		{ID: "uwsgi-generator-offload-write-held", Kind: Lab, Unit: "s", Check: Above(MatrixCellID(uwsgiGenOffload, "direct"), WriteS, 5),
			Text: "with offload threads, the worker still writes a generator's body itself, for as long as its client reads"},
		{ID: "uwsgi-file-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(MatrixCellID(uwsgiFile, "direct")),
			Text: "uWSGI without offload threads sends a wsgi.file_wrapper body from its worker: /fast stalls under 2 slow readers"},
		{ID: "uwsgi-file-write-held", Kind: Lab, Unit: "s", Check: Above(MatrixCellID(uwsgiFile, "direct"), WriteS, 5),
			Text: "without offload threads, the worker holds a file's response for as long as its client reads"},
		{ID: "uwsgi-file-offload-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(uwsgiFileOffload, "direct")),
			Text: "uWSGI with offload threads keeps /fast protected under 2 slow readers of a wsgi.file_wrapper body"},
		{ID: "uwsgi-file-offload-write-free", Kind: Lab, Unit: "s", Check: Below(MatrixCellID(uwsgiFileOffload, "direct"), WriteS, 0.1),
			Text: "with offload threads, the worker hands the file to an offload thread and is free at once"},
		// Their mechanism, from the wait-site sampler: uWSGI writes without
		// blocking and waits for its socket in poll(2); a free worker waits
		// for requests in epoll_wait.
		{ID: "uwsgi-generator-offload-waits-in-poll", Kind: Lab, Unit: "share", Check: Above(MatrixCellID(uwsgiGenOffload, "direct"), WaitAt(pollCalls...), 0.5),
			Text: "with offload threads and a generator, the workers spend most of the window in poll(2), waiting for their client's socket to drain"},
		{ID: "uwsgi-file-waits-in-poll", Kind: Lab, Unit: "share", Check: Above(MatrixCellID(uwsgiFile, "direct"), WaitAt(pollCalls...), 0.5),
			Text: "without offload threads, the workers spend most of the window in poll(2) between their sendfile calls"},
		{ID: "uwsgi-file-offload-workers-wait-for-requests", Kind: Lab, Unit: "share", Check: Above(MatrixCellID(uwsgiFileOffload, "direct"), WaitAt(epollCalls...), 0.8),
			Text: "with offload threads and a file, the workers wait for requests in epoll_wait: the offload threads send the files"},
		// The servers teams deploy beyond Gunicorn 23, Uvicorn and uWSGI's
		// sync workers (issue 33), directly under 2 slow readers: 3 runs
		// each on an AMD EPYC (reports/measurements.md, stop 62).
		{ID: "daphne-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(daphneRow, "direct")),
			Text: "Daphne keeps /fast protected under 2 slow readers (p95 2.41 to 3.10 ms): it takes each 16 MiB response from the app at once " +
				"(write 0.001 s) and holds what its client has not read in Twisted's transport, in its memory (growth 22.5 to 29.5 MiB)"},
		{ID: "hypercorn-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(hypercornRow, "direct")),
			Text: "Hypercorn, 2 asyncio workers, keeps /fast protected under 2 slow readers (p95 1.97 to 2.28 ms): send() awaits the drain in the event loop"},
		{ID: "uwsgi-gevent-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(uwsgiGeventRow, "direct")),
			Text: "uWSGI's gevent loop (2 processes x --gevent 100) keeps /fast protected under 2 slow readers (p95 1.03 to 1.62 ms): a write that would block suspends its greenlet"},
		{ID: "uwsgi-asyncio-direct-protected", Kind: Lab, Unit: "ms", Check: Protected(MatrixCellID(uwsgiAsyncRow, "direct")),
			Text: "uWSGI's asyncio loop (2 processes x --asyncio 100, on greenlets) keeps /fast protected under 2 slow readers (p95 1.14 to 1.57 ms)"},
		{ID: "eventlet-direct-no-stall", Kind: Lab, Unit: "ms", Check: Below(MatrixCellID(eventletRow, "direct"), P95, StalledMs),
			Text: "2 Gunicorn eventlet workers do not stall /fast under 2 slow readers: a send that would block yields to the hub " +
				"(p95 1.40 to 7.58 ms over 3 runs of stop 62, 5.41 to 10.97 ms over 3 of stop 64: either side of the protected line, so the stall line is the verdict)"},
		{ID: "waitress-direct-no-stall", Kind: Lab, Unit: "ms", Check: Below(MatrixCellID(waitressRow, "direct"), P95, StalledMs),
			Text: "waitress (4 threads) does not stall /fast under 2 slow readers: it spills each response past 1 MiB into a temporary file and its loop feeds the client, " +
				"but copying 32 MiB through Python on its quarter core (throttled in 87 to 92 % of periods) slows /fast (p95 56 to 70 ms); " +
				"in the app's 32 MiB /tmp the files ran out of space and waitress cut a reader"},
		{ID: "modwsgi-direct-stalls", Kind: Lab, Unit: "ms", Check: Stalls(MatrixCellID(modWSGIRow, "direct")),
			Text: "mod_wsgi in daemon mode (2 processes x 1 thread) under Apache's event MPM stalls /fast under 2 slow readers (p95 6.01 to 6.02 s): " +
				"Apache's thread relays each response from its daemon as its client reads it, so Apache's own threads do not shield the daemons"},
		{ID: "modwsgi-write-held", Kind: Lab, Unit: "s", Check: Above(MatrixCellID(modWSGIRow, "direct"), WriteS, 5),
			Text: "a mod_wsgi daemon process holds each response for as long as its client reads (write 6.61 to 6.67 s of the client's 8)"},
		// Capacity: count the write waits against the concurrency.
		{ID: "sync-capacity", Kind: Lab, Unit: "clients",
			Check: FirstStalled([]string{"direct-1dl", "direct-2dl"}, []int{1, 2}, 2),
			Text:  "2 sync workers stall /fast from 2 slow readers, their worker count, and not at 1"},
		{ID: "gthread-capacity", Kind: Lab, Unit: "clients",
			Check: FirstStalled([]string{CapacityStepID(gthreadRow, 3), CapacityStepID(gthreadRow, 4)}, []int{3, 4}, 4),
			Text:  "gthread 1x4 stalls /fast from 4 slow readers, its thread count, and not at 3"},
	}
	return vs
}()

// FirstStalled holds when, along a row's capacity steps ids (by growing
// number of slow clients, clients[i] for ids[i]), the first step in class
// stalled (p95 over StalledMs, nothing failed) is the one of want
// clients. The measured value is that step's clients (-1 when none
// stalled). A stall, not the protected class, marks the capacity: the
// step below it keeps /fast at a few ms (a thread pool's last free
// thread waits for the GIL now and then: gthread at 3 readers measured
// 1.5 to 5.9 ms), the step at it at seconds, so the verdict has three
// orders of magnitude on each side.
func FirstStalled(ids []string, clients []int, want int) Check {
	return capacityCheck{ids, clients, want}
}

type capacityCheck struct {
	ids     []string
	clients []int
	want    int
}

func (c capacityCheck) Needs() []string { return c.ids }

func (c capacityCheck) Eval(d Data) (Outcome, error) {
	first := -1
	for i, id := range c.ids {
		s, ok := d.Conditions[id]
		if !ok {
			return Outcome{}, fmt.Errorf("%s: no summary", id)
		}
		class := Class(s)
		if class == report.ClassNoData {
			return Outcome{}, fmt.Errorf("%s: %w", id, errNoClass)
		}
		if class == report.ClassStalled && first < 0 {
			first = c.clients[i]
		}
	}
	return Outcome{Measured: float64(first),
		Threshold: fmt.Sprintf("= %d concurrent slow clients (steps %v)", c.want, c.clients), Holds: first == c.want}, nil
}
