package engine

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stackfile"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

func loadStack(t *testing.T, name string) StackCheck {
	t.Helper()
	f, err := stackfile.Load("../../../fixtures/stacks/" + name)
	require.NoError(t, err)
	sc, err := NewStackCheck(f)
	require.NoError(t, err)
	return sc
}

// An example stack's conditions are valid and aim the load at the team's
// paths on the team's server.
func TestStackConditions(t *testing.T) {
	sc := loadStack(t, "sync.yaml").WithImage("wsgilab-stack:abc")
	assert.Equal(t, "2 sync workers", sc.Info.Describe())
	assert.Equal(t, 2, sc.Row.Concurrency)
	require.Len(t, sc.Behaviours, 2)
	b := sc.Behaviours[0]
	assert.Equal(t, SlowRead.ID, b.Column.ID)
	assert.Equal(t, []int{1, 2, 3}, b.Steps())

	base, step := sc.Baseline(), sc.Step(b, 2)
	for _, c := range []Condition{base, step} {
		require.NoError(t, c.Validate())
	}
	assert.Equal(t, "stack-shop-sync-baseline", base.ID)
	assert.Equal(t, "stack-shop-sync-slow-read-2", step.ID)
	assert.Equal(t, []string{"python3", "-m", "gunicorn", "--bind", "127.0.0.1:8000", "--workers", "2", "shop:app"}, step.Server.Cmd)
	assert.Equal(t, "wsgilab-stack:abc", step.Pod("lab:1").Server.Image)
	spec := step.Load("http://127.0.0.1:8000", "x")
	assert.Equal(t, "http://127.0.0.1:8000/healthz", spec.FastURL)
	assert.EqualValues(t, load.AnyLength, spec.FastBodyBytes)
	assert.Equal(t, "http://127.0.0.1:8000/export", spec.LargeURL)
	assert.EqualValues(t, 16<<20, spec.LargeSize)
	assert.Equal(t, 2, spec.Downloads)

	// Its slow TLS handshakes: the team's server terminating TLS itself,
	// the fast path over TLS too.
	tb := sc.Behaviours[1]
	assert.Equal(t, SlowTLS.ID, tb.Column.ID)
	tstep := sc.Step(tb, 2)
	require.NoError(t, tstep.Validate())
	assert.Equal(t, DirectTLS.ID, tstep.Path.ID)
	tpod := tstep.Pod("lab:1")
	assert.True(t, tpod.TLS)
	assert.Contains(t, tpod.Server.Cmd, "--certfile")
	assert.Equal(t, "https://127.0.0.1:8000", tpod.URL(""))
	tspec := tstep.Load(tpod.URL(""), "x")
	assert.Equal(t, "https://127.0.0.1:8000/healthz", tspec.FastURL)
	assert.Equal(t, "https://127.0.0.1:8000", tspec.TLSURL)
	assert.Equal(t, load.KindTLS, tspec.SlowKind)
	assert.False(t, sc.Baseline().Path.TLS, "the check's baseline is the plain path's")
	tbase := sc.BaselineOf(tb)
	assert.Equal(t, "stack-shop-sync-slow-tls-0", tbase.ID, "slow TLS has its own, over TLS")
	assert.Equal(t, DirectTLS.ID, tbase.Path.ID)
	assert.Equal(t, 0, tbase.Downloads)
	require.NoError(t, tbase.Validate())
	assert.Equal(t, sc.Baseline().ID, sc.BaselineOf(b).ID)
	assert.Equal(t, []string{tbase.ID}, sc.Verdicts()[1].Check.Needs())

	// The team's own image on its own port, behind nothing; its steps.
	im := loadStack(t, "image/stack.yaml")
	assert.Equal(t, "1 gthread worker x 4 threads", im.Info.Describe())
	p := im.Step(im.Behaviours[0], 1).Pod("lab:1")
	assert.Equal(t, "wsgilab-example/shop:1", p.Server.Image)
	assert.Equal(t, 9000, p.Server.ListenPort())
	assert.Equal(t, "1000:1000", p.Server.User)
	path, status := p.Server.Ready()
	assert.Equal(t, "/healthz", path)
	assert.Equal(t, 200, status)
	require.Len(t, im.Behaviours, 1)
	assert.Equal(t, load.KindSilent, im.Step(im.Behaviours[0], 3).SlowKind)

	// Several behaviours come in the requires block's order.
	f := im.File
	f.Requires.SlowHeaders = 1
	two, err := NewStackCheck(f)
	require.NoError(t, err)
	require.Len(t, two.Behaviours, 2)
	assert.Equal(t, []string{SlowHeaders.ID, Silent.ID}, []string{two.Behaviours[0].Column.ID, two.Behaviours[1].Column.ID})
	assert.Equal(t, 4, two.Row.Concurrency, "the image's 1 x 4 threads, read off its command")

	// Behind NGINX, with the file's limits.
	ng := loadStack(t, "nginx-buffered.yaml")
	c := ng.Step(ng.Behaviours[0], 1)
	require.NoError(t, c.Validate())
	pod := c.Pod("lab:1")
	require.NotNil(t, pod.Proxy)
	assert.True(t, pod.Proxy.Nginx.Buffering)
	assert.EqualValues(t, 128<<20, pod.ProxyLimits.Memory)

	vs := sc.Verdicts()
	require.Len(t, vs, 2)
	assert.Equal(t, "stack-shop-sync-slow-read-requirement", vs[0].ID)
	assert.Equal(t, "stack-shop-sync-slow-tls-requirement", vs[1].ID)
	assert.Equal(t, []string{"stack-shop-sync-baseline"}, vs[0].Check.Needs())
}

