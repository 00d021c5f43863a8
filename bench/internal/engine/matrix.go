package engine

import (
	"fmt"
	"slices"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

// The resilience matrix: rows are Python server setups, columns slow-client
// behaviours, and each cell is a row on a path (direct, or behind NGINX
// with buffering on or off) under a column's slow clients, with /fast at
// article A's 8/s. Rows and columns are data: adding a server is one entry
// in MatrixRows (plus its image packages).

// Row is one server setup of the resilience matrix.
type Row struct {
	// ID names the row in condition ids and reports: the server's id.
	ID string
	// Server is the row's command line.
	Server podspec.Server
	// Concurrency is how many slow clients the command line lets the
	// server hold at once: its workers, workers x threads, or processes;
	// 0 when it declares no limit at or under MatrixStepLimit
	// (connections per worker, or none).
	Concurrency int
	// Basis says where Concurrency comes from.
	Basis string
	// WebSocket says the server takes WebSockets (an ASGI server with a
	// WebSocket implementation): the WebSocket column runs it.
	WebSocket bool
	// Only, when set, are the only columns (by id) the row runs: a server
	// added for a protocol column, or issue 33's servers (the HTTP/1.1
	// columns, classic), and a framework row (FrameworkColumns).
	Only []string
	// Paths, when set, are the only paths (by id) the row runs.
	Paths []string
	// Framework, when set, is the framework the row's app is written in
	// (podspec.Frameworks): a framework cell's row, whose Twin is the
	// row of the same server serving the framework-free app.
	Framework, Twin string
	// Gunicorn, when set, is the Gunicorn release the row runs instead
	// of the installed one (podspec.GunicornReleases): a version row,
	// whose Twin is the same server under the installed release
	// (VersionRows).
	Gunicorn string
	// HoldsBodies says the server holds what its slow readers have not
	// read, in its memory or in a temporary file its memory limit counts:
	// its capacity steps may end in the OOM killer, which is then the
	// step's outcome (Condition.MayExhaust), not the lab's error.
	HoldsBodies bool
}

// classic are the HTTP/1.1 columns every server row runs: slow readers,
// slow uploads, slow headers and silent connections.
var classic = []string{SlowRead.ID, SlowUpload.ID, SlowHeaders.ID, Silent.ID}

// MatrixStepLimit caps the capacity steps of a row that declares no limit
// of its own: 16 concurrent slow readers of 2 MiB/s are 32 MiB/s through a
// quarter of a core. Past it the scale column (ScaleRead) steps slower
// readers.
const MatrixStepLimit = 16

// serverRows are the matrix's servers, each serving the framework-free
// app (wsgiapp/app.py, or its ASGI twin asgiapp.py).
var serverRows = func() []Row {
	uw := func(body string, offload int, conc int, basis string) Row {
		s, err := podspec.UWSGI(2, body, offload)
		if err != nil {
			panic(err)
		}
		return Row{ID: s.ID, Server: s, Concurrency: conc, Basis: basis}
	}
	row := func(s podspec.Server, conc int, basis string) Row {
		return Row{ID: s.ID, Server: s, Concurrency: conc, Basis: basis}
	}
	ws := func(r Row, only ...string) Row {
		r.WebSocket, r.Only = true, only
		return r
	}
	only := func(r Row, cols ...string) Row {
		r.Only = cols
		return r
	}
	holds := func(r Row) Row {
		r.HoldsBodies = true
		return r
	}
	uwLoop := func(loop, basis string) Row {
		s, err := podspec.UWSGILoop(2, loop, 100)
		if err != nil {
			panic(err)
		}
		return Row{ID: s.ID, Server: s, Basis: basis}
	}
	return []Row{
		row(podspec.GunicornSync(2), 2, "--workers 2, one request each"),
		row(podspec.GunicornGthread(1, 4), 4, "--workers 1 x --threads 4"),
		row(podspec.GunicornGevent(2), 0, "--workers 2 x 1,000 worker connections (Gunicorn's default)"),
		ws(row(podspec.GunicornUvicorn(2), 0, "--workers 2, no connection limit (Uvicorn's default)")),
		ws(row(podspec.Uvicorn(2), 0, "--workers 2, no --limit-concurrency")),
		uw(podspec.BodyGenerator, 0, 2, "--processes 2, one request each"),
		uw(podspec.BodyGenerator, 2, 2, "--processes 2; a generator's body cannot be offloaded"),
		uw(podspec.BodyFile, 0, 2, "--processes 2, one request each"),
		uw(podspec.BodyFile, 2, 0, "--processes 2 hand each file to 2 offload threads, which take any number"),
		// WebSocket servers: the HTTP/1.1 columns (classic) and their
		// protocol columns; Hypercorn speaks HTTP/2 itself too
		// (DirectH2). Daphne holds each reader's whole response in its
		// memory (99 MiB of its 128 at 2 readers).
		holds(ws(row(podspec.Daphne(), 0, "one process, no connection limit"), append(slices.Clone(classic), WSSlowConsumer.ID)...)),
		ws(row(podspec.Hypercorn(2), 0, "--workers 2, no connection limit"), append(slices.Clone(classic), WSSlowConsumer.ID, H2SlowRead.ID, H2ManyStreams.ID)...),
		ws(row(podspec.GunicornGeventWS(2), 0, "--workers 2 x 1,000 worker connections (Gunicorn's default)"), WSSlowConsumer.ID),
		// The servers teams deploy beyond these (issue 33), under the
		// HTTP/1.1 columns: Daphne and Hypercorn above, and these.
		holds(only(row(podspec.Waitress(4), 0, "--threads 4 in one process, but each response past 1 MiB spills into a temporary file (64 MiB of /dev/shm) and frees its thread: no limit of its own but that space"), classic...)),
		only(row(podspec.ModWSGI(), 2, "2 daemon processes x 1 thread (WSGIDaemonProcess)"), classic...),
		only(uwLoop(podspec.LoopGevent, "--processes 2 x --gevent 100"), classic...),
		only(uwLoop(podspec.LoopAsyncio, "--processes 2 x --asyncio 100"), classic...),
		only(row(podspec.GunicornEventlet(2), 0, "--workers 2 x 1,000 worker connections (Gunicorn's default)"), classic...),
	}
}()

// MatrixRows are the matrix's server setups, all under article A's
// limits: the servers, their framework rows (FrameworkRows), then their
// rows under Debian bookworm's own Gunicorn (VersionRows).
var MatrixRows = slices.Concat(serverRows, FrameworkRows(serverRows), VersionRows(serverRows, podspec.GunicornBookworm))

// matrixRows are MatrixRows by id.
var matrixRows = func() map[string]Row {
	m := map[string]Row{}
	for _, r := range MatrixRows {
		m[r.ID] = r
	}
	return m
}()

// Column is one slow-client behaviour.
type Column struct {
	// ID names the column in condition ids and reports.
	ID string
	// Text says what the slow clients do.
	Text string
	// Clients is how many slow clients a cell runs.
	Clients int
	// Paths are the column's paths; nil is MatrixPaths.
	Paths []Path
	// Only, when it names a path, are the only rows (by id) that path
	// runs; a path it does not name runs every row.
	Only map[string][]string
	// Server, when set, is a row's server under this column, or false
	// when the column does not apply to the row; nil is the row's own
	// server on every row.
	Server func(Row) (podspec.Server, bool)
	// Apply sets n slow clients of this behaviour on c.
	Apply func(c *Condition, n int)
}

// paths are the column's paths.
func (col Column) paths() []Path {
	if col.Paths == nil {
		return MatrixPaths
	}
	return col.Paths
}

// runs is whether the matrix runs row r on path p: under col (Only), and
// on r's paths (Row.Paths); a stack check runs its own row on its own
// path under every column.
func (col Column) runs(r Row, p Path) bool {
	if r.Paths != nil && !slices.Contains(r.Paths, p.ID) {
		return false
	}
	rows, ok := col.Only[p.ID]
	return !ok || slices.Contains(rows, r.ID)
}

// server is row r's server under col, false when col skips r (or r runs
// only other columns).
func (col Column) server(r Row) (podspec.Server, bool) {
	if r.Only != nil && !slices.Contains(r.Only, col.ID) {
		return podspec.Server{}, false
	}
	if col.Server == nil {
		return r.Server, true
	}
	return col.Server(r)
}

// SlowRead is article A's slow reader: downloads of 16 MiB read at 2 MiB/s
// through an 8 KiB receive buffer.
var SlowRead = Column{ID: "slow-read", Clients: 2,
	Text:  "slow readers: 16 MiB downloads read at 2 MiB/s through an 8 KiB receive buffer",
	Paths: slices.Concat([]Path{Direct, NginxOff, NginxOn}, FrontDoors),
	Apply: func(c *Condition, n int) {
		c.Downloads, c.BodyBytes, c.ReadRate = n, load.DefaultLargeSize, load.DefaultDownloadRate
	}}

// NginxOnStreamedBody is NGINX with buffering on but
// proxy_request_buffering off: a request body streams to the server as
// it arrives.
var NginxOnStreamedBody = func() Path {
	return NginxPath("nginx-on-reqbuf-off", nginxconf.New(nginxconf.WithBuffering(true), nginxconf.WithRequestBuffering(false)))
}()

// SlowUpload sends 16 MiB request bodies at 2 MiB/s to POST /upload, which
// reads and discards them; behind NGINX also with proxy_request_buffering
// off.
var SlowUpload = Column{ID: "slow-upload", Clients: 2,
	Text:  "slow uploads: 16 MiB POST bodies sent at 2 MiB/s through an 8 KiB send buffer",
	Paths: slices.Concat([]Path{Direct, NginxOff, NginxOn, NginxOnStreamedBody}, UploadDoors),
	Only:  onlySync(UploadDoors),
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind, c.BodyBytes, c.ReadRate = n, load.KindUpload, load.DefaultUploadSize, load.DefaultUploadRate
	}}

