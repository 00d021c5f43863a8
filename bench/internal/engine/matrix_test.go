package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/tlsca"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

func TestMatrixRowsMatchTheVerdicts(t *testing.T) {
	var ids []string
	for _, r := range MatrixRows {
		assert.Equal(t, r.Server.ID, r.ID)
		ids = append(ids, r.ID)
	}
	for _, id := range verdict.MatrixRowIDs {
		assert.Contains(t, ids, id, "verdict.Matrix names a row the engine does not have")
	}
	require.NoError(t, ValidateAll(Own(matrixPlan(MatrixPaths, MatrixRows, false))))
	vs := MatrixVerdicts()
	require.NoError(t, verdict.Validate(vs))
	// Every cell of the newer columns is asserted once: by a named
	// verdict, or by its rule.
	asserted := map[string]int{}
	for _, v := range vs {
		for _, id := range v.Check.Needs() {
			asserted[id]++
		}
	}
	for _, c := range MatrixCells() {
		if c.Column != SlowRead.ID {
			assert.Positive(t, asserted[c.Condition.ID], "no verdict reads %s", c.Condition.ID)
		}
	}
	named := map[string]bool{}
	for _, v := range slices.Concat(verdict.Matrix, verdict.SlowClients, verdict.SlowClientsMeasured) {
		for _, id := range v.Check.Needs() {
			if strings.HasPrefix(id, "matrix-") && !strings.HasPrefix(id, "matrix-slow-read-") {
				named[id] = true
			}
		}
	}
	assert.Len(t, named, 7+8, "the cells the named verdicts of the newer columns read")
	rules := 0
	for _, v := range vs {
		if strings.HasSuffix(v.ID, "-as-framework-free") || strings.HasSuffix(v.ID, "-framework-cost") {
			continue // TestFrameworkVerdicts
		}
		if strings.Contains(v.ID, "-"+podspec.GunicornBookworm+"-") {
			continue // TestVersionVerdicts
		}
		// Once each: an idle column's id begins with its fault's.
		if slices.ContainsFunc(MatrixColumns[1:], func(col Column) bool { return strings.HasPrefix(v.ID, col.ID+"-") }) {
			rules++
		}
	}
	// 98 cells of the newer columns on the article's paths, plus the sync
	// row behind each front door under slow headers and silent
	// connections and behind each upload door under slow uploads, plus
	// every row on the 3 TLS paths under slow TLS handshakes and on the
	// 2 HTTP/2 paths under each HTTP/2 column (Hypercorn too, and on
	// its own HTTP/2 as well), and the 5 WebSocket rows on 2 paths. The
	// rows of every column are all but the servers that run only some
	// columns (Row.Only: the protocol columns' 3, issue 33's 5), and
	// the version rows (TestVersionVerdicts). Issue 33's 7 servers run
	// the other 3 HTTP/1.1 columns on their paths: 4, 3 and 3.
	every := len(slices.DeleteFunc(slices.Clone(MatrixRows), func(r Row) bool { return r.Only != nil || r.Gunicorn != "" }))
	assert.Equal(t, 9, every)
	newer := 98 + 2*len(FrontDoors) + len(UploadDoors) + 3*every + 2*(2*(every+1)+1) + 5*2 + len(h2cRows)*2*2 + hangCells + 7*(4+3+3)
	// Each WebSocket cell has a second verdict: every message came.
	// The HTTP/2 cells have companions (verdict.Companions), on the h2
	// rows' every+1: behind buffering off, the 5 rows that send
	// themselves hold every worker and stall /fast over HTTP/2 too under
	// each column (2 each), the rest keep /fast over HTTP/2 under the
	// stall line (1 each) but Hypercorn and gevent under many streams
	// (neither side of it); behind buffering on, slow readers hold no
	// worker and leave /fast over HTTP/2 under the line (2 each).
	// On the h2c paths (sync, gthread, gevent), /fast goes over HTTP/2
	// alone: no companion of the series; sync's and gthread's workers
	// held behind buffering off under each column, none under slow
	// readers behind buffering on.
	h2Rows := every + 1
	companions := 2*len(sendsItselfRows) + (h2Rows - len(sendsItselfRows)) + 2*h2Rows + // h2-slow-read
		2*len(sendsItselfRows) + (h2Rows - len(sendsItselfRows) - 2) + // h2-many-streams
		2 + 3 + 2 + // h2c: held under each column (sync, gthread), free under slow readers (3 rows)
		2 + 1 + 1 + 3 + 3 + // hang: sync (/fast stalled, timeouts), uWSGI (/fast), Uvicorn's worker (timeouts), gthread and gevent (/fast, no timeout, answered after the sleep)
		len(verdict.VersionChanges) // the installed release's side of each cell where the Gunicorn releases differ
	// The fault columns (FaultRows on 3 paths each): 4 verdicts a cell
	// (cut, next served, next protected, no descriptor left), with what
	// the app's records say (seen and freed: 2; taken whole or kept
	// from the app: 1), and behind NGINX its descriptors and temp files
	// (2, the temp files a download's only): a download's paths 6 + 8 + 7,
	// an upload's 6 + 6 + 7.
	// A slow link: behind buffering on, the write and /fast against its
	// line (2); behind buffering off, /fast (1).
	// Sliced reads and a slow close: the slow-read cell's class (1 a
	// cell). Latency: every request served, and /fast over its idle
	// twin's (2 a cell); each idle twin, the hop's delay (1).
	faults := len(FaultRows) * (6 + 8 + 7 + 6 + 6 + 7 + 2 + 1 + 3 + 3 + 2*3*2 + 2*3)
	assert.Equal(t, newer-len(named)+5*2+companions+faults, rules, "one rule verdict for every other cell of the %d in the newer columns, with %d companions", newer, companions)
}