// The server's port reaches NGINX's upstream.
func TestStackUpstreamPort(t *testing.T) {
	sc := loadStack(t, "image/stack.yaml")
	sc.Path = NginxOn
	pod := sc.Baseline().Pod("lab:1")
	assert.Equal(t, "127.0.0.1:9000", pod.Proxy.Upstream)
	assert.Equal(t, "127.0.0.1:8000", NginxOn.Proxy.Upstream, "the shared path is not changed")
}

// The verdict's wording, on the matrix of fixtures/report.
func TestStackAdvice(t *testing.T) {
	m, err := OurMatrix()
	require.NoError(t, err)
	step := func(n int, state string, p95 float64) report.StackStep {
		return report.StackStep{Clients: n, State: state, P95Ms: p95}
	}
	claim := func(held int, holds bool) report.Claim {
		return report.Claim{Evaluated: true, Measured: float64(held), Holds: holds}
	}
	sync := report.Stack{Name: "shop-sync", Server: "2 sync workers", Path: "direct", Capacity: 2, Basis: "--workers 2, one request each", CapacityDeclared: true,
		FastP95Ms: 50, Baseline: step(0, "held", 1.6),
		Behaviours: []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 2,
			Steps: []report.StackStep{step(1, "held", 1.7), step(2, "broken", 5900)}}}}
	got := FoldStack(sync, []report.Claim{claim(1, false)}, m)
	assert.False(t, got.Pass)
	assert.Equal(t, "stalls at 2 slow readers", got.Behaviours[0].Text)
	assert.Equal(t, 2, got.Behaviours[0].StallsAt)
	assert.Equal(t, "Your stack (2 sync workers, direct) stalls at 2 slow readers, its capacity (--workers 2, one request each): "+
		"each held a request slot; in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers "+
		"but daphne-1 and waitress-4, which it kept under the stall line, and gunicorn-gthread-1x4, gunicorn-gevent-2, gunicorn-uvicorn-2, uvicorn-2, "+
		"uwsgi-2-file-offload-2, uwsgi-2-gevent-100, uwsgi-2-asyncio-100 and hypercorn-2 were protected on every path.",
		got.Advice)

	ng := sync
	ng.Name, ng.Path = "shop-nginx", "nginx-on"
	ng.Behaviours = []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 2,
		Steps: []report.StackStep{step(1, "held", 2), step(2, "held", 2.3), step(3, "held", 2.4)}}}
	got = FoldStack(ng, []report.Claim{claim(3, true)}, m)
	assert.True(t, got.Pass)
	assert.Equal(t, "none up to 3 slow readers", got.Behaviours[0].Text)
	assert.Equal(t, "Your stack (2 sync workers, behind NGINX with proxy_buffering on) held every requirement: none up to 3 slow readers; "+
		"in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers but daphne-1 and waitress-4, "+
		"which it kept under the stall line, and gunicorn-gthread-1x4, gunicorn-gevent-2, gunicorn-uvicorn-2, uvicorn-2, uwsgi-2-file-offload-2, "+
		"uwsgi-2-gevent-100, uwsgi-2-asyncio-100 and hypercorn-2 were protected on every path.", got.Advice)

	broken := sync
	broken.Baseline = step(0, "broken", 300)
	got = FoldStack(broken, []report.Claim{claim(-1, false)}, m)
	assert.False(t, got.Pass)
	assert.Equal(t, "Your stack (2 sync workers, direct) misses 50 ms at p95, or fails a request, with no slow client at all: fix the fast path first.", got.Advice)
	assert.Equal(t, "the fast path breaks 50 ms with no slow client", got.Behaviours[0].Text)

	past := sync
	past.Behaviours = []report.StackBehaviour{{Column: "silent", Noun: "silent connections", Required: 1,
		Steps: []report.StackStep{step(1, "held", 0.65), step(2, "broken", 1814)}}}
	got = FoldStack(past, []report.Claim{claim(1, true)}, m)
	assert.True(t, got.Pass)
	assert.Equal(t, "stalls at 2 silent connections, past the 1 required", got.Behaviours[0].Text)
	assert.Equal(t, "Your stack (2 sync workers, direct) held every requirement: stalls at 2 silent connections, past the 1 required.", got.Advice)

	unmeasured := sync
	unmeasured.Baseline = step(0, "no data", 0)
	unmeasured.Baseline.Why = "the lab could not measure run 1: the sampler saw no app worker"
	got = FoldStack(unmeasured, []report.Claim{{Status: report.StatusMissing}}, m)
	assert.False(t, got.Pass)
	assert.Equal(t, "no data: the lab could not measure the baseline, with no slow client: the lab could not measure run 1: the sampler saw no app worker",
		got.Behaviours[0].Text, "a no-data outcome says why")

	assert.Contains(t, got.Advice, "The lab could not measure (2 sync workers, direct) with no slow client", "the lab's failure is not blamed on the stack")

	late := sync
	late.Behaviours = []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 2,
		Steps: []report.StackStep{step(1, "held", 1.7), step(2, "no data", 0)}}}
	late.Behaviours[0].Steps[1].Why = "its 2 sound runs split evenly between held and broken"
	got = FoldStack(late, []report.Claim{{Status: report.StatusMissing}}, m)
	assert.Equal(t, "no data at 2 slow readers: its 2 sound runs split evenly between held and broken", got.Behaviours[0].Text)

	var text strings.Builder
	require.NoError(t, got.Text(&text))
	assert.Contains(t, text.String(), "no data at 2 slow readers: its 2 sound runs split evenly", "the check's own output says why")
	assert.Equal(t, "The lab could not decide every requirement of (2 sync workers, direct): no data at 2 slow readers: its 2 sound runs split evenly between held and broken; nothing about the stack follows from those.",
		got.Advice, "an undecided step is not blamed on the stack")

	guessed := sync
	guessed.CapacityDeclared, guessed.Basis = false, "gevent workers declare no limit the lab reads; taken from the largest requirement"
	got = FoldStack(guessed, []report.Claim{claim(1, false)}, m)
	assert.NotContains(t, got.Advice, "request slot", "a capacity the lab took from the requirement explains nothing")

	missing := sync
	got = FoldStack(missing, []report.Claim{{Status: report.StatusMissing}}, m)
	assert.False(t, got.Pass, "a requirement without data never passes")
	assert.Equal(t, -1, got.Behaviours[0].HeldUpTo)

	// The bracket's steps: the required one (3) broke, then 1 held and 2
	// had no data on the way up. The text names the first step that did
	// not hold, not the last one run.
	climbed := sync
	climbed.Behaviours = []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 3,
		Steps: []report.StackStep{step(1, "held", 1.7), step(2, "no data", 0), step(3, "broken", 5900)}}}
	climbed.Behaviours[0].Steps[1].Why = "the lab could not measure run 1"
	got = FoldStack(climbed, []report.Claim{{Status: report.StatusMissing}}, m)
	assert.Equal(t, "no data at 2 slow readers: the lab could not measure run 1", got.Behaviours[0].Text)
	assert.Equal(t, 2, got.Behaviours[0].StallsAt)
}