// SlowHeaders sends a request's header lines one every 500 ms and never
// ends them within the window.
var SlowHeaders = Column{ID: "slow-headers", Clients: 2,
	Text:  "slow headers: a header line every 500 ms, never finished, held 9.5 s",
	Paths: slices.Concat(MatrixPaths, FrontDoors), Only: onlySync(FrontDoors),
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind = n, load.KindHeaders
	}}

// Silent opens connections that send nothing.
var Silent = Column{ID: "silent", Clients: 2,
	Text:  "silent connections: connected, nothing sent, held 9.5 s",
	Paths: slices.Concat(MatrixPaths, FrontDoors), Only: onlySync(FrontDoors),
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind = n, load.KindSilent
	}}

// WorkerTimeout is the worker timeout every Gunicorn row runs under in
// the OutliveTimeout column, seconds.
const WorkerTimeout = 5

// OutliveTimeout is one download that outlives Gunicorn's worker
// timeout: 16 MiB read at 1 MiB/s (16 s) under --timeout 5, on the
// Gunicorn rows, directly and behind NGINX buffering on.
var OutliveTimeout = Column{ID: "outlive-timeout", Clients: 1,
	Text:  "a download slower than the worker timeout: 16 MiB read at 1 MiB/s (16 s) under Gunicorn's --timeout 5",
	Paths: []Path{Direct, NginxOn},
	Server: func(r Row) (podspec.Server, bool) {
		s, err := podspec.GunicornTimeout(r.Server, WorkerTimeout)
		return s, err == nil
	},
	Apply: func(c *Condition, n int) {
		c.Downloads, c.BodyBytes, c.ReadRate = n, load.DefaultLargeSize, 1<<20
	}}