// hangCells are the Hang column's: the 4 Gunicorn rows under --timeout
// and uWSGI's plain generator under --harakiri, directly.
const hangCells = 4 + 1

// sendsItselfRows are the rows whose workers send their responses
// themselves (verdict's sendsItself).
var sendsItselfRows = []string{"gunicorn-sync-2", "gunicorn-gthread-1x4", "uwsgi-2-generator", "uwsgi-2-generator-offload-2", "uwsgi-2-file"}

// Every condition a matrix verdict reads runs under full, as article A's
// condition or the matrix's own; under ci, every one that
// verdict.Matrix, verdict.SlowClients and the slow readers' nginx-on
// verdicts read.
func TestMatrixVerdictsReadPlannedConditions(t *testing.T) {
	for profile, p := range Plans {
		planned := slices.Concat(p.Conditions, p.Matrix)
		vs := MatrixVerdicts()
		if profile == "ci" {
			vs = CIMatrixVerdicts()
		}
		for _, v := range vs {
			for _, id := range v.Check.Needs() {
				assert.Truef(t, slices.ContainsFunc(planned, func(c Condition) bool { return c.ID == id }),
					"%s: verdict %s reads %s, which the profile does not run", profile, v.ID, id)
			}
		}
		streaming := verdict.Streaming
		if profile == "ci" {
			streaming = slices.DeleteFunc(slices.Clone(streaming), func(v verdict.Verdict) bool {
				return slices.Contains([]string{"stream-direct-prompt", "stream-nginx-off-prompt", "stream-xaccel-prompt", "stream-gzip-buffering-off-prompt"}, v.ID)
			})
		}
		for _, v := range streaming {
			for _, id := range v.Check.Needs() {
				assert.Truef(t, slices.ContainsFunc(p.Streams, func(c Condition) bool { return c.ID == id }),
					"%s: verdict %s reads %s, which the profile does not run", profile, v.ID, id)
			}
		}
	}
}

func TestStreamTable(t *testing.T) {
	require.NoError(t, ValidateAll(StreamTable))
	var ids []string
	for _, c := range StreamTable {
		ids = append(ids, c.ID)
		spec := c.Load("http://127.0.0.1:8080", "x")
		require.NotNil(t, spec.Stream)
		assert.Equal(t, c.Stream.XAccelNo, strings.Contains(spec.Stream.URL, "xaccel=no"), c.ID)
		assert.Zero(t, spec.BaselineRequests, "a stream's run ends with its window")
		assert.Equal(t, 40, spec.FastCount, "/fast for as long as the stream")
	}
	assert.Equal(t, verdict.StreamIDs, ids)
	gz, err := NginxOnGzip.Proxy.Render()
	require.NoError(t, err)
	assert.Contains(t, gz, "gzip_types text/event-stream;")
}

