package verdict

import (
	"fmt"
	"math"
)

// FrontDoor is what one front door does for 2 Gunicorn sync workers under
// article A's 2 slow readers (16 MiB at 2 MiB/s): the cell
// matrix-slow-read-gunicorn-sync-2-<Path>.
type FrontDoor struct {
	// Path is the engine's path id (engine.FrontDoors).
	Path string
	// Check judges the cell (Protected, Stalls, or Below P95 StalledMs).
	Check func(id string) Check
	// Text says what was measured and why, and where it disagrees with a
	// project's documentation.
	Text string
	// SweepMaxMiB, when set, is the largest size the door's sweep row
	// runs (FrontDoorSweepRow), with SweepWhy saying why.
	SweepMaxMiB float64
	SweepWhy    string
}

// notStalled holds when id's /fast p95 stays under StalledMs.
func notStalled(id string) Check { return Below(id, P95, StalledMs) }

// leftWaiting holds when id's /fast p95 is over LeftWaitingMs: far from
// protected, whether or not it crosses the stall line.
func leftWaiting(id string) Check { return Above(id, P95, LeftWaitingMs) }

// LeftWaitingMs is 10x the protected line (ProtectedMs).
const LeftWaitingMs = 10 * ProtectedMs

// bufferedWhole holds when id's proxy memory peak is at least
// WholeResponseMemMiB: a door that holds both 16 MiB responses in memory.
func bufferedWhole(id string) Check { return Above(id, ProxyMemPeak, WholeResponseMemMiB) }

// WholeResponseMemMiB is twice the 2 x 16 MiB a door holds when it reads
// both responses whole into memory: Caddy's peak was 96.0 MiB (its limit)
// in 10 of 10 runs; the doors that stream peaked at 5.5 (lighttpd at
// stream-response-body 2) to 41.9 MiB (Caddy at its defaults).
const WholeResponseMemMiB = 64

// FrontDoors are the front-door verdicts. Their margins, from 7 to 10
// runs of each cell (3 of Varnish's) on an AMD EPYC over two sessions
// (reports/measurements.md, "Front doors", both steps): the stalled
// cells' p95 ran 2.2 to 4.4 s against the 1 s threshold; nginx-1m's 0.44
// to 3.2 s against 100 ms (16 MiB sits near its boundary, so the stall
// line is no margin there); lighttpd's 1.39 to 19.0 ms against 1 s (its
// p95 crossed the protected line, 10 ms, in 2 of 10 runs, with the
// client's quota throttled in 16 to 17 % of periods); Varnish's 2.05 to
// 2.29 ms against 1 s; Caddy buffered's memory peak 96.0 MiB in every run
// against 64.
var FrontDoors = []FrontDoor{
	{Path: "haproxy", Check: Stalls, Text: "2 sync workers behind HAProxy 2.6 at its packaged defaults stall /fast under 2 slow readers. " +
		"Gunicorn's design page names HAProxy beside NGINX as the buffering proxy sync workers need; measured, HAProxy does not protect them: " +
		"it holds one 16 KiB buffer per direction (tune.bufsize, in memory, never on disk) and reads the server only as fast as the client drains it"},
	{Path: "apache", Check: Stalls, Text: "2 sync workers behind Apache httpd 2.4 (event MPM, mod_proxy_http, Debian's defaults) stall /fast under 2 slow readers: " +
		"mod_proxy_http streams the response through its 8 KiB ProxyIOBufferSize, so the worker waits for the client"},
	{Path: "caddy", Check: Stalls, Text: "2 sync workers behind Caddy 2.6.2's reverse_proxy at its defaults stall /fast under 2 slow readers: it streams each response through a 32 KiB copy buffer"},
	{Path: "caddy-buffered", Check: bufferedWhole, Text: "Caddy's reverse_proxy with buffer_responses frees the sync workers by reading each 16 MiB response into memory at once, and pays for it at the edge: " +
		"holding 2 x 16 MiB in Go's heap takes Caddy to its 96 MiB limit (the verdict: a memory peak of at least twice the 32 MiB held). " +
		"/fast's p95 ran 2.7 to 751 ms over 12 runs: out of the stall, but not reliably protected, since Caddy reads both responses at its 0.20 core while the workers wait",
		SweepMaxMiB: 16, SweepWhy: "2 x 24 MiB OOM-kills Caddy at its 96 MiB limit (3 runs of 3): the proxy dies, the run is an error, not a cell"},
	{Path: "lighttpd", Check: notStalled, Text: "2 sync workers behind lighttpd 1.4.69 at its default server.stream-response-body 0 stay out of the stall under 2 slow readers: " +
		"lighttpd reads each whole response ahead, into temp files past its memory chunks, and frees the workers in 0.1 to 0.2 s"},
	{Path: "lighttpd-stream-2", Check: Stalls, Text: "lighttpd with server.stream-response-body 2 stalls /fast under 2 slow readers: it reads the server only as the client drains the response"},
	{Path: "nginx-ingress", Check: Stalls, Text: "NGINX at the ingress-nginx controller's documented defaults (proxy-buffering off, 4k buffers) stalls 2 sync workers' /fast under 2 slow readers, " +
		"as article A's buffering-off arm does: a sync app behind a stock ingress-nginx needs proxy-buffering on"},
	{Path: "varnish", Check: notStalled, Text: "2 sync workers behind Varnish 7.1, passing the large response (never cached), stay out of the stall under 2 slow readers: " +
		"a pass streams from transient storage while the fetch reads the server at its own pace, so Varnish reads each whole response ahead, in memory"},
	{Path: "nginx-1m", Check: leftWaiting, Text: "a front door that reads about 1 MiB of each response ahead (NGINX buffering on, 64 x 16k buffers, no temp file), standing for Heroku's documented 1 MB router buffer, " +
		"does not protect 2 sync workers from 2 slow 16 MiB readers: /fast's p95 ran 0.44 to 3.2 s over 11 runs (the verdict: over 10x the protected line). " +
		"A read-ahead smaller than the response only moves the stall to larger responses: 16 MiB sits at this path's boundary (its sweep row)"},
}