// HangSeconds is how long a Hang handler sleeps: twice WorkerTimeout,
// and past the /fast series' 9 s, so a worker the server does not end
// holds its handler for the whole window.
const HangSeconds = 2 * WorkerTimeout

// HangBodyBytes is what a Hang handler answers once it wakes.
const HangBodyBytes = 64 << 10

// Hang is handlers that outlive the worker timeout (gunicorn#2086,
// #2695): 2 requests to the app's /hang, which sleeps HangSeconds in
// Python (time.sleep, which blocks a sync worker, a thread, or an event
// loop, and yields only under gevent's monkey patching) and then answers
// HangBodyBytes, directly, on the Gunicorn rows under --timeout
// WorkerTimeout and on uWSGI's plain generator row under --harakiri
// WorkerTimeout. Whether the server ends the handler is its clients'
// outcome; /fast meanwhile is the cell's p95.
var Hang = Column{ID: "hang", Clients: 2,
	Text: fmt.Sprintf("handlers that outlive the timeout: 2 requests to /hang?s=%d, which sleeps in Python (time.sleep) and then answers 64 KiB, "+
		"under Gunicorn's --timeout %d or uWSGI's --harakiri %d", HangSeconds, WorkerTimeout, WorkerTimeout),
	Paths: []Path{Direct},
	Server: func(r Row) (podspec.Server, bool) {
		if s, err := podspec.GunicornTimeout(r.Server, WorkerTimeout); err == nil {
			return s, true
		}
		if r.ID != hangUWSGIRow {
			return podspec.Server{}, false
		}
		s, err := podspec.UWSGIHarakiri(r.Server, WorkerTimeout)
		return s, err == nil
	},
	Apply: func(c *Condition, n int) {
		c.Downloads, c.BodyBytes, c.ReadRate, c.HangS = n, HangBodyBytes, load.DefaultDownloadRate, HangSeconds
	}}

// hangUWSGIRow is the uWSGI row the Hang column runs under --harakiri:
// one is enough, as the other three differ only in how /large's body
// leaves the worker, which a hung handler never reaches.
var hangUWSGIRow = func() string {
	s, err := podspec.UWSGI(2, podspec.BodyGenerator, 0)
	if err != nil {
		panic(err)
	}
	return s.ID
}()

// SlowTLS opens TLS connections and sends each one's ClientHello a byte
// every 500 ms, never finished within the hold: directly to a server that
// terminates TLS itself, and to NGINX terminating it with buffering off
// and on.
var SlowTLS = Column{ID: "slow-tls", Clients: 2,
	Text:  "slow TLS handshakes: a ClientHello sent a byte every 500 ms, never finished, held 9.5 s; /fast over TLS",
	Paths: []Path{DirectTLS, NginxTLSOff, NginxTLSOn},
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind = n, load.KindTLS
		c.ClientCPUs = max(c.ClientCPUs, TLSClientCPUs)
	}}

// TLSClientCPUs is the client's CPU quota under slow TLS handshakes: each
// /fast request is a full handshake in the client too (ECDSA P-256, an
// X25519 key share). At article A's 0.20 core, the client's throttled
// periods reached 5.1 to 5.7 ms into /fast's p95 (the redo rule's bound
// is 5 ms), and the rule discarded the first run of 3 of 27 cells as the
// client's own stall, one of them twice; at 0.5 core, none of 81 runs.
const TLSClientCPUs = 0.5