// A stack check is a row of matrix.json: its steps, baseline first, are
// its capacity on its own path; it has no cell.
func TestStackMatrixRow(t *testing.T) {
	sc := loadStack(t, "nginx-buffered.yaml")
	b := sc.Behaviours[0]
	conds := []report.Condition{summary(sc.Baseline(), 1.4)}
	for n := 1; n <= 3; n++ {
		conds = append(conds, summary(sc.Step(b, n), 2))
	}
	m := BuildMatrix(conds, nil, nil, sc)
	require.NotNil(t, m)
	require.Len(t, m.Rows, len(MatrixRows)+1)
	row := m.Rows[len(m.Rows)-1]
	assert.True(t, row.Stack)
	assert.Equal(t, "shop-nginx", row.ID)
	require.Len(t, row.Capacity, 1)
	c := row.Capacity[0]
	assert.Equal(t, "nginx-on", c.Path)
	assert.Equal(t, []int{0, 1, 2, 3}, []int{c.Steps[0].Clients, c.Steps[1].Clients, c.Steps[2].Clients, c.Steps[3].Clients})
	assert.Equal(t, "protected up to 3", c.Text)
	assert.Empty(t, m.Cells)

	assert.Nil(t, BuildMatrix(nil, nil, nil, sc), "a check that ran nothing adds no row")
}

// The bounds a stack file's server counts are checked against are the
// app container's own limits.
func TestStackBoundsAreThePodsLimits(t *testing.T) {
	assert.EqualValues(t, podspec.DefaultAppMemory>>20, stackfile.DefaultAppMemoryMiB)
	assert.EqualValues(t, podspec.DefaultHardening[podspec.RoleApp].PidsLimit, stackfile.AppPidsLimit)
}

