package load

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUploadIsPacedAndComplete(t *testing.T) {
	const size = 256 << 10
	var got int64
	var id string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id = r.Header.Get("X-Lab-Id")
		got, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"read": %d}`, got)
	}))
	t.Cleanup(srv.Close)
	spec := NewSpec(srv.URL, "t", WithDownloads(1), WithSlowKind(KindUpload))
	spec.UploadSize, spec.UploadRate, spec.FastCount = size, 1<<20, 0 // 250 ms
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, KindUpload, d.Kind)
	assert.True(t, d.Complete(), "%+v", d)
	assert.True(t, d.Served())
	assert.Equal(t, OutcomeComplete, d.Outcome())
	assert.EqualValues(t, size, got)
	assert.Equal(t, "t-dl1", id)
	assert.InDelta(t, 0.25, d.Completion.Seconds(), 0.06, "paced at UploadRate")
}

func TestUploadAnsweredEarly(t *testing.T) {
	// A proxy that refuses the body answers before reading it.
	ln := rawServer(t, func(c *net.TCPConn) {
		fmt.Fprint(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.CloseWrite()
		time.Sleep(200 * time.Millisecond)
		c.Close()
	})
	spec := NewSpec("http://"+ln, "t", WithDownloads(1), WithSlowKind(KindUpload))
	spec.UploadSize, spec.UploadRate, spec.FastCount = 64<<20, 64<<20, 0
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.False(t, d.Served())
	assert.Equal(t, http.StatusRequestEntityTooLarge, d.Status, "error: %s", d.Error)
	assert.Equal(t, OutcomeStatus, d.Outcome(), "the answer, not the reset after it")
}

// TestHeldOutcome holds a connection against a raw listener that ends it
// its own way, and checks that the slow client names it, for slow headers
// silent and idle keep-alive connections (answered first) and slow TLS
// handshakes all (an answer, to a slow hello, is any byte).
func TestHeldOutcome(t *testing.T) {
	for _, kind := range []string{KindHeaders, KindSilent, KindIdle, KindTLS} {
		for _, tc := range []struct {
			name, want string
			serve      func(c *net.TCPConn)
		}{
			{"held", OutcomeHeld, func(c *net.TCPConn) { time.Sleep(time.Second); c.Close() }},
			// A close with the client's bytes unread is a reset (the kernel
			// sends RST): a clean close shuts the write side first.
			{"closed", OutcomeClosed, func(c *net.TCPConn) {
				time.Sleep(50 * time.Millisecond)
				c.CloseWrite()
				time.Sleep(100 * time.Millisecond)
				c.Close()
			}},
			{"answered", OutcomeStatus, func(c *net.TCPConn) {
				fmt.Fprint(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n")
				time.Sleep(50 * time.Millisecond)
				c.Close()
			}},
			{"reset", OutcomeReset, func(c *net.TCPConn) {
				time.Sleep(50 * time.Millisecond)
				c.SetLinger(0)
				c.Close()
			}},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				serve := tc.serve
				if kind == KindIdle {
					serve = func(c *net.TCPConn) {
						answer(t, c, "200 OK")
						tc.serve(c)
					}
				}
				addr := rawServer(t, serve)
				spec := NewSpec("http://"+addr, "t", WithDownloads(1), WithSlowKind(kind), WithTLSURL("https://"+addr))
				spec.HoldFor, spec.HeaderGap, spec.FastCount = 300*time.Millisecond, 20*time.Millisecond, 0
				res, err := Run(context.Background(), spec)
				require.NoError(t, err)
				d := res.Downloads[0]
				assert.Equal(t, tc.want, d.Outcome(), "%+v", d)
				assert.True(t, d.Served(), "the server took the connection")
				assert.False(t, d.Complete())
				if tc.want == OutcomeHeld {
					assert.InDelta(t, 0.3, d.Completion.Seconds(), 0.05)
					switch kind {
					case KindHeaders:
						assert.Greater(t, d.Bytes, int64(100), "a line every 20 ms for 300 ms")
					case KindSilent:
						assert.Zero(t, d.Bytes, "silent")
					case KindIdle:
						assert.Equal(t, http.StatusOK, d.Status, "its one request answered")
					case KindTLS:
						assert.True(t, d.Bytes >= 5 && d.Bytes <= 16, "a hello's byte every 20 ms for 300 ms: %d", d.Bytes)
					}
				}
			})
		}
	}
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		spec := NewSpec("http://"+addr, "t", WithDownloads(1), WithSlowKind(KindSilent))
		spec.FastCount = 0
		res, err := Run(context.Background(), spec)
		require.NoError(t, err)
		assert.Equal(t, OutcomeRefused, res.Downloads[0].Outcome())
		assert.False(t, res.Downloads[0].Served())
	})
}

func TestSlowHeadersNeverEndTheRequest(t *testing.T) {
	lines := make(chan string, 100)
	addr := rawServer(t, func(c *net.TCPConn) {
		r := bufio.NewReader(c)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	})
	spec := NewSpec("http://"+addr, "t", WithDownloads(1), WithSlowKind(KindHeaders))
	spec.HoldFor, spec.HeaderGap, spec.FastCount = 200*time.Millisecond, 20*time.Millisecond, 0
	_, err := Run(context.Background(), spec)
	require.NoError(t, err)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	require.GreaterOrEqual(t, len(got), 5)
	assert.Equal(t, "GET /fast HTTP/1.1\r\n", got[0])
	assert.Equal(t, "X-Lab-Id: t-dl1\r\n", got[2])
	assert.NotContains(t, got, "\r\n", "the header block never ends")
}

func TestSlowSpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Spec)
		want string
	}{
		"kind":      {func(s *Spec) { s.SlowKind = "slowloris" }, "SlowKind"},
		"hold zero": {func(s *Spec) { s.SlowKind, s.HoldFor = KindSilent, 0 }, "HoldFor"},
		"hold long": {func(s *Spec) { s.SlowKind, s.HoldFor = KindSilent, time.Hour }, "HoldFor"},
		"gap":       {func(s *Spec) { s.SlowKind, s.HoldFor, s.HeaderGap = KindHeaders, time.Second, 2*time.Second }, "HeaderGap"},
		"upload":    {func(s *Spec) { s.SlowKind, s.UploadRate = KindUpload, 0 }, "UploadRate"},
		"events":    {func(s *Spec) { s.Stream = &StreamSpec{URL: "http://x/events", Events: 0, Timeout: time.Second} }, "Events"},
	} {
		t.Run(name, func(t *testing.T) {
			s := NewSpec("http://127.0.0.1:1", "t", WithDownloads(1), WithSlowKind(KindUpload))
			tc.mod(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Each event is stamped as it arrives: before the next one is sent (an
// ordering, not a deadline, so a loaded machine does not fail it; a
// reader that held events until the stream's end would).
func TestStreamStampsEachEvent(t *testing.T) {
	const gap = 100 * time.Millisecond
	for _, gz := range []bool{false, true} {
		t.Run("gzip="+strconv.FormatBool(gz), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				var out io.Writer = w
				var zw *gzip.Writer
				if gz {
					w.Header().Set("Content-Encoding", "gzip")
					zw = gzip.NewWriter(w)
					out = zw
				}
				for k := range 5 {
					fmt.Fprintf(out, "id: %d\ndata: %d\n\n", k, time.Now().UnixNano())
					if zw != nil {
						zw.Flush()
					}
					w.(http.Flusher).Flush()
					time.Sleep(gap)
				}
				if zw != nil {
					zw.Close()
				}
			}))
			t.Cleanup(srv.Close)
			spec := NewSpec(srv.URL, "t")
			spec.FastCount = 0
			spec.Stream = &StreamSpec{URL: srv.URL + "/events", Events: 5, AcceptGzip: gz, Timeout: 5 * time.Second}
			res, err := Run(context.Background(), spec)
			require.NoError(t, err)
			require.NotNil(t, res.Stream)
			assert.Empty(t, res.Stream.Error)
			require.Len(t, res.Stream.Events, 5)
			for k, e := range res.Stream.Events {
				assert.Equal(t, k, e.Seq)
				assert.Positive(t, e.Delay())
				if k+1 < len(res.Stream.Events) {
					assert.Less(t, e.ArrivedUnixNs, res.Stream.Events[k+1].SentUnixNs, "each event arrives before the next is sent")
				}
			}
			if gz {
				assert.Equal(t, "gzip", res.Stream.Encoding)
			}
		})
	}
}

// rawServer accepts one connection on loopback and hands it to serve.
// TestIdleUnanswered: an idle connection whose request the server never
// answers, or answers with an error, is not a connection held.
func TestIdleUnanswered(t *testing.T) {
	for name, tc := range map[string]struct {
		want, status string
		serve        func(c *net.TCPConn)
	}{
		"503":    {want: OutcomeStatus, serve: func(c *net.TCPConn) { answer(t, c, "503 Service Unavailable"); c.Close() }},
		"closed": {want: OutcomeRefused, serve: func(c *net.TCPConn) { c.CloseWrite(); time.Sleep(50 * time.Millisecond); c.Close() }},
		"silent": {want: OutcomeTimeout, serve: func(c *net.TCPConn) { time.Sleep(time.Second); c.Close() }},
	} {
		t.Run(name, func(t *testing.T) {
			spec := NewSpec("http://"+rawServer(t, tc.serve), "t", WithDownloads(1), WithSlowKind(KindIdle))
			spec.HoldFor, spec.FastCount = 300*time.Millisecond, 0
			res, err := Run(context.Background(), spec)
			require.NoError(t, err)
			d := res.Downloads[0]
			assert.Equal(t, tc.want, d.Outcome(), "%+v", d)
			assert.False(t, d.Held)
		})
	}
}

// TestQuietConnectionsAreCheap holds thousands of silent and idle
// connections from one client against a Go server that keeps them, and
// checks that each is held and costs the client little: the scale column
// holds 10,000 in a 512 MiB client.
func TestQuietConnectionsAreCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 4,000 connections")
	}
	const n = 2000
	for _, kind := range []string{KindSilent, KindIdle} {
		addr := keepingServer(t, kind == KindIdle)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		spec := NewSpec("http://"+addr, "t", WithDownloads(n), WithSlowKind(kind))
		spec.HoldFor, spec.FastCount, spec.ConnectRate = 2*time.Second, 0, 4000 // a 0.5 s ramp
		var peak uint64
		done := make(chan struct{})
		go func() {
			time.Sleep(spec.Ramp() + 500*time.Millisecond)
			runtime.ReadMemStats(&after)
			peak = after.HeapInuse + after.StackInuse - before.HeapInuse - before.StackInuse
			close(done)
		}()
		res, err := Run(context.Background(), spec)
		require.NoError(t, err)
		<-done
		held := 0
		for _, d := range res.Downloads {
			if d.Outcome() == OutcomeHeld {
				held++
			}
		}
		assert.Equal(t, n, held, "%s: every connection held to its end", kind)
		perConn := float64(peak) / n
		t.Logf("%s: %d connections, %.1f KiB each in the client (heap and stacks)", kind, n, perConn/1024)
		assert.Less(t, perConn, 16.0*1024, "%s: 10,000 must fit the scale column's client", kind)
		starts := []time.Duration{res.Downloads[0].Start, res.Downloads[n-1].Start}
		// None starts early; a busy machine may start the last ones late.
		span := starts[1] - starts[0]
		assert.GreaterOrEqual(t, span.Seconds(), 0.95*spec.Ramp().Seconds(), "started over the ramp, not at once")
		assert.Less(t, span, spec.Ramp()+time.Second)
	}
}

// keepingServer keeps every connection open without a goroutine of its
// own, having answered its request when answers is set, so that what the
// client's connections cost is what the test measures.
func keepingServer(t *testing.T, answers bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var kept []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range kept {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			kept = append(kept, c)
			mu.Unlock()
			if !answers {
				continue
			}
			go func() {
				buf := make([]byte, 512)
				if n, _ := c.Read(buf); n > 0 {
					fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfast")
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// answer reads a request's header block from c and answers it with status
// and a four-byte body, keeping the connection open.
func answer(t *testing.T, c *net.TCPConn, status string) {
	r := bufio.NewReader(c)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Errorf("read request: %v", err)
			return
		}
		if l == "\r\n" {
			break
		}
	}
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Length: 4\r\n\r\nfast", status)
}

func rawServer(t *testing.T, serve func(c *net.TCPConn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		serve(c.(*net.TCPConn))
	}()
	return ln.Addr().String()
}