// H2SlowRead is article A's slow reader over HTTP/2: 2 connections to
// NGINX's TLS listener (ALPN h2), each with H2ReadStreams streams of
// 16 MiB whose windows (8 KiB a stream) are returned at 2 MiB/s a
// stream. NGINX forwards each stream upstream as its own HTTP/1.1
// request, so 2 connections are 4 requests at the server.
var H2SlowRead = Column{ID: "h2-slow-read", Clients: 2,
	Text:  fmt.Sprintf("slow HTTP/2 readers: 2 connections x %d streams of 16 MiB, each stream's 8 KiB window returned at 2 MiB/s; /fast over HTTP/1.1 and over HTTP/2 on NGINX's TLS listener or Hypercorn's, over h2c alone on NGINX's plain one", H2ReadStreams),
	Paths: []Path{NginxH2Off, NginxH2On, NginxH2COff, NginxH2COn, DirectH2},
	Only:  h2Only,
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind, c.H2Streams = n, load.KindH2Read, H2ReadStreams
		c.BodyBytes, c.ReadRate = load.DefaultLargeSize, load.DefaultDownloadRate
		c.ClientCPUs = max(c.ClientCPUs, H2ReadClientCPUs)
		serverH2(c)
	}}

// serverH2 sets slow HTTP/2 readers up for a server speaking HTTP/2
// itself (DirectH2): the app gets QueuingAppMemory, so that what
// Hypercorn holds for its streams is measured (at article A's 128 MiB it
// reached the limit), and an OOM kill is the run's outcome.
func serverH2(c *Condition) {
	if c.Path.ID == DirectH2.ID {
		c.AppLimits = &podspec.Limits{CPUs: podspec.DefaultAppCPUs, Memory: QueuingAppMemory}
		c.MayExhaust = true
	}
}

// H2ReadClientCPUs is the client's CPU quota under slow HTTP/2 readers:
// it decrypts 4 paced streams (8 MiB/s) and returns their windows 8 KiB
// at a time, beside /fast's handshakes. At 0.5 core (TLSClientCPUs) its
// throttled periods reached 5.8 to 7.7 ms into /fast's p95 behind NGINX
// buffering on, over the redo rule's 5 ms, in 3 of the first 10 cells.
const H2ReadClientCPUs = MaxClientCPUs

// H2ReadStreams is a slow HTTP/2 reader's streams: with 2 connections,
// 4 downloads of 16 MiB, whose 64 MiB NGINX buffering on can spill
// whole into its 80 MiB temp directory (podspec.ProxyTmpfsBytes); the
// full directory is the exhaustion table's.
const H2ReadStreams = 2

// H2ManyStreams is one HTTP/2 connection that opens as many streams for
// the large path as NGINX allows (http2_max_concurrent_streams, 128 by
// default), with a window of 0: it reads no byte of any body, and holds
// them all for the window. Each stream is an upstream request.
var H2ManyStreams = Column{ID: "h2-many-streams", Clients: 1,
	Text:  fmt.Sprintf("one HTTP/2 connection opening %d streams (%d directly at Hypercorn, its most) for %d KiB bodies with a window of 0, reading nothing, held 9.5 s; /fast over HTTP/1.1 and over HTTP/2 on NGINX's TLS listener or Hypercorn's, over h2c alone on NGINX's plain one", H2ManyStreamsOpened, HypercornMaxStreams, H2ManyBodyBytes>>10),
	Paths: []Path{NginxH2Off, NginxH2On, NginxH2COff, NginxH2COn, DirectH2},
	Only:  h2Only,
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind, c.H2Streams, c.BodyBytes = n, load.KindH2Streams, H2ManyStreamsOpened, H2ManyBodyBytes
		if c.Path.ID == DirectH2.ID {
			// At article A's 128 MiB the OOM killer ended Hypercorn in
			// 3 of 3 runs; at QueuingAppMemory in 2 of 3, the third
			// thrashing at its limit, /fast failing.
			c.H2Streams = HypercornMaxStreams
		}
		c.ClientCPUs = max(c.ClientCPUs, TLSClientCPUs)
		c.MayExhaust = true // NGINX buffering on spills them to its temp directory until it is full
	}}

// h2Only runs the HTTP/2 columns' direct path on the rows whose server
// speaks HTTP/2 itself, and NGINX's h2c paths on a row of each kind of
// worker: sync's, gthread's threads and gevent's greenlets. Behind
// NGINX the upstream hop is HTTP/1.1 whatever the client spoke, and TLS
// is NGINX's own work, so h2c answers whether the TLS listener's
// verdicts hold without TLS; these rows, measured, say they do.
var h2Only = map[string][]string{
	DirectH2.ID:    {podspec.Hypercorn(2).ID},
	NginxH2COff.ID: h2cRows,
	NginxH2COn.ID:  h2cRows,
}

var h2cRows = []string{podspec.GunicornSync(2).ID, podspec.GunicornGthread(1, 4).ID, podspec.GunicornGevent(2).ID}

// HypercornMaxStreams is Hypercorn 0.13's h2_max_concurrent_streams
// default: the streams one connection may open at it directly.
const HypercornMaxStreams = 100