// A stack that requires hundreds steps geometrically past 16, within
// the client's limits: its steps are valid conditions at its own pace.
func TestStackHundreds(t *testing.T) {
	assert.Equal(t, MaxDownloads, stackfile.ReaderStepLimit)
	assert.Equal(t, MaxHeldConns, stackfile.HeldStepLimit)
	sc := loadStack(t, "sync.yaml")
	sc.File.Requires = stackfile.Requires{SlowReaders: 300, SlowReadKiBs: 32, SilentConnections: 5000}
	b := StackBehaviour{Column: SlowRead, Noun: "slow readers", Required: 300, ReadRate: 32 << 10}
	s := StackBehaviour{Column: Silent, Noun: "silent connections", Required: 5000}
	assert.Equal(t, 512, b.Steps()[len(b.Steps())-1])
	assert.Equal(t, 8192, s.Steps()[len(s.Steps())-1])
	for _, st := range []struct {
		b StackBehaviour
		n int
	}{{b, 300}, {b, 512}, {s, 5000}, {s, 8192}} {
		c := sc.Step(st.b, st.n)
		require.NoError(t, c.Validate(), c.ID)
		assert.LessOrEqual(t, c.ClientCPUs, float64(MaxClientCPUs))
	}
	assert.EqualValues(t, 32<<10, sc.Step(b, 300).ReadRate, "the stack file's pace")
	assert.EqualValues(t, ConnClientMemory, sc.Step(s, 8192).ClientMemory)
	assert.Len(t, sc.Verdicts(), 2, "the file's own requirements (slow readers, slow TLS), not these")
}

// A stack's client latency puts its baseline and slow-reader steps
// through the latency column's hop, /fast too, the hop pacing at the
// stack's own rate; the stack file's delays are the lab's columns'.
func TestStackClientLatency(t *testing.T) {
	for _, ms := range stackfile.ClientLatenciesMs {
		f, ok := FaultByID(LatencyFaultID(ms))
		require.True(t, ok, "requires.client_latency_ms %d has no latency column", ms)
		l, _ := f.Delay()
		assert.EqualValues(t, ms, l.Milliseconds())
	}
	sc := loadStack(t, "sync.yaml")
	sc.File.Requires = stackfile.Requires{SlowReaders: 4, SlowReadKiBs: 1000, ClientLatencyMs: 150}
	b := StackBehaviour{Column: SlowRead, Noun: "slow readers", Required: 4, ReadRate: 1000 << 10}
	for _, c := range []Condition{sc.Baseline(), sc.Step(b, 4)} {
		require.NoError(t, c.Validate(), c.ID)
		assert.Equal(t, "latency-150ms", c.Fault, c.ID)
		assert.Equal(t, "http://"+podspec.ClientHopListen+sc.File.Paths.Fast.Path, c.Load("http://127.0.0.1:8000", "x").FastURL, c.ID)
		h := c.Pod("img").Hops.Client
		require.NotNil(t, h, c.ID)
		assert.Equal(t, int64(1024), h.Toxics[0].Attributes["rate"], "%s: the stack's 1000 KiB/s in KB/s", c.ID)
	}
	assert.True(t, sc.Step(b, 4).Load("http://127.0.0.1:8000", "x").PacedByPath)
}

// A stack's slow TLS handshakes run on its path's TLS twin: NGINX's
// settings kept (a team's location blocks too); a team's server blocks,
// which set their own listen line, are refused before anything starts.
func TestStackTLSPath(t *testing.T) {
	sc := loadStack(t, "nginx-buffered.yaml")
	assert.Equal(t, NginxTLSOn.ID, sc.TLSPath.ID)
	assert.True(t, sc.TLSPath.Proxy.Nginx.TLS)
	assert.True(t, sc.TLSPath.Proxy.Nginx.Buffering)
	assert.False(t, sc.Path.Proxy.Nginx.TLS, "the plain path is left as it was")

	own := nginxconf.New()
	own.Custom = "location / { proxy_pass http://app; }"
	p, err := tlsTwin(NginxPath("nginx-custom", own))
	require.NoError(t, err)
	assert.Equal(t, "nginx-tls-custom", p.ID)
	require.NoError(t, p.Proxy.Validate())
	own.Custom = "server { listen 127.0.0.1:8080; location / { proxy_pass http://app; } }"
	p, err = tlsTwin(NginxPath("nginx-custom", own))
	require.NoError(t, err)
	assert.ErrorContains(t, p.Proxy.Validate(), "custom server or http block")
	_, err = tlsTwin(doorPath("haproxy", ""))
	assert.ErrorContains(t, err, "not in haproxy")
}