// The worker-timeout column runs the Gunicorn rows only, each with
// --timeout 5, one download of 16 MiB at 1 MiB/s.
func TestOutliveTimeoutColumn(t *testing.T) {
	var rows []string
	for _, c := range MatrixCells() {
		if c.Column != OutliveTimeout.ID || matrixRows[c.Row].Gunicorn != "" {
			continue // the version rows: TestVersionRows
		}
		rows = append(rows, c.Row)
		assert.Contains(t, c.Condition.Server.Cmd, "--timeout")
		assert.Equal(t, 1, c.Condition.Downloads)
		assert.Equal(t, float64(1<<20), c.Condition.ReadRate)
		assert.Contains(t, []string{Direct.ID, NginxOn.ID}, c.Path)
	}
	assert.Equal(t, []string{"gunicorn-sync-2", "gunicorn-sync-2", "gunicorn-gthread-1x4", "gunicorn-gthread-1x4",
		"gunicorn-gevent-2", "gunicorn-gevent-2", "gunicorn-uvicorn-2", "gunicorn-uvicorn-2"}, rows)
}

// Each cell's load is valid against its own pod's entry point; a TLS
// path's is https, with /fast and the slow TLS clients going there.
func TestSlowKindLoads(t *testing.T) {
	ca, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	for _, c := range MatrixCells() {
		pod := c.Condition.Pod("img")
		require.NoError(t, pod.Validate(), c.Condition.ID)
		base := pod.URL("")
		spec := c.Condition.Load(base, "x")
		if pod.TLS {
			spec.CAPEM = string(ca.CertPEM)
		}
		require.NoError(t, spec.Validate(), c.Condition.ID)
		h2c := strings.Contains(c.Path, "h2c")
		assert.Equal(t, strings.Contains(c.Path, "h2") && !h2c, spec.FastH2, "%s: /fast over HTTP/2 too where the entry point speaks both", c.Condition.ID)
		assert.Equal(t, h2c, spec.H2Only, "%s: /fast over HTTP/2 alone where the entry point takes nothing else", c.Condition.ID)
		assert.Equal(t, h2c, pod.H2C(), c.Condition.ID)
		switch c.Column {
		case SlowUpload.ID:
			assert.Equal(t, base+"/upload", spec.UploadURL)
			assert.EqualValues(t, 16<<20, spec.UploadSize)
		case SlowHeaders.ID, Silent.ID:
			assert.Equal(t, 9500*time.Millisecond, spec.HoldFor)
		case SlowTLS.ID:
			assert.True(t, pod.TLS)
			assert.Equal(t, "https://127.0.0.1:"+map[bool]string{true: "8000", false: "8080"}[c.Path == DirectTLS.ID], base)
			assert.Equal(t, base, spec.TLSURL)
			assert.Equal(t, base+"/fast", spec.FastURL)
			assert.Equal(t, 9500*time.Millisecond, spec.HoldFor)
			assert.Equal(t, c.Path == DirectTLS.ID, strings.HasSuffix(pod.Server.ID, "-tls"), "the server terminates TLS itself only directly")
		case WSSlowConsumer.ID:
			assert.Equal(t, load.WSURLFor(base, 256, 64<<10), spec.WSURL)
			assert.True(t, strings.HasPrefix(spec.WSURL, "ws://127.0.0.1:"))
			assert.EqualValues(t, 16<<20, spec.WSMessages*spec.WSMessageSize)
			assert.EqualValues(t, QueuingAppMemory, pod.App.Memory, "room for a server that queues")
			if c.Path == NginxWS.ID {
				conf, err := pod.Proxy.Nginx.Render()
				require.NoError(t, err)
				assert.Contains(t, conf, "location = /ws {")
			}
		case H2SlowRead.ID, H2ManyStreams.ID:
			assert.Equal(t, !h2c, pod.TLS)
			assert.Equal(t, base+"/fast", spec.FastURL, "/fast on the same listener")
			assert.Equal(t, c.Condition.H2Streams, spec.H2Streams)
			assert.Equal(t, c.Condition.Records(), c.Condition.Downloads*spec.H2Streams)
			assert.Contains(t, spec.LargeURL, base+"/large?size=")
			if c.Path == DirectH2.ID {
				assert.Equal(t, "https://127.0.0.1:8000", base, "Hypercorn's own TLS listener, h2 by ALPN")
				assert.Equal(t, []string{"--certfile", nginxconf.TLSCert, "--keyfile", nginxconf.TLSKey}, pod.Server.Cmd[len(pod.Server.Cmd)-5:len(pod.Server.Cmd)-1])
				assert.Nil(t, pod.Proxy)
				if c.Column == H2ManyStreams.ID {
					assert.Equal(t, HypercornMaxStreams, spec.H2Streams, "as many as Hypercorn allows")
				}
				continue
			}
			conf, err := pod.Proxy.Nginx.Render()
			require.NoError(t, err)
			if h2c {
				assert.Equal(t, "http://127.0.0.1:8080", base, "NGINX's plain listener, h2 by prior knowledge")
				assert.Contains(t, conf, "listen 127.0.0.1:8080 http2;")
				assert.Contains(t, h2cRows, c.Row)
				continue
			}
			assert.Equal(t, "https://127.0.0.1:8080", base, "NGINX's TLS listener, h2 by ALPN")
			assert.Contains(t, conf, " ssl http2")
		}
		if c.Column != SlowTLS.ID && c.Column != H2SlowRead.ID && c.Column != H2ManyStreams.ID {
			assert.False(t, pod.TLS, c.Condition.ID)
		}
	}
	bad := MatrixCells()[0].Condition
	bad.SlowKind = "slowloris"
	assert.ErrorContains(t, bad.Validate(), `SlowKind "slowloris"`)
}