// H2ManyStreamsOpened is NGINX's http2_max_concurrent_streams default:
// the client asks for this many and opens as many as the server allows.
// H2ManyBodyBytes is each held stream's body, article A's 16 MiB: large
// enough that the kernel's buffers cannot take a response whole (at
// 512 KiB they did, and nothing was held), so 128 of them (2 GiB) are
// far past NGINX's 80 MiB temp directory with buffering on.
const (
	H2ManyStreamsOpened = 128
	H2ManyBodyBytes     = 16 << 20
)

// NginxWS is NGINX, buffering on, with the WebSocket location /ws
// (nginxconf.WithWebSocket): the Upgrade handshake passed on, the
// upgraded connection relayed, never buffered.
var NginxWS = NginxPath("nginx-ws", nginxconf.New(nginxconf.WithBuffering(true), nginxconf.WithWebSocket(load.WSPath)))

// WSSlowConsumer is 2 slow WebSocket consumers (load.KindWS) of the app's
// /ws, which pushes WSMessages messages of 64 KiB as fast as the server's
// send() returns; each consumer reads its socket at article A's 2 MiB/s
// through an 8 KiB receive buffer. On the rows that take WebSockets,
// directly and behind NGINX.
var WSSlowConsumer = Column{ID: "ws-slow-consumer", Clients: 2,
	Text: fmt.Sprintf("slow WebSocket consumers: %d messages of %d KiB pushed as fast as the server's send() returns, read at 2 MiB/s through an 8 KiB receive buffer",
		WSMessages, load.DefaultWSMessageSize>>10),
	Paths: []Path{Direct, NginxWS},
	Server: func(r Row) (podspec.Server, bool) {
		return r.Server, r.WebSocket
	},
	Apply: func(c *Condition, n int) {
		c.Downloads, c.SlowKind, c.ReadRate = n, load.KindWS, load.DefaultDownloadRate
		c.BodyBytes = WSMessages * load.DefaultWSMessageSize
		c.MayExhaust = true // a server without backpressure holds every unsent message
		c.AppLimits = &podspec.Limits{CPUs: podspec.DefaultAppCPUs, Memory: QueuingAppMemory}
	}}

// QueuingAppMemory is the app's memory limit under slow WebSocket consumers
// and a server's own HTTP/2: twice article A's 128 MiB, so that a server
// that queues what its clients have not read is measured, not cut short
// by the OOM killer. Daphne, which queues, peaked at 115 MiB with 2
// consumers of 16 MiB; Hypercorn's own HTTP/2 reached article A's 128
// MiB with 4 slow streams of 16 MiB.
const QueuingAppMemory = 2 * podspec.DefaultAppMemory

// WSMessages is how many messages /ws pushes to each consumer: 16 MiB in
// all, article A's download.
const WSMessages = load.DefaultWSMessages

// MatrixColumns and MatrixPaths span the matrix with MatrixRows.
var (
	MatrixColumns = slices.Concat([]Column{SlowRead, SlowUpload, SlowHeaders, Silent, OutliveTimeout, Hang, SlowTLS, H2SlowRead, H2ManyStreams, WSSlowConsumer}, FaultColumns)
	MatrixPaths   = []Path{Direct, NginxOff, NginxOn}
)

// MatrixCell is one cell: a row on a path under a column's clients, and
// the condition that measures it.
type MatrixCell struct {
	Row, Column, Path string
	Condition         Condition
}

// MatrixID is a cell's own condition id: matrix-<column>-<row>-<path>.
func MatrixID(col Column, r Row, p Path) string {
	return fmt.Sprintf("matrix-%s-%s-%s", col.ID, r.ID, p.ID)
}

// CapacityID is a capacity step's own condition id:
// capacity-<column>-<row>-<n>.
func CapacityID(col Column, r Row, n int) string {
	return fmt.Sprintf("capacity-%s-%s-%d", col.ID, r.ID, n)
}

// Cell is row r's cell on path p under n of col's clients, named by
// MatrixID; false when col skips r.
func Cell(col Column, r Row, p Path, n int) (Condition, bool) {
	return cell(MatrixID(col, r, p), col, r, p, n)
}

// cell is the condition of row r on path p under n of col's clients,
// false when col skips r.
func cell(id string, col Column, r Row, p Path, n int) (Condition, bool) {
	s, ok := col.server(r)
	if !ok {
		return Condition{}, false
	}
	c := Condition{ID: id, Server: s, Path: p, TCP: Stock, ClientCPUs: ClientCPUsFor(n)}
	col.Apply(&c, n)
	return c, true
}

// ClientCPUsPerClient is the client's CPU per slow client beyond
// article A's load. A 0.20-core client keeps 8 paced readers of 2 MiB/s
// and /fast on schedule (requester lag at most 3 ms), but not 12 (16 ms,
// its quota throttled in 21 % of periods) nor 16 (37 ms, 98 %), which
// stalled /fast in the client itself while the app used 2 % of a core
// (reports/measurements.md).
const ClientCPUsPerClient = 0.05

// ClientCPUsFor is the client's CPU quota for n slow clients: 0 (article
// A's 0.20 core) up to 4 of them, 0.05 core each beyond.
func ClientCPUsFor(n int) float64 {
	if n <= 4 {
		return 0
	}
	return ClientCPUsPerClient * float64(n)
}

