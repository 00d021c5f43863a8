package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/toxic"
)

// A fault cell's pod has the fault's hops where the pod's addresses say,
// and only its slow clients go through the client's hop.
func TestFaultCells(t *testing.T) {
	sync := matrixRows[podspec.GunicornSync(2).ID]
	dl, ok := Cell(ResetMidDownload, sync, Direct, 2)
	require.True(t, ok)
	require.NoError(t, dl.Validate())
	pod := dl.Pod("img")
	require.NotNil(t, pod.Hops)
	require.NotNil(t, pod.Hops.Client)
	assert.Nil(t, pod.Hops.App)
	assert.Equal(t, podspec.ClientHopListen, pod.Hops.Client.Listen)
	assert.Equal(t, load.DefaultReceiveBuffer, pod.Hops.Client.UpstreamReceiveBuffer)
	assert.Equal(t, ReaderSendBuffer, pod.Hops.Client.DownstreamSendBuffer)
	assert.Equal(t, int64(ResetCutBytes), pod.Hops.Client.Toxics[0].Attributes["bytes"])
	s := dl.Load("http://127.0.0.1:8000", "x")
	assert.Equal(t, "http://"+podspec.ClientHopListen+"/large?size=16777216", s.LargeURL)
	assert.Equal(t, "http://127.0.0.1:8000/fast", s.FastURL, "/fast keeps to the entry point")
	assert.False(t, s.PacedByPath, "the lab's reader paces")

	up, ok := Cell(ResetMidUpload, sync, NginxOn, 2)
	require.True(t, ok)
	require.NoError(t, up.Validate())
	s = up.Load("http://127.0.0.1:8080", "x")
	assert.Equal(t, "http://"+podspec.ClientHopListen+"/upload", s.UploadURL)
	assert.Equal(t, "upstream", up.Pod("img").Hops.Client.Toxics[0].Stream)

	link, ok := Cell(SlowUpstream, sync, NginxOn, 2)
	require.True(t, ok)
	require.NoError(t, link.Validate())
	pod = link.Pod("img")
	require.NotNil(t, pod.Hops.App)
	assert.Nil(t, pod.Hops.Client)
	assert.Equal(t, podspec.AppHopListen, pod.Proxy.Upstream, "NGINX forwards to the app's hop")
	assert.Equal(t, int64(8389), pod.Hops.App.Toxics[0].Attributes["rate"], "8 MiB/s in Toxiproxy's KB/s")
	s = link.Load("http://127.0.0.1:8080", "x")
	assert.Equal(t, "http://127.0.0.1:8080/large?size=16777216", s.LargeURL, "the readers reach the entry point")

	// Slices and a slow close: the reader's own buffers on the hop, the
	// toxics each way the fault says.
	for _, col := range []Column{SlicedReads, SlowCloses} {
		c, ok := Cell(col, sync, NginxOff, 2)
		require.True(t, ok)
		require.NoError(t, c.Validate())
		h := c.Pod("img").Hops.Client
		require.NotNil(t, h, col.ID)
		assert.Equal(t, load.DefaultReceiveBuffer, h.UpstreamReceiveBuffer, col.ID)
		assert.Equal(t, ReaderSendBuffer, h.DownstreamSendBuffer, col.ID)
		s := c.Load("http://127.0.0.1:8080", "x")
		assert.Equal(t, "http://"+podspec.ClientHopListen+"/large?size=16777216", s.LargeURL, col.ID)
		assert.False(t, s.PacedByPath, "%s: the lab's reader paces", col.ID)
	}
	sliced, _ := Cell(SlicedReads, sync, Direct, 2)
	assert.Equal(t, map[string]int64{"average_size": 1024, "size_variation": 512, "delay": 0}, sliced.Pod("img").Hops.Client.Toxics[0].Attributes)
	closing, _ := Cell(SlowCloses, sync, Direct, 2)
	ts := closing.Pod("img").Hops.Client.Toxics
	require.Len(t, ts, 2)
	assert.Equal(t, []string{"downstream", "upstream"}, []string{ts[0].Stream, ts[1].Stream})
	assert.Equal(t, int64(2000), ts[1].Attributes["delay"])

	// Latency: the hop paces the downloads ahead of its delay, and /fast
	// goes through it, in the cell and in its idle twin alike.
	lat, ok := Cell(Latency150ms, sync, Direct, 2)
	require.True(t, ok)
	require.NoError(t, lat.Validate())
	idle, ok := Cell(IdleColumn(Latency150), sync, Direct, 0)
	require.True(t, ok)
	require.NoError(t, idle.Validate())
	assert.Equal(t, "matrix-latency-150ms-idle-gunicorn-sync-2-direct", idle.ID)
	for _, c := range []Condition{lat, idle} {
		h := c.Pod("img").Hops.Client
		var names []string
		for _, t := range h.Toxics {
			names = append(names, t.Name)
		}
		assert.Equal(t, []string{"pace", "delay-down", "delay-up"}, names, c.ID)
		assert.Equal(t, int64(2097), h.Toxics[0].Attributes["rate"], c.ID)
		assert.Equal(t, map[string]int64{"latency": 150, "jitter": 30}, h.Toxics[2].Attributes, c.ID)
		s := c.Load("http://127.0.0.1:8000", "x")
		assert.Equal(t, "http://"+podspec.ClientHopListen+"/fast", s.FastURL, c.ID)
	}
	s = lat.Load("http://127.0.0.1:8000", "x")
	assert.Equal(t, "http://"+podspec.ClientHopListen+"/large?size=16777216", s.LargeURL)
	assert.True(t, s.PacedByPath, "the hop paces, ahead of its delay")
	is := idle.Load("http://127.0.0.1:8000", "x")
	assert.Zero(t, is.Downloads)
	assert.Zero(t, is.BaselineRequests, "no raw exchange: through the hop it would time the delay")
	l, j := Latency50.Delay()
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 10 * time.Millisecond}, []time.Duration{l, j})
	l, _ = SlowClose.Delay()
	assert.Zero(t, l)

	// Not on the other rows, nor directly for a slow link.
	_, ok = Cell(ResetMidDownload, matrixRows[podspec.Daphne().ID], Direct, 2)
	assert.False(t, ok)
	assert.NotContains(t, SlowUpstream.paths(), Direct)
	assert.False(t, IsFaultColumn(SlowRead.ID))
	assert.True(t, IsFaultColumn(SlowUpstream.ID))
}