// FrontDoorVerdicts are the front-door verdicts about row's cells (the
// FrontDoors table is measured for gunicorn-sync-2).
func FrontDoorVerdicts(row string) []Verdict {
	var out []Verdict
	for _, f := range FrontDoors {
		out = append(out, Verdict{ID: row + "-behind-" + f.Path, Kind: Lab, Unit: "ms", Check: f.Check(MatrixCellID(row, f.Path)), Text: f.Text})
	}
	return out
}

// FrontDoorBoundaryMarginMiB is how far from a door's predicted boundary
// a cell of its sweep row must be to be read: 1 s of reading at 2 MiB/s.
// Run to run, a stalling cell near its boundary moved /fast's p95 by up
// to 1.1 s (nginx-1m at 16 MiB, 0.97 to 2.07 s), and a door's C moved by
// 1.7 MiB between two sessions (nginx-1m, 8.9 and 10.6 MiB).
const FrontDoorBoundaryMarginMiB = 2

// FrontDoorSweepRow is path's row of the front doors' sweep at 2 MiB/s by
// growing size (4, 8, 12, 16 and 24 MiB); its 16 MiB cell is the
// matrix's slow-read cell of gunicorn-sync-2.
func FrontDoorSweepRow(path string) []string {
	row, _ := frontDoorSweepRow(path)
	return row
}

// frontDoorSweepRow is path's sweep row and the sizes of its cells, MiB,
// up to its door's SweepMaxMiB.
func frontDoorSweepRow(path string) ([]string, []float64) {
	limit := math.Inf(1)
	for _, f := range FrontDoors {
		if f.Path == path && f.SweepMaxMiB > 0 {
			limit = f.SweepMaxMiB
		}
	}
	var row []string
	var sizes []float64
	for _, mib := range sweepSizesMiB {
		if mib > limit {
			break
		}
		id := fmt.Sprintf("sweep-%s-%gm-2mps", path, mib)
		if mib == 16 {
			id = MatrixCellID(syncRow, path)
		}
		row, sizes = append(row, id), append(sizes, mib)
	}
	return row, sizes
}

// FrontDoorBoundaries are the front doors' stall boundaries (make repro):
// for each front door, the buffer model's boundary at 2 MiB/s, predicted
// from the door's measured C, splits the cells its sweep row measured
// (BoundarySides).
func FrontDoorBoundaries() []Verdict {
	var out []Verdict
	for _, f := range FrontDoors {
		row, sizes := frontDoorSweepRow(f.Path)
		out = append(out, Verdict{ID: "boundary-" + f.Path, Kind: Lab, Unit: "MiB",
			Check: BoundarySides(f.Path, 2<<20, row, sizes, StalledMs, FrontDoorBoundaryMarginMiB),
			Text: "behind " + f.Path + ", 2 sync workers' stall boundary by size at 2 MiB/s, predicted by the buffer model from the door's measured read-ahead C, " +
				"splits its sweep row: the responses past it stall /fast (p95 > 1 s), those under it do not " +
				"(a door that read every response of its row whole has none past it, and is read on the smaller side)"})
	}
	return out
}