// MatrixCells are every row on every path under every column; a cell
// article A's table holds already reads article A's condition.
func MatrixCells() []MatrixCell {
	var out []MatrixCell
	for _, col := range MatrixColumns {
		for _, r := range MatrixRows {
			for _, p := range col.paths() {
				if c, ok := cell(MatrixID(col, r, p), col, r, p, col.Clients); ok && col.runs(r, p) {
					out = append(out, MatrixCell{Row: r.ID, Column: col.ID, Path: p.ID, Condition: reuse(c)})
				}
			}
		}
	}
	return out
}

// CapacitySteps are the numbers of concurrent slow clients a row is
// stepped through, directly: 0, 1, 2, … up to its declared concurrency
// plus one, at most MatrixStepLimit; a row that declares none is stepped
// densely to 4 and then at 6, 8, 12 and 16 (bracketSteps, up to
// MatrixStepLimit), so its stall, if any, is bracketed. near steps only
// the declared concurrency and the step below it (none for a row that
// declares none): what shows that the row stalls exactly there.
func CapacitySteps(r Row, near bool) []int {
	if near {
		if r.Concurrency == 0 {
			return nil
		}
		return []int{r.Concurrency - 1, min(r.Concurrency, MatrixStepLimit)}
	}
	var out []int
	if r.Concurrency > 0 {
		for n := 0; n <= min(r.Concurrency+1, MatrixStepLimit); n++ {
			out = append(out, n)
		}
		return out
	}
	for n := 0; n <= MatrixStepLimit; n++ {
		if n <= 4 || slices.Contains(bracketSteps, n) {
			out = append(out, n)
		}
	}
	return out
}

// bracketSteps are the steps past 4 of a row that declares no limit.
var bracketSteps = []int{6, 8, 12, 16}

// CapacityStep is one step of a row's capacity: n concurrent slow clients
// of a column, direct.
type CapacityStep struct {
	Row, Column string
	Clients     int
	Condition   Condition
}

// Capacity are the steps of rows under col (CapacitySteps), on col's
// path without a front door (direct, or direct-tls for slow TLS); a step
// another table holds (article A's, or the matrix's own cell) reads that
// condition. A framework or version row is not stepped: its twin's
// steps are its server's capacity. A row that holds its readers' bodies (Row.HoldsBodies)
// may meet the OOM killer past a step: the kill is that step's outcome.
func Capacity(col Column, rows []Row, near bool) []CapacityStep {
	var out []CapacityStep
	i := slices.IndexFunc(col.paths(), func(p Path) bool { return p.Proxy == nil })
	if i < 0 {
		return nil // a column only a front door speaks (HTTP/2)
	}
	p := col.paths()[i]
	for _, r := range rows {
		if r.Twin != "" {
			continue
		}
		for _, n := range CapacitySteps(r, near) {
			if c, ok := cell(CapacityID(col, r, n), col, r, p, n); ok {
				// Past the column's own clients, a step may exhaust a
				// server that holds bodies; the column's cell is reused
				// as it is.
				c.MayExhaust = c.MayExhaust || r.HoldsBodies && n > col.Clients
				out = append(out, CapacityStep{Row: r.ID, Column: col.ID, Clients: n, Condition: reuse(c)})
			}
		}
	}
	return out
}

// reuse is c, or the condition of article A's table or of the matrix that
// runs the same cell.
func reuse(c Condition) Condition {
	for _, d := range ArticleA {
		if c.sameCell(d) {
			return d
		}
	}
	for _, col := range MatrixColumns {
		for _, r := range MatrixRows {
			if d, ok := cell(MatrixID(col, r, c.Path), col, r, c.Path, col.Clients); ok && col.runs(r, c.Path) && c.ID != d.ID && c.sameCell(d) {
				return reuse(d)
			}
		}
	}
	return c
}