// TestStackH2Path: slow HTTP/2 readers run on the stack's NGINX path with
// TLS and http2 added, their settings kept, reading the stack's large
// path, with a step 0 of their own; a path without NGINX is refused.
func TestStackH2Path(t *testing.T) {
	sc := loadStack(t, "nginx-buffered.yaml")
	assert.Equal(t, NginxH2On.ID, sc.H2Path.ID)
	assert.True(t, sc.H2Path.HTTP2)
	assert.True(t, sc.H2Path.Proxy.Nginx.HTTP2 && sc.H2Path.Proxy.Nginx.TLS && sc.H2Path.Proxy.Nginx.Buffering)
	assert.False(t, sc.Path.Proxy.Nginx.HTTP2, "the plain path is left as it was")
	i := slices.IndexFunc(sc.Behaviours, func(b StackBehaviour) bool { return b.Column.ID == H2SlowRead.ID })
	require.GreaterOrEqual(t, i, 0)
	b := sc.Behaviours[i]
	assert.Equal(t, "stack-shop-nginx-h2-slow-read-0", sc.BaselineOf(b).ID)
	c := sc.Step(b, 2)
	require.NoError(t, c.Validate())
	assert.Equal(t, 4, c.Records(), "2 connections of 2 streams")
	spec := c.Load("https://127.0.0.1:8080", "x")
	assert.Equal(t, "https://127.0.0.1:8080/export", spec.LargeURL)
	assert.EqualValues(t, 16<<20, spec.LargeSize)

	_, err := h2Twin(Direct)
	assert.ErrorContains(t, err, "speak HTTP/1.1: put NGINX in front")
	_, err = h2Twin(doorPath("caddy", ""))
	assert.ErrorContains(t, err, "not from caddy")
	own := nginxconf.New()
	own.Custom = "location / { proxy_pass http://app; }"
	p, err := h2Twin(NginxPath("nginx-custom", own))
	require.NoError(t, err)
	assert.Equal(t, "nginx-h2-custom", p.ID)
	require.NoError(t, p.Proxy.Validate())
}

// TestStackWSFeed: slow consumers of a team's WebSocket feed read its
// paths.ws (query kept) held for the fast path's window, at the stack's
// pace and within its limits, on the stack's own path: directly, or
// behind NGINX given an exact location for the feed (query left out)
// that passes the Upgrade on; a WebSocket step on an NGINX without it is
// refused.
func TestStackWSFeed(t *testing.T) {
	for _, tc := range []struct{ mode, base string }{{"none", "http://127.0.0.1:8000"}, {"buffering-on", "http://127.0.0.1:8080"}} {
		t.Run(tc.mode, func(t *testing.T) {
			src := `name: feed
app: {dir: src, module: main:app, interface: asgi, server: [uvicorn]}
proxy: {mode: ` + tc.mode + `}
paths: {fast: {path: /healthz}, ws: {path: "/feed?topic=prices"}}
requires: {ws_slow_consumers: 2}
`
			f, err := stackfile.Parse([]byte(src), "../../../fixtures/stacks/fastapi")
			require.NoError(t, err)
			sc, err := NewStackCheck(f)
			require.NoError(t, err)
			require.Len(t, sc.Behaviours, 1)
			b := sc.Behaviours[0]
			assert.Equal(t, WSSlowConsumer.ID, b.Column.ID)
			assert.Equal(t, "slow WebSocket consumers", b.Noun)
			assert.Equal(t, []int{1, 2, 3}, b.Steps())
			assert.Equal(t, sc.Baseline().ID, sc.BaselineOf(b).ID, "the stack's own path, its own baseline")
			c := sc.WithImage("img").Step(b, 2)
			require.NoError(t, c.Validate())
			assert.Equal(t, load.KindWSFeed, c.SlowKind)
			assert.Nil(t, c.AppLimits, "the stack's limits (article A's), not the matrix column's")
			spec := c.Load(tc.base, "x")
			require.NoError(t, spec.Validate())
			assert.Equal(t, strings.Replace(tc.base, "http", "ws", 1)+"/feed?topic=prices", spec.WSURL)
			assert.Equal(t, load.DefaultHoldFor, spec.HoldFor)
			assert.EqualValues(t, 2<<20, spec.DownloadRate)
			if tc.mode == "none" {
				assert.Equal(t, Direct.ID, sc.Path.ID)
				return
			}
			assert.Equal(t, "/feed", sc.Path.Proxy.Nginx.WebSocketPath)
			conf, err := sc.Path.Proxy.Render()
			require.NoError(t, err)
			assert.Contains(t, conf, "location = /feed {")
			noTarget := c
			noTarget.Target = nil
			assert.ErrorContains(t, noTarget.Validate(), "need Target.WSPath")
			c.Path = NginxOn
			assert.ErrorContains(t, c.Validate(), "does not pass the Upgrade on there")
		})
	}
}