// The verdicts name the matrix's conditions as the engine's tables do.
func TestVerdictsNameTheEnginesCells(t *testing.T) {
	for _, c := range MatrixCells() {
		assert.Equal(t, c.Condition.ID, verdict.CellID(c.Column, c.Row, c.Path))
	}
	for _, st := range Capacity(SlowRead, MatrixRows, false) {
		if strings.HasPrefix(st.Condition.ID, "capacity-") {
			assert.Equal(t, st.Condition.ID, verdict.CapacityStepID(st.Row, st.Clients))
		}
	}
}

func TestMatrixCellsReuseArticleA(t *testing.T) {
	cells := slices.DeleteFunc(MatrixCells(), func(c MatrixCell) bool { return matrixRows[c.Row].Gunicorn != "" }) // TestVersionRows
	// slow read: every row on 3 paths and the front doors; headers and
	// silent: every row on 3 paths, the sync row behind the front doors;
	// uploads on 4, the sync row behind the upload doors; the worker
	// timeout on the 4 Gunicorn rows, 2 paths; slow TLS handshakes on
	// the 3 TLS paths; handlers that hang on the 4 Gunicorn rows and
	// uWSGI's generator, directly; the 2 HTTP/2 columns on their 2 paths, Hypercorn
	// too, and on its own HTTP/2; the 5 rows that take WebSockets on 2
	// paths (3 of them run only the protocol columns); 3 rows on
	// NGINX's 2 h2c paths under each HTTP/2 column; and the 7 rows that
	// run some columns only (Row.Only) but the HTTP/1.1 ones among them
	// (issue 33's 5, Daphne and Hypercorn), on slow reads' paths, on
	// slow uploads' 4 and on 3 of slow headers and silent connections.
	every := len(slices.DeleteFunc(slices.Clone(MatrixRows), func(r Row) bool { return r.Only != nil || r.Gunicorn != "" }))
	readOnly := len(slices.DeleteFunc(slices.Clone(serverRows), func(r Row) bool { return r.Only == nil || !slices.Contains(r.Only, SlowRead.ID) }))
	assert.Equal(t, 7, readOnly)
	// The framework rows: 9 on the article's 3 paths under slow reads and
	// slow uploads. The fault columns: FaultRows on 3 paths each, on 2
	// under a slow link (behind NGINX only), and the 2 latency columns'
	// idle twins on 3.
	require.Len(t, cells, every*(3+len(FrontDoors)+2*3+4+3+2*2)+2*len(FrontDoors)+len(UploadDoors)+4*2+5*2+2*3+len(h2cRows)*2*2+
		readOnly*(3+len(FrontDoors)+4+3+3)+hangCells+9*3+9*3+len(FaultRows)*(3+3+2+3+3+4*3))
	id := map[[2]string]string{}
	for _, c := range cells {
		if c.Column == SlowRead.ID {
			id[[2]string{c.Row, c.Path}] = c.Condition.ID
		}
	}
	assert.Equal(t, "direct-2dl", id[[2]string{"gunicorn-sync-2", "direct"}])
	assert.Equal(t, "nginx-on-2dl", id[[2]string{"gunicorn-sync-2", "nginx-on"}])
	assert.Equal(t, "gthread-2dl", id[[2]string{"gunicorn-gthread-1x4", "direct"}])
	assert.Equal(t, "matrix-slow-read-gunicorn-gthread-1x4-nginx-on", id[[2]string{"gunicorn-gthread-1x4", "nginx-on"}])
	assert.Equal(t, "matrix-slow-read-uvicorn-2-direct", id[[2]string{"uvicorn-2", "direct"}])
}