// MatrixVerdicts are the matrix's verdicts: verdict.Matrix's,
// verdict.SlowClients' and verdict.SlowClientsMeasured's about named
// cells; for every row of MatrixRows that it is protected behind NGINX
// buffering on under slow readers; for every other cell of the newer
// columns, what its verdict.CellRules says; for a framework or version
// cell, its twin's rule (frameworkVerdicts, versionVerdicts), which the
// twin's own cell is asserted too; and both sides of each cell where the
// Gunicorn releases differ (verdict.VersionChanges).
func MatrixVerdicts() []verdict.Verdict {
	named := slices.Concat(verdict.Matrix, verdict.SlowClients, verdict.SlowClientsMeasured, verdict.FrontDoorVerdicts(MatrixRows[0].ID))
	read := map[string]bool{}
	for _, v := range named {
		for _, id := range v.Check.Needs() {
			read[id] = true
		}
	}
	vs := named
	twins := map[string]bool{}
	for _, r := range MatrixRows {
		twins[r.Twin] = true
	}
	cells := MatrixCells()
	ids := cellIDs(cells)
	for _, c := range cells {
		switch r := matrixRows[c.Row]; {
		case r.Framework != "":
			vs = append(vs, frameworkVerdicts(c, r, ids)...)
		case r.Gunicorn != "":
			vs = append(vs, versionVerdicts(c, r)...)
		case c.Column == SlowRead.ID:
			if c.Path == NginxOn.ID {
				vs = append(vs, verdict.NginxOnProtected(c.Row, c.Condition.ID))
			} else if twins[c.Row] && slices.Contains(FrameworkPaths, c.Path) && !read[c.Condition.ID] {
				// A framework or version row's twin: its class, which its
				// framework and version rows are asserted to share.
				rule, ok := verdict.TwinRule(c.Column, c.Row, c.Path)
				if !ok {
					panic("engine: no verdict.SlowReadRules rule for " + c.Condition.ID)
				}
				vs = append(vs, verdict.CellVerdict(rule, c.Row, c.Path, c.Condition.ID))
			}
		case IsFaultColumn(c.Column):
			vs = append(vs, faultVerdicts(c)...)
		case read[c.Condition.ID]:
		default:
			r, ok := verdict.RuleFor(c.Column, c.Row, c.Path)
			if !ok {
				panic("engine: no verdict.CellRule for " + c.Condition.ID)
			}
			vs = append(vs, verdict.CellVerdict(r, c.Row, c.Path, c.Condition.ID))
			vs = append(vs, verdict.Companions(r, c.Row, c.Path, c.Condition.ID)...)
			if c.Column == WSSlowConsumer.ID {
				vs = append(vs, verdict.EveryMessage(c.Row, c.Path, c.Condition.ID))
			}
		}
		// The installed release's side of a cell where the releases
		// differ (verdict.VersionChanges), whatever else reads it.
		if r := matrixRows[c.Row]; r.Twin == "" {
			if ch, ok := verdict.ChangeFor(c.Column, c.Row, c.Path, ""); ok {
				vs = append(vs, verdict.VersionChangeVerdict(ch, "", c.Row, c.Condition.ID))
			}
		}
	}
	return vs
}

// CIMatrixVerdicts are the matrix's verdicts make test asserts (the ci
// plan runs the cells they read): verdict.Matrix's but uWSGI's plain
// generator's stall (its offload twin asserts the same and more),
// verdict.SlowClients, and sync's protection behind buffering on, which
// reads article A's nginx-on-2dl, the front doors' verdicts about sync,
// and one cell of each of issue 32's columns: sync's slow TLS behind
// NGINX's TLS with buffering on, its cell of each HTTP/2 column and
// Daphne's WebSocket cell (CellRules), and one framework cell per
// framework (CIFrameworkRows).
func CIMatrixVerdicts() []verdict.Verdict {
	vs := slices.DeleteFunc(slices.Clone(verdict.Matrix), func(v verdict.Verdict) bool { return v.ID == "uwsgi-generator-direct-stalls" })
	vs = append(vs, verdict.SlowClients...)
	// The front doors' cells for sync, once each: their margins are stark
	// (verdict.FrontDoors).
	vs = append(vs, verdict.FrontDoorVerdicts(MatrixRows[0].ID)...)
	cells := MatrixCells()
	ids := cellIDs(cells)
	for _, c := range cells {
		if c.Column == SlowRead.ID && c.Path == NginxOn.ID && c.Row == MatrixRows[0].ID {
			vs = append(vs, verdict.NginxOnProtected(c.Row, c.Condition.ID))
		}
		// Issue 32's columns, one cell each (its budget). Slow TLS
		// handshakes: NGINX's shield with buffering on, 3.55 to 4.03 ms
		// against the protected line (3 runs, reports/measurements.md);
		// sync's stall when it terminates TLS itself (8.92 to 8.94 s) is
		// sync.yaml's step at 2 slow TLS handshakes in TestStack, the
		// same 2 workers and clients, each run's p95 asserted past the
		// stall line (exampleStacks' stalled). HTTP/2: sync behind NGINX's h2
		// listener with buffering off, stalled by 2 slow HTTP/2 readers
		// (12.0 s against the stall line of 1 s, 3 runs); with buffering
		// on, the temp directory one connection's 128 held streams fill
		// (80.0 MiB against the line of 75, 3 runs, a kill counting as
		// full). The h2c listener's cells and sync's own TLS cell run in
		// make repro.
		ci := c.Row == MatrixRows[0].ID && (c.Column == SlowTLS.ID && c.Path == NginxTLSOn.ID ||
			c.Column == H2SlowRead.ID && c.Path == NginxH2Off.ID || c.Column == H2ManyStreams.ID && c.Path == NginxH2On.ID)
		// WebSockets, once: Daphne directly, which queues what its slow
		// consumers have not read (growth 32.4 to 47.2 MiB against the
		// line of 16, 3 runs).
		ci = ci || c.Column == WSSlowConsumer.ID && c.Row == podspec.Daphne().ID && c.Path == Direct.ID
		if ci {
			// With their companions: sync's h2-slow-read behind buffering
			// off holds both workers (held shares 0.86 to 0.91 against the
			// line of 0.25) and stalls /fast over HTTP/2 too (11.9 to
			// 12.6 s against the stall line of 1 s), 3 runs.
			r, _ := verdict.RuleFor(c.Column, c.Row, c.Path)
			vs = append(vs, verdict.CellVerdict(r, c.Row, c.Path, c.Condition.ID))
			vs = append(vs, verdict.Companions(r, c.Row, c.Path, c.Condition.ID)...)
		}
		if ci && c.Column == WSSlowConsumer.ID {
			vs = append(vs, verdict.EveryMessage(c.Row, c.Path, c.Condition.ID))
		}
		// Issue 34's faults, once: sync's two workers directly, each slow
		// reader cut at 4 MiB (CIFaultCell).
		if c.Condition.ID == CIFaultCell {
			vs = append(vs, faultVerdicts(c)...)
		}
		// One framework cell per framework (CIFrameworkRows), under slow
		// readers directly, where its twin's verdict runs in make test too.
		if c.Column == SlowRead.ID && c.Path == Direct.ID && slices.Contains(CIFrameworkRows, c.Row) {
			vs = append(vs, frameworkVerdicts(c, matrixRows[c.Row], ids)...)
		}
	}
	return vs
}

