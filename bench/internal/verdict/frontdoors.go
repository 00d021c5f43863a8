package verdict

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
}

// notStalled holds when id's /fast p95 stays under StalledMs.
func notStalled(id string) Check { return Below(id, P95, StalledMs) }

// FrontDoors are the front-door verdicts. Their margins, from 3 runs of
// each cell on an AMD EPYC (reports/measurements.md, "Front doors"): the
// stalled cells' p95 ran 2.6 to 4.3 s against the 1 s threshold; lighttpd's
// protected cell 1.39 to 1.54 ms against 10 ms; Caddy buffered 2.7 to
// 151 ms against 1 s.
var FrontDoors = []FrontDoor{
	{"haproxy", Stalls, "2 sync workers behind HAProxy 2.6 at its packaged defaults stall /fast under 2 slow readers. " +
		"Gunicorn's design page names HAProxy beside NGINX as the buffering proxy sync workers need; measured, HAProxy does not protect them: " +
		"it holds one 16 KiB buffer per direction (tune.bufsize, in memory, never on disk) and reads the server only as fast as the client drains it"},
	{"apache", Stalls, "2 sync workers behind Apache httpd 2.4 (event MPM, mod_proxy_http, Debian's defaults) stall /fast under 2 slow readers: " +
		"mod_proxy_http streams the response through its 8 KiB ProxyIOBufferSize, so the worker waits for the client"},
	{"caddy", Stalls, "2 sync workers behind Caddy 2.6.2's reverse_proxy at its defaults stall /fast under 2 slow readers: it streams each response through a 32 KiB copy buffer"},
	{"caddy-buffered", notStalled, "Caddy's reverse_proxy with buffer_responses frees the sync workers: each 16 MiB response is read into memory at once, and /fast stays out of the stall. " +
		"It is not always protected, and it is near its end: holding 2 x 16 MiB in Go's heap took Caddy's memory to its 96 MiB limit, and /fast's p95 ran 2.7 to 187 ms over 4 runs"},
	{"lighttpd", Protected, "2 sync workers behind lighttpd 1.4.69 at its default server.stream-response-body 0 keep /fast protected under 2 slow readers: " +
		"lighttpd reads each whole response ahead, into temp files past its memory chunks"},
	{"lighttpd-stream-2", Stalls, "lighttpd with server.stream-response-body 2 stalls /fast under 2 slow readers: it reads the server only as the client drains the response"},
	{"nginx-ingress", Stalls, "NGINX at the ingress-nginx controller's documented defaults (proxy-buffering off, 4k buffers) stalls 2 sync workers' /fast under 2 slow readers, " +
		"as article A's buffering-off arm does: a sync app behind a stock ingress-nginx needs proxy-buffering on"},
	{"nginx-1m", Stalls, "a front door that reads about 1 MiB of each response ahead (NGINX buffering on, 64 x 16k buffers, no temp file), standing for Heroku's documented 1 MB router buffer, " +
		"still stalls 2 sync workers under 2 slow 16 MiB readers: a read-ahead smaller than the response only shortens the wait"},
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