func TestCapacitySteps(t *testing.T) {
	sync, gthread, gevent := MatrixRows[0], MatrixRows[1], MatrixRows[2]
	assert.Equal(t, []int{0, 1, 2, 3}, CapacitySteps(sync, false))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, CapacitySteps(gthread, false))
	assert.Equal(t, []int{0, 1, 2, 3, 4, 6, 8, 12, 16}, CapacitySteps(gevent, false))
	assert.Equal(t, []int{3, 4}, CapacitySteps(gthread, true))
	assert.Nil(t, CapacitySteps(gevent, true))

	// A step another table holds reads its condition: 0, 1 and 2 sync
	// clients are article A's, 2 gevent clients the matrix's own cell.
	var ids []string
	for _, st := range Capacity(SlowRead, []Row{sync, gevent}, false) {
		ids = append(ids, st.Condition.ID)
	}
	assert.Equal(t, []string{"direct-0dl", "direct-1dl", "direct-2dl", "capacity-slow-read-gunicorn-sync-2-3",
		"capacity-slow-read-gunicorn-gevent-2-0", "capacity-slow-read-gunicorn-gevent-2-1", "matrix-slow-read-gunicorn-gevent-2-direct",
		"capacity-slow-read-gunicorn-gevent-2-3", "capacity-slow-read-gunicorn-gevent-2-4", "capacity-slow-read-gunicorn-gevent-2-6",
		"capacity-slow-read-gunicorn-gevent-2-8", "capacity-slow-read-gunicorn-gevent-2-12", "capacity-slow-read-gunicorn-gevent-2-16"}, ids)

	// The ci plan runs every row direct and behind buffering on, but for
	// article A's cells, and the steps the capacity verdicts read.
	// The ci plan runs every row directly but sync's and gthread's
	// (article A's) and uWSGI's plain generator, the 7 cells the
	// slow-client verdicts read, sync behind every front door, one cell
	// of each of issue 32's columns (sync's slow TLS behind NGINX's TLS
	// with buffering on, its slow HTTP/2 readers behind NGINX's h2
	// listener with buffering off, many streams with it on, Daphne's
	// WebSocket cell) and gthread's steps at 3 and 4. Issue 33's rows
	// (Row.Only: slow reads) run directly, with Daphne and Hypercorn:
	// every row but gevent-websocket's (WebSockets only) and article A's
	// 2 and uWSGI's plain generator; one framework cell per framework
	// (CIFrameworkRows); and one fault cell (CIFaultCell).
	ci := Plans["ci"].Matrix
	assert.Len(t, ci, len(serverRows)-1-3+len(FrontDoors)+7+1+2+1+2+len(podspec.Frameworks)+1) // and CIFaultCell
	assert.True(t, slices.ContainsFunc(ci, func(c Condition) bool { return c.ID == CIFaultCell && c.Fault == ResetDownload.ID }))
	assert.Equal(t, "capacity-slow-read-gunicorn-gthread-1x4-4", ci[len(ci)-1].ID)
	assert.False(t, slices.ContainsFunc(ci, func(c Condition) bool { return c.ID == "matrix-slow-read-uwsgi-2-generator-direct" }))
	require.NoError(t, ValidateAll(ci))
}

