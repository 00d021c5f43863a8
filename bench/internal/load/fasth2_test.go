package load

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"wsgilab/bench/internal/tlsca"
)

// fastServer answers /fast with 12 bytes, an HTTP/2 request hold ms
// later; it counts the requests by protocol and the connections opened.
type fastServer struct {
	mu    sync.Mutex
	proto map[int]int
	conns atomic.Int64
	hold  time.Duration
}

func (f *fastServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.proto[r.ProtoMajor]++
	f.mu.Unlock()
	if r.ProtoMajor == 2 {
		time.Sleep(f.hold)
	}
	io.WriteString(w, "fast answer\n")
}

func (f *fastServer) start(t *testing.T, tlsOn, h2 bool, ca *tlsca.CA) string {
	var h http.Handler = f
	if !tlsOn {
		h = h2c.NewHandler(f, &http2.Server{})
	}
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			f.conns.Add(1)
		}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if !tlsOn {
		s.Start()
	} else {
		conf, err := ca.ServerConfig()
		require.NoError(t, err)
		s.TLS, s.EnableHTTP2 = conf, h2
		s.StartTLS()
	}
	t.Cleanup(s.Close)
	return s.URL
}

// TestFastH2: with FastH2 the /fast requester runs a second series over
// HTTP/2 beside the HTTP/1.1 one, half an interval after it, each request
// over a connection of its own: over TLS with ALPN h2, and over h2c by
// prior knowledge. Its latency is its own (a server slow on HTTP/2 only
// shows in it alone), and a server that speaks only HTTP/1.1 fails it by
// name while the HTTP/1.1 series is served.
func TestFastH2(t *testing.T) {
	ca, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	const n, rate, hold = 4, 20, 60 * time.Millisecond
	run := func(u string) Result {
		spec := NewSpec(u, "t")
		spec.CAPEM, spec.FastCount, spec.FastRate, spec.FastH2 = string(ca.CertPEM), n, rate, true
		res, err := Run(context.Background(), spec)
		require.NoError(t, err)
		require.Len(t, res.Fast, n)
		require.Len(t, res.FastH2, n)
		return res
	}
	for _, tlsOn := range []bool{true, false} {
		f := &fastServer{proto: map[int]int{}, hold: hold}
		res := run(f.start(t, tlsOn, true, ca))
		interval := time.Second / rate
		for k := range n {
			h1, h2 := res.Fast[k], res.FastH2[k]
			assert.True(t, h1.OK(res.Spec), "tls %v: %+v", tlsOn, h1)
			assert.True(t, h2.OK(res.Spec), "tls %v: %+v", tlsOn, h2)
			assert.Equal(t, h1.Scheduled+interval/2, h2.Scheduled, "half an interval after its twin")
			assert.GreaterOrEqual(t, h2.Latency, hold, "the HTTP/2 series' latency is its own")
			assert.Less(t, h1.Latency, hold, "the HTTP/1.1 series is not slowed")
		}
		assert.Equal(t, map[int]int{1: n, 2: n}, f.proto, "tls %v", tlsOn)
		assert.EqualValues(t, 2*n, f.conns.Load(), "tls %v: a connection a request", tlsOn)
	}

	f := &fastServer{proto: map[int]int{}}
	res := run(f.start(t, true, false, ca))
	for k := range n {
		assert.True(t, res.Fast[k].OK(res.Spec), "%+v", res.Fast[k])
		assert.Contains(t, res.FastH2[k].Error, `does not speak HTTP/2 over TLS: ALPN chose "http/1.1"`)
		assert.False(t, res.FastH2[k].OK(res.Spec))
	}

	spec := NewSpec("http://127.0.0.1:1", "t")
	spec.FastCount = 1
	res, err = Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Nil(t, res.FastH2, "no second series unless asked")
}

// TestH2Only: against an entry point that takes HTTP/2 only (NGINX's
// h2c listener), the /fast series itself and its baseline go over h2c by
// prior knowledge; a spec that would send HTTP/1.1 there is refused.
func TestH2Only(t *testing.T) {
	f := &fastServer{proto: map[int]int{}}
	u := f.start(t, false, true, nil)
	spec := NewSpec(u, "t", WithBaseline(2))
	spec.FastCount, spec.FastRate, spec.H2Only = 3, 40, true
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Fast, 3)
	for _, p := range append(res.Fast, res.Baseline...) {
		assert.True(t, p.OK(res.Spec), "%+v", p)
	}
	assert.Len(t, res.Baseline, 2)
	assert.Nil(t, res.FastH2)
	assert.Equal(t, map[int]int{2: 5}, f.proto, "every request over HTTP/2")

	// The readiness check's transport: h2c by prior knowledge, a
	// connection a request, closed with the body.
	for range 2 {
		resp, err := (&http.Client{Transport: H2CTransport()}).Get(u + "/fast")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, 2, resp.ProtoMajor)
		assert.Equal(t, "fast answer\n", string(body))
	}
	assert.EqualValues(t, 7, f.conns.Load(), "a connection a request")

	for name, change := range map[string]func(*Spec){
		"https":     func(s *Spec) { s.FastURL = "https://127.0.0.1:1/fast"; s.CAPEM = "x" },
		"two":       func(s *Spec) { s.FastH2 = true },
		"slow kind": func(s *Spec) { s.Downloads, s.SlowKind = 1, KindRead },
	} {
		bad := spec
		change(&bad)
		err := bad.Validate()
		assert.ErrorContains(t, err, "H2Only", name)
	}
	ok := spec
	ok.Downloads, ok.SlowKind, ok.H2Streams = 1, KindH2Read, 2
	assert.NoError(t, ok.Validate())
}