// What protected every cell of a column: a path that protected every
// row; a path that protected all but at most MaxAdviceExceptions rows it
// only slowed, named with them; no path where a row stalled, failed or
// has no data, or where more rows were slowed; and the rows protected on
// every path.
func TestProtectors(t *testing.T) {
	col := report.MatrixColumn{ID: "slow-read", Clients: 2, Paths: []string{"direct", "nginx-off", "nginx-on"}}
	m := func(classes map[string][3]string) *report.Matrix {
		mx := &report.Matrix{Columns: []report.MatrixColumn{col}}
		for _, r := range slices.Sorted(maps.Keys(classes)) {
			mx.Rows = append(mx.Rows, report.MatrixRow{ID: r})
			for i, p := range col.Paths {
				if c := classes[r][i]; c != "" {
					mx.Cells = append(mx.Cells, report.MatrixCell{Column: col.ID, Row: r, Path: p, Class: c})
				}
			}
		}
		return mx
	}
	const P, S, L, F = report.ClassProtected, report.ClassSlowed, report.ClassStalled, report.ClassFailed
	for _, tc := range []struct {
		name    string
		classes map[string][3]string
		want    string
	}{
		{"every row protected behind buffering on",
			map[string][3]string{"a": {L, L, P}, "b": {P, P, P}},
			"in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers, and b was protected on every path"},
		{"all but two it slowed",
			map[string][3]string{"a": {L, L, P}, "b": {P, P, S}, "c": {P, P, S}, "d": {P, P, P}},
			"in our matrix, NGINX with proxy_buffering on kept every server setup protected from 2 slow readers but b and c, which it kept under the stall line, and d was protected on every path"},
		{"three slowed: not named",
			map[string][3]string{"a": {L, L, P}, "b": {P, P, S}, "c": {P, P, S}, "d": {P, P, S}},
			""},
		{"one stalled: not named",
			map[string][3]string{"a": {L, L, P}, "b": {P, P, S}, "c": {P, P, L}},
			""},
		{"one failed or not run: not named",
			map[string][3]string{"a": {L, L, F}, "b": {P, P, P}, "c": {P, P, ""}},
			"in our matrix, b was protected on every path"},
		{"each path's own exceptions",
			map[string][3]string{"a": {L, P, S}, "b": {P, S, P}, "c": {P, P, P}},
			"in our matrix, NGINX with proxy_buffering off kept every server setup protected from 2 slow readers but b, which it kept under the stall line, " +
				"and NGINX with proxy_buffering on kept every server setup protected from 2 slow readers but a, which it kept under the stall line, and c was protected on every path"},
	} {
		assert.Equal(t, tc.want, protectors(m(tc.classes), "slow-read", "slow readers"), tc.name)
	}
}