// A condition cannot mix TLS and plain: the path's id, its TLS and the
// slow kind agree, or Validate names the mismatch before anything starts.
func TestTLSConditionsAgree(t *testing.T) {
	c, ok := Cell(SlowTLS, MatrixRows[0], DirectTLS, 2)
	require.True(t, ok)
	require.NoError(t, c.Validate())
	for name, tc := range map[string]struct {
		mod  func(*Condition)
		want string
	}{
		"direct-tls without TLS":     {func(c *Condition) { c.Path = Path{ID: DirectTLS.ID} }, "want direct without either, direct-tls with TLS"},
		"direct with TLS":            {func(c *Condition) { c.Path = Path{ID: Direct.ID, TLS: true} }, "want direct without either, direct-tls with TLS"},
		"direct-tls with HTTP/2":     {func(c *Condition) { c.Path = Path{ID: DirectTLS.ID, TLS: true, HTTP2: true} }, "or direct-h2 with both"},
		"direct-h2, HTTP/1.1 server": {func(c *Condition) { c.Path = DirectH2 }, "which speaks HTTP/1.1 only"},
		"TLS path, plain NGINX":      {func(c *Condition) { p := NginxOn; p.TLS = true; c.Path = p }, "front door's TLS is false"},
		"slow TLS on a plain path":   {func(c *Condition) { c.Path = NginxOn }, "want a TLS path"},
		"slow headers over TLS":      {func(c *Condition) { c.SlowKind = load.KindHeaders }, "whose clients speak TLS"},
		"a stream over TLS":          {func(c *Condition) { c.Downloads, c.Stream = 0, &Stream{Events: 1, GapMs: 10} }, "want a plain path"},
		"a server without TLS flags": {func(c *Condition) { c.Server.Cmd = []string{"./serve.sh"} }, "Path direct-tls: podspec: TLS"},
	} {
		bad := c
		tc.mod(&bad)
		assert.ErrorContains(t, bad.Validate(), tc.want, name)
	}
	plain, ok := Cell(SlowHeaders, MatrixRows[0], Direct, 2)
	require.True(t, ok)
	withTLS := plain
	withTLS.Path.TLS = true
	assert.False(t, plain.sameCell(withTLS), "TLS is part of a cell")
}

// The exhausted line sits just under NGINX's temp directory, the tmpfs
// the proxy's config and pid file share: a spill at it is a full
// directory, and one of the slow readers' 64 MiB is not.
func TestExhaustedLineIsAFullTempDirectory(t *testing.T) {
	room := float64(podspec.ProxyTmpfsBytes) / (1 << 20)
	assert.Less(t, float64(verdict.ExhaustedSpillMiB), room)
	assert.Greater(t, float64(verdict.ExhaustedSpillMiB), 0.9*room)
	assert.Greater(t, float64(verdict.ExhaustedSpillMiB), float64(H2ReadStreams*2*load.DefaultLargeSize)/(1<<20), "the slow readers' own spill is under it")
}

// TestPlanBaseline: the raw-exchange baseline follows a run without a
// slow client under "full" only; a run with one never takes it.
func TestPlanBaseline(t *testing.T) {
	idle, loaded := Pick(ArticleA, "direct-0dl")[0], Pick(ArticleA, "direct-2dl")[0]
	assert.Equal(t, load.DefaultBaselineRequests, Plans["full"].Load(idle, "http://pod", "x").BaselineRequests)
	assert.Zero(t, Plans["ci"].Load(idle, "http://pod", "x").BaselineRequests, "ci takes no baseline")
	assert.Zero(t, Plans["full"].Load(loaded, "http://pod", "x").BaselineRequests)
	// The rest of the load is the condition's own.
	full, ci := Plans["full"].Load(idle, "http://pod", "x"), Plans["ci"].Load(idle, "http://pod", "x")
	ci.BaselineRequests = full.BaselineRequests
	assert.Equal(t, full, ci)
}