// faultVerdicts are a fault column's cell c's verdicts: a latency
// cell's against its idle twin (verdict.LatencyVerdicts) and the idle
// twin's delay (verdict.IdleDelayVerdict), a cut's
// (verdict.CutVerdicts), a slow link's (verdict.LinkVerdicts), or the
// class of its slow-read twin (verdict.UnfaultedVerdict).
func faultVerdicts(c MatrixCell) []verdict.Verdict {
	f, _ := FaultByID(c.Condition.Fault)
	l, jitter := f.Delay()
	switch {
	case f.Fast && c.Column == IdleColumn(f).ID:
		return []verdict.Verdict{verdict.IdleDelayVerdict(c.Column, c.Row, c.Path, c.Condition.ID, float64(l.Milliseconds()), float64(jitter.Milliseconds()))}
	case f.Fast:
		rule, ok := verdict.TwinRule(SlowRead.ID, c.Row, c.Path)
		if !ok {
			panic("engine: no verdict.SlowReadRules rule for " + c.Condition.ID)
		}
		return verdict.LatencyVerdicts(rule, c.Column, c.Row, c.Path, c.Condition.ID, MatrixID(IdleColumn(f), matrixRows[c.Row], c.Condition.Path), float64(jitter.Milliseconds()))
	case f.Cut():
		return verdict.CutVerdicts(c.Column, c.Row, c.Path, c.Condition.ID, c.Condition.Path.Proxy != nil)
	case c.Column == SlowUpstream.ID:
		b := float64(c.Condition.BodyBytes)
		return verdict.LinkVerdicts(c.Row, c.Path, c.Condition.ID, b/SlowLinkRate, b/c.Condition.ReadRate)
	}
	rule, ok := verdict.TwinRule(SlowRead.ID, c.Row, c.Path)
	if !ok {
		panic("engine: no verdict.SlowReadRules rule for " + c.Condition.ID)
	}
	return []verdict.Verdict{verdict.UnfaultedVerdict(rule, c.Column, c.Row, c.Path, c.Condition.ID)}
}

// CIFaultCell is the fault cell make test runs: sync's two workers,
// directly, each of article A's slow readers cut at 4 MiB. Its
// verdicts are stark (reports/measurements.md); the other fault cells
// run in make repro.
var CIFaultCell = MatrixID(ResetMidDownload, matrixRows[podspec.GunicornSync(2).ID], Direct)

// frameworkVerdicts are framework cell c's verdicts on row r: its twin's
// class (verdict.FrameworkVerdict) and, where /fast is not held up, what
// the framework costs on it (verdict.FrameworkCost) against its twin's
// cell; cellIDs are the matrix's cells' conditions (cellIDs).
func frameworkVerdicts(c MatrixCell, r Row, cellIDs map[[3]string]string) []verdict.Verdict {
	rule, ok := verdict.TwinRule(c.Column, r.Twin, c.Path)
	if !ok {
		panic("engine: no rule of twin " + r.Twin + " for framework cell " + c.Condition.ID)
	}
	vs := []verdict.Verdict{verdict.FrameworkVerdict(rule, r.Framework, r.ID, r.Twin, c.Path, c.Condition.ID)}
	twin, ok := cellIDs[[3]string{c.Column, r.Twin, c.Path}]
	if !ok {
		panic("engine: framework cell " + c.Condition.ID + " has no twin cell")
	}
	if v, ok := verdict.FrameworkCost(rule, r.Framework, r.ID, c.Path, c.Condition.ID, twin); ok {
		vs = append(vs, v)
	}
	return vs
}

// Own are the conditions of cells or steps not held by article A's table,
// once each, in order: what the matrix runs itself.
func Own(cs []Condition) []Condition {
	var out []Condition
	for _, c := range cs {
		if !slices.ContainsFunc(ArticleA, func(d Condition) bool { return d.ID == c.ID }) &&
			!slices.ContainsFunc(out, func(d Condition) bool { return d.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out
}

// cellIDs are cells' conditions by column, row and path.
func cellIDs(cells []MatrixCell) map[[3]string]string {
	ids := map[[3]string]string{}
	for _, c := range cells {
		ids[[3]string{c.Column, c.Row, c.Path}] = c.Condition.ID
	}
	return ids
}