// A malformed fault is refused before anything starts, naming the
// setting, its value and what is accepted.
func TestFaultRefused(t *testing.T) {
	sync := matrixRows[podspec.GunicornSync(2).ID]
	base, _ := Cell(ResetMidDownload, sync, Direct, 2)
	for name, tc := range map[string]struct {
		f    func(c *Condition)
		want string
	}{
		"unknown":     {func(c *Condition) { c.Fault = "netem" }, `Fault "netem": want empty (no fault) or one of reset-mid-download, reset-mid-upload, slow-upstream, sliced-read, slow-close, latency-50ms, latency-150ms`},
		"with-pacer":  {func(c *Condition) { c.Pacer = PacerToxiproxy }, "Fault reset-mid-download with Pacer toxiproxy: want one hop's work at a time"},
		"uploads":     {func(c *Condition) { c.SlowKind = load.KindUpload }, `Fault reset-mid-download with SlowKind "upload", 2 slow clients: want "read"`},
		"held":        {func(c *Condition) { c.SlowKind = load.KindSilent }, `Fault reset-mid-download with SlowKind "silent"`},
		"none":        {func(c *Condition) { c.Downloads = 0 }, "Fault reset-mid-download with SlowKind \"\", 0 slow clients"},
		"small-body":  {func(c *Condition) { c.BodyBytes = 1 << 20 }, "Fault reset-mid-download cuts at 4194304 bytes, BodyBytes 1048576: want a body larger than the cut"},
		"hang":        {func(c *Condition) { c.HangS = 5 }, "Fault reset-mid-download with HangS 5: want a download the app answers at once"},
		"link-direct": {func(c *Condition) { c.Fault = SlowLink.ID }, "Fault slow-upstream puts a hop between the front door and the app, on path direct with none: want a front door's path"},
		"tls":         {func(c *Condition) { c.Path = DirectTLS }, "Fault reset-mid-download on path direct-tls, which speaks TLS or HTTP/2: want a plain HTTP/1.1 path"},
		"fast-tls": {func(c *Condition) { c.Fault, c.Path = Latency50.ID, DirectTLS },
			"Fault latency-50ms sends /fast through its hop, on path direct-tls, which speaks TLS or HTTP/2: want a plain HTTP/1.1 path"},
		"idle-tls": {func(c *Condition) { c.Fault, c.Path, c.Downloads = Latency50.ID, DirectTLS, 0 },
			"Fault latency-50ms sends /fast through its hop, on path direct-tls, which speaks TLS or HTTP/2"},
		"pace-rate": {func(c *Condition) { c.Fault, c.ReadRate = Latency50.ID, 1500 },
			"Fault latency-50ms paces the downloads on its hop at ReadRate 1500: want a rate within 0.1 % of whole KB/s"},
		"file-body": {func(c *Condition) {
			c.Server.Env = []string{"LAB_LARGE_BODY=file"}
		}, "Fault reset-mid-download with server gunicorn-sync-2, whose /large is a file (LAB_LARGE_BODY=file): want a generator's body"},
		"team-short": {func(c *Condition) {
			c.Target = &Target{FastPath: "/", LargePath: "/big", LargeBytes: 4 << 20}
		}, "Fault reset-mid-download cuts at 4194304 bytes, Target.LargeBytes 4194304: want more than 4456448, the cut and its slack, or a download would end whole"},
	} {
		c := base
		tc.f(&c)
		assert.ErrorContains(t, c.Validate(), "engine: condition "+c.ID+": "+tc.want, name)
	}
}

// Every fault is well formed: one that paces or sends /fast through its
// client hop has one, and an id its column and idle twin are named by.
func TestFaultsWellFormed(t *testing.T) {
	for _, f := range Faults {
		if f.Paces || f.Fast || f.Cut() {
			assert.NotNil(t, f.Client, f.ID)
		}
		for _, h := range []*toxic.Hop{f.Client, f.App} {
			if h != nil { // at the pod's addresses, which podspec.WithHops sets
				x := *h
				x.Listen, x.Upstream = "127.0.0.1:1", "127.0.0.1:2"
				assert.NoError(t, x.Validate(), f.ID)
			}
		}
	}
}