// A stack's resets (requires.resets) are the reset columns' faults on the
// stack's own row and path, cutting its required clients of its own paths
// at the lab's pace, downloads before uploads whatever the file's order.
// Their verdicts bound the fast path after the cut by the stack's own
// bound, and check what its path has: a front door's descriptors, and
// the temp files of one that spills.
func TestStackResets(t *testing.T) {
	assert.EqualValues(t, ResetCutBytes, stackfile.ResetCutBytes)
	assert.EqualValues(t, CutSlackBytes, stackfile.ResetSlackBytes)
	assert.LessOrEqual(t, stackfile.MaxResetClients, MatrixStepLimit, "a reset step is a matrix-sized step")
	for _, r := range stackResets {
		f, ok := FaultByID(r.col.ID)
		require.True(t, ok, r.value)
		assert.True(t, f.Cut(), r.value)
	}

	f, err := stackfile.Load("../../../fixtures/stacks/django/stack.yaml")
	require.NoError(t, err)
	f.Requires.SlowUploads, f.Requires.SlowReadKiBs, f.Requires.Resets = 3, 512, []string{stackfile.ResetUpload, stackfile.ResetDownload}
	sc, err := NewStackCheck(f)
	require.NoError(t, err)
	sc = sc.WithImage("wsgilab-stack:abc")
	require.Len(t, sc.Resets, 2)
	dl, up := sc.ResetStep(sc.Resets[0]), sc.ResetStep(sc.Resets[1])
	assert.Equal(t, "stack-django-nginx-reset-mid-download-2", dl.ID)
	assert.Equal(t, "stack-django-nginx-reset-mid-upload-3", up.ID)
	for _, c := range []Condition{dl, up} {
		require.NoError(t, c.Validate(), c.ID)
		assert.Equal(t, NginxOn.ID, c.Path.ID, c.ID)
		assert.Equal(t, "wsgilab-stack:abc", c.Pod("lab:1").Server.Image, c.ID)
		require.NotNil(t, c.Pod("lab:1").Hops, c.ID)
	}
	assert.Equal(t, ResetDownload.ID, dl.Fault)
	assert.Equal(t, 2, dl.Downloads)
	assert.EqualValues(t, 16<<20, dl.BodyBytes)
	assert.EqualValues(t, load.DefaultDownloadRate, dl.ReadRate, "the lab's pace, not slow_read_kib_s: the cut comes 2 s in")
	spec := dl.Load("http://127.0.0.1:8080", "x")
	assert.Equal(t, "http://"+podspec.ClientHopListen+"/export", spec.LargeURL)
	assert.Equal(t, "http://127.0.0.1:8080/healthz", spec.FastURL, "the fast path keeps to the entry point")
	assert.Equal(t, &load.Warm{URL: "http://127.0.0.1:8080/export", Count: 2}, spec.Warm,
		"as many whole downloads at the entry point, before the count the leak checks compare with")
	assert.Equal(t, &load.Warm{URL: "http://127.0.0.1:8080/import", BodyBytes: 16 << 20, Count: 3}, up.Load("http://127.0.0.1:8080", "x").Warm)
	assert.Nil(t, sc.Baseline().Load("http://127.0.0.1:8080", "x").Warm, "no cut, nothing to warm")
	assert.Equal(t, ResetUpload.ID, up.Fault)
	assert.Equal(t, load.KindUpload, up.SlowKind)
	assert.Equal(t, "http://"+podspec.ClientHopListen+"/import", up.Load("http://127.0.0.1:8080", "x").UploadURL)

	ids := func(vs []verdict.Verdict) []string {
		var out []string
		for _, v := range vs {
			out = append(out, strings.TrimPrefix(v.ID, "stack-django-nginx-"))
		}
		return out
	}
	assert.Equal(t, []string{"reset-mid-download-cut", "reset-mid-download-next-served", "reset-mid-download-next-not-held", "reset-mid-download-no-fd-leak",
		"reset-mid-download-no-proxy-fd-leak", "reset-mid-download-no-temp-left"}, ids(sc.ResetVerdicts(sc.Resets[0])))
	assert.Equal(t, []string{"reset-mid-upload-cut", "reset-mid-upload-next-served", "reset-mid-upload-next-not-held", "reset-mid-upload-no-fd-leak",
		"reset-mid-upload-no-proxy-fd-leak"}, ids(sc.ResetVerdicts(sc.Resets[1])), "a request body spools where the proxy's descriptors count it")
	assert.Contains(t, sc.ResetVerdicts(sc.Resets[0])[2].Text, "under 50 ms", "the stack's own bound")
	all := ids(sc.Verdicts())
	assert.Equal(t, []string{"slow-read-requirement", "slow-upload-requirement"}, all[:2], "the behaviours first, as FoldStack reads them")
	assert.Len(t, all, 2+6+5)

	// Direct: no front door's verdicts; behind HAProxy: its descriptors,
	// no temp file (it spills none).
	flask := loadStack(t, "flask/stack.yaml")
	require.Len(t, flask.Resets, 1)
	assert.Len(t, flask.ResetVerdicts(flask.Resets[0]), 4)
	h, err := stackfile.Load("../../../fixtures/stacks/haproxy.yaml")
	require.NoError(t, err)
	h.Requires.Resets = []string{stackfile.ResetDownload}
	hsc, err := NewStackCheck(h)
	require.NoError(t, err)
	assert.Len(t, hsc.ResetVerdicts(hsc.Resets[0]), 5)

	// A requirement above MaxResetClients is cut at it.
	h.Requires.SlowReaders, h.Requires.SlowReadKiBs = 10, 512
	hsc, err = NewStackCheck(h)
	require.NoError(t, err)
	assert.Equal(t, stackfile.MaxResetClients, hsc.Resets[0].Clients)
	assert.Equal(t, stackfile.MaxResetClients, hsc.ResetStep(hsc.Resets[0]).Downloads)
}

// A reset's outcome in words (FoldReset), and its weight in the stack's
// verdict: a leak fails the stack, a cut that did not come leaves it
// undecided.
func TestFoldReset(t *testing.T) {
	none := 0
	cut := &report.Cut{Clients: 2, AtCut: 2, BytesMin: 4194146, BytesMax: 4194146, FastAfter: 55, FastAfterOK: 55, FastAfterP95Ms: 4.46,
		FDsLeaked: map[string]int{"app": 0, "proxy": 0}, TempFilesLeft: &none}
	base := verdict.StackCutBase("shop", ResetMidDownload.ID)
	claims := func(fail string, measured float64) []report.Claim {
		var out []report.Claim
		for _, s := range []string{"-cut", "-next-served", "-next-not-held", "-no-fd-leak", "-no-proxy-fd-leak", "-no-temp-left"} {
			c := report.Claim{ID: base + s, Evaluated: true, Holds: true, Status: report.StatusHolds}
			if s == fail {
				c.Holds, c.Status, c.Measured = false, report.StatusFails, measured
			}
			out = append(out, c)
		}
		return out
	}
	r := report.StackReset{Column: ResetMidDownload.ID, Noun: "slow readers", Clients: 2, RunsSound: 1, RunsTotal: 1, Cut: cut}
	got := FoldReset("shop", r, claims("", 0), 50, "", nil)
	assert.True(t, got.Pass)
	assert.Equal(t, "lets go of 2 slow readers cut at 4 MiB: the next 55 fast requests served, p95 4.46 ms; no descriptor left nor temp file", got.Text)

	got = FoldReset("shop", r, claims("-no-fd-leak", 2), 50, "", nil)
	assert.False(t, got.Pass)
	assert.False(t, got.NoData)
	assert.Equal(t, "keeps hold after 2 slow readers cut at 4 MiB: the app held 2 descriptors more at the end than before the load", got.Text)
	leaky := report.Stack{Name: "shop", Baseline: report.StackStep{State: StateHeld}, Resets: []report.StackReset{got},
		Behaviours: []report.StackBehaviour{{Column: "slow-read", Noun: "slow readers", Required: 2, Steps: []report.StackStep{{Clients: 2, State: StateHeld}}}}}
	st := FoldStack(leaky, []report.Claim{{Evaluated: true, Holds: true, Measured: 3}}, nil)
	assert.False(t, st.Pass, "a reset that fails fails the stack")
	assert.Equal(t, report.VerdictFail, st.Verdict())
	code, why := report.CheckExit([]report.Stack{st}, "shop")
	assert.Equal(t, report.ExitFail, code)
	assert.Contains(t, why, "reset-mid-download: keeps hold after 2 slow readers")
	assert.Contains(t, st.Advice, "the app held 2 descriptors more")
	var text strings.Builder
	require.NoError(t, st.Text(&text))
	assert.Contains(t, text.String(), "  FAIL reset-mid-download: keeps hold after 2 slow readers cut at 4 MiB", "the check's own output")

	got = FoldReset("shop", r, claims("-next-not-held", 5960), 50, "", nil)
	assert.Equal(t, "keeps hold after 2 slow readers cut at 4 MiB: the fast path's p95 after the cut 5960 ms, over its 50 ms bound", got.Text)

	// The hop did not cut: the step is not the fault it is about.
	short := *cut
	short.AtCut, short.BytesMax = 1, 16<<20
	r.Cut = &short
	got = FoldReset("shop", r, claims("-cut", 0.5), 50, "", nil)
	assert.True(t, got.NoData)
	assert.Equal(t, "no data: the hop cut 1 of 2 slow readers at 4 MiB (they moved 4194146 to 16777216 bytes): the step is not the fault it is about", got.Text)
	leaky.Resets = []report.StackReset{got}
	st = FoldStack(leaky, []report.Claim{{Evaluated: true, Holds: true, Measured: 3}}, nil)
	assert.Equal(t, report.VerdictUndecided, st.Verdict())

	// A cut not judged, with another verdict failing: no data, not a
	// failure; the cut is judged first.
	r.Cut = cut
	unjudged := claims("-no-fd-leak", 2)
	unjudged[0].Evaluated, unjudged[0].Holds, unjudged[0].Status = false, false, report.StatusMissing
	got = FoldReset("shop", r, unjudged, 50, "", nil)
	assert.True(t, got.NoData)
	assert.Equal(t, "no data: nothing to judge the cut by", got.Text)
	nextUnjudged := claims("", 0)
	nextUnjudged[2].Evaluated, nextUnjudged[2].Status = false, report.StatusMissing
	got = FoldReset("shop", r, nextUnjudged, 50, "", nil)
	assert.Equal(t, "no data: nothing to judge next-not-held by", got.Text)

	// No sound run: its runs' reasons.
	r.Cut, r.RunsSound, r.RunsTotal = nil, 0, 3
	got = FoldReset("shop", r, []report.Claim{{ID: base + "-cut", Status: report.StatusMissing}}, 50, "", []string{"run 1: the client stalled", "run 2: the client stalled"})
	assert.True(t, got.NoData)
	assert.Equal(t, "no data: no run of 2 slow readers cut at 4 MiB was measured whole (run 1: the client stalled; run 2: the client stalled)", got.Text)

	// Not run: RunStack's reason, and folding twice changes nothing.
	got = FoldReset("shop", r, nil, 50, "the fast path breaks 50 ms with no slow client", nil)
	assert.True(t, got.NoData)
	assert.Equal(t, "not run: the fast path breaks 50 ms with no slow client", got.Text)
	r.Cut, r.RunsSound, r.RunsTotal = cut, 1, 1
	again := FoldReset("shop", FoldReset("shop", r, claims("", 0), 50, "", nil), claims("", 0), 50, "", nil)
	assert.True(t, again.Pass)

	// An example meant to fail is meant to fail a behaviour: a failed
	// reset is a plain failure.
	meant := leaky
	meant.ExpectFails = true
	meant.Resets = []report.StackReset{FoldReset("shop", r, claims("-no-fd-leak", 1), 50, "", nil)}
	assert.Equal(t, report.VerdictFail, FoldStack(meant, []report.Claim{{Evaluated: true, Holds: true, Measured: 3}}, nil).Verdict())
}
