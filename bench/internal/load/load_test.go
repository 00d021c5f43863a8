package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// server answers /fast with 12 bytes and /large with size bytes, on
// loopback, and remembers the X-Lab-Id headers it saw.
func server(t *testing.T, size int) (*httptest.Server, *[]string) {
	var ids []string
	mux := http.NewServeMux()
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok": true}`)) })
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		ids = append(ids, r.Header.Get("X-Lab-Id"))
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, &ids
}

func TestRunPacesDownloadsAndKeepsTheSchedule(t *testing.T) {
	const size = 512 << 10
	srv, ids := server(t, size)
	spec := NewSpec(srv.URL, "t", WithDownloads(1))
	spec.LargeSize = size
	spec.DownloadRate = 2 << 20 // 512 KiB at 2 MiB/s: 250 ms
	spec.FastCount, spec.FastRate, spec.FastOffset = 8, 40, 10*time.Millisecond

	res, err := Run(context.Background(), spec)
	require.NoError(t, err)

	require.Len(t, res.Downloads, 1)
	d := res.Downloads[0]
	assert.True(t, d.Complete(), "%+v", d)
	assert.Equal(t, []string{"t-dl1"}, *ids)
	assert.InDelta(t, 0.25, d.Completion.Seconds(), 0.05, "paced completion")
	assert.Equal(t, 2*DefaultReceiveBuffer, d.ReceiveBufferGranted, "Linux doubles SO_RCVBUF")
	// The client counts its own reads: body bytes only, rising to the size.
	require.NotEmpty(t, d.Reads)
	assert.EqualValues(t, size, d.Reads[len(d.Reads)-1].Bytes, "the last read completes the body")
	got, ok := d.ReadBy(d.Reads[len(d.Reads)/2].At)
	assert.True(t, ok)
	assert.Less(t, got, int64(size), "half way through, part of the body is unread")
	_, ok = d.ReadBy(0)
	assert.False(t, ok, "nothing is known before the first read")
	// No time daemon steps this machine's clock under a unit test: wall
	// and monotonic elapsed times agree to the clocks' reads.
	assert.Less(t, res.WallStep.Abs(), time.Millisecond, "the wall clock's step against the monotonic one")

	require.Len(t, res.Fast, 8)
	for k, p := range res.Fast {
		assert.True(t, p.OK(res.Spec), "%+v", p)
		assert.Equal(t, 10*time.Millisecond+time.Duration(k)*25*time.Millisecond, p.Scheduled)
		assert.GreaterOrEqual(t, p.Lag, time.Duration(0), "never early")
	}
}

// A run given StopOnLag stops once its requests' lag crosses a bound:
// bounds of a nanosecond are crossed by the second request at the latest
// (a start is never exactly on its slot). The slow download is cut where
// it stood, the requests not yet due are never sent, and Stopped says
// why; without StopOnLag the same load runs whole (the test above).
func TestRunStopsOnLag(t *testing.T) {
	const size = 4 << 20
	srv, _ := server(t, size)
	spec := NewSpec(srv.URL, "t", WithDownloads(1))
	spec.LargeSize = size // 2 s at 2 MiB/s
	spec.FastCount, spec.FastRate, spec.FastOffset = 16, 8, 10*time.Millisecond
	spec.BaselineRequests = 4
	spec.StopOnLag = &LagStop{Worst: time.Nanosecond, Second: time.Nanosecond}

	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Contains(t, res.Stopped, "started", "why the run stopped")
	d := res.Downloads[0]
	assert.False(t, d.Complete(), "the download is cut: %+v", d)
	assert.Less(t, d.Bytes, int64(size))
	assert.NotEmpty(t, d.Error)
	sent, notSent := 0, 0
	for _, p := range res.Fast {
		if p.Error == NotSent {
			notSent++
			assert.False(t, p.OK(spec))
		} else {
			sent++
		}
	}
	assert.LessOrEqual(t, sent, 2, "the second request's lag crosses the bounds at the latest")
	assert.Equal(t, len(res.Fast)-sent, notSent)
	assert.Empty(t, res.Baseline, "no baseline after a stop")
}

// LagStop's bounds are crossed only past them, as the redo rule's are
// (disturb.LagStop checks that the two agree).
func TestLagStopCrossed(t *testing.T) {
	b := LagStop{Worst: 25 * time.Millisecond, Second: 5 * time.Millisecond}
	assert.NoError(t, b.Crossed(25*time.Millisecond, 5*time.Millisecond))
	assert.ErrorContains(t, b.Crossed(25*time.Millisecond+1, 0), "25.000001ms late")
	assert.ErrorContains(t, b.Crossed(6*time.Millisecond, 5*time.Millisecond+1), "two /fast requests")
	bad := NewSpec("http://127.0.0.1:8000", "x")
	bad.StopOnLag = &LagStop{Worst: time.Millisecond, Second: 2 * time.Millisecond}
	assert.ErrorContains(t, bad.Validate(), "StopOnLag")
}

func TestRunReportsAShortBody(t *testing.T) {
	srv, _ := server(t, 1000)
	spec := NewSpec(srv.URL, "t", WithDownloads(1))
	spec.LargeSize = 2000
	spec.FastCount = 0
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	assert.False(t, res.Downloads[0].Complete())
	assert.Contains(t, res.Downloads[0].Error, "1000 bytes, want 2000")
}

func TestSpecValidate(t *testing.T) {
	assert.NoError(t, NewSpec("http://127.0.0.1:8000", "x").Validate())
	bad := NewSpec("ftp://x", "x")
	assert.ErrorContains(t, bad.Validate(), "not an http:// or https:// URL")
	neg := NewSpec("http://127.0.0.1:8000", "x", WithDownloads(-1))
	assert.ErrorContains(t, neg.Validate(), "negative")
}

// TestDownloadOutcome serves /large from a raw listener that ends each
// response its own way, and checks that the slow client names it.
func TestDownloadOutcome(t *testing.T) {
	const size = 64 << 10
	for _, tc := range []struct {
		name, want string
		serve      func(c *net.TCPConn)
	}{
		{"whole", OutcomeComplete, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
			c.Write(make([]byte, size))
			c.Close()
		}},
		{"closed-early", OutcomeTruncated, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
			c.Write(make([]byte, size/2))
			c.Close()
		}},
		{"reset", OutcomeReset, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size)
			c.Write(make([]byte, size/2))
			time.Sleep(50 * time.Millisecond)
			c.SetLinger(0) // close with RST
			c.Close()
		}},
		// A short body presented as whole: a Content-Length that says so,
		// or a body ended by the connection's close. Only the lab's own
		// count of what the app sent can tell.
		{"short-as-whole-length", OutcomeSilentShort, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", size/2)
			c.Write(make([]byte, size/2))
			c.Close()
		}},
		{"short-as-whole-close", OutcomeSilentShort, func(c *net.TCPConn) {
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
			c.Write(make([]byte, size/2))
			c.Close()
		}},
		{"chunked-cut", OutcomeTruncated, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", size/2)
			c.Write(make([]byte, size/2))
			c.Write([]byte("\r\n"))
			c.Close()
		}},
		{"chunked-whole", OutcomeComplete, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n", size)
			c.Write(make([]byte, size))
			c.Write([]byte("\r\n0\r\n\r\n"))
			c.Close()
		}},
		{"longer-than-asked", OutcomeOverlong, func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 2*size)
			c.Write(make([]byte, 2*size))
			c.Close()
		}},
		{"error-status", OutcomeStatus, func(c *net.TCPConn) {
			fmt.Fprint(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}},
		{"no-header", OutcomeRefused, func(c *net.TCPConn) { c.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			t.Cleanup(func() { ln.Close() })
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				bufio.NewReader(c).ReadString('\n') // the request line is enough
				tc.serve(c.(*net.TCPConn))
			}()
			spec := NewSpec("http://"+ln.Addr().String(), "t", WithDownloads(1))
			spec.LargeSize, spec.FastCount, spec.DownloadRate = size, 0, 4<<20
			res, err := Run(context.Background(), spec)
			require.NoError(t, err)
			d := res.Downloads[0]
			assert.Equal(t, tc.want, d.Outcome(), "error: %s", d.Error)
			assert.Equal(t, tc.want == OutcomeSilentShort, d.ShortAsWhole, "only a clean end by the body's own framing is a short body presented as whole")
		})
	}
}

// A team's fast path answers with its own status and body length: the
// spec's FastStatus and AnyLength say what counts as served.
func TestFastRequestOK(t *testing.T) {
	lab := Spec{FastBodyBytes: 12}
	team := Spec{FastBodyBytes: AnyLength, FastStatus: http.StatusNoContent}
	for _, tc := range []struct {
		p        FastRequest
		lab, own bool
	}{
		{FastRequest{Status: 200, Bytes: 12}, true, false},
		{FastRequest{Status: 200, Bytes: 13}, false, false},
		{FastRequest{Status: 204, Bytes: 0}, false, true},
		{FastRequest{Status: 204, Bytes: 0, Error: "reset"}, false, false},
		{FastRequest{Status: 500, Bytes: 12}, false, false},
	} {
		assert.Equal(t, tc.lab, tc.p.OK(lab), "lab %+v", tc.p)
		assert.Equal(t, tc.own, tc.p.OK(team), "team %+v", tc.p)
	}
	up := Download{Kind: KindUpload, Status: 201, Bytes: 5, Expected: 5}
	assert.False(t, up.Complete(), "a 201 is not the lab app's 200")
	up.WantStatus = 201
	assert.True(t, up.Complete(), "but is the upload path's declared status")
	assert.Equal(t, OutcomeComplete, up.Outcome())
}

// waitUntil never returns before its slot, from a Go sleep or from the
// kernel's, and spinUntil (its fallback) neither.
func TestWaitUntilNeverEarly(t *testing.T) {
	for k := range 20 {
		due := time.Now().Add(time.Duration(k%4) * 1500 * time.Microsecond)
		if k%2 == 0 {
			waitUntil(due, nil)
		} else {
			spinUntil(due)
		}
		if now := time.Now(); now.Before(due) {
			t.Fatalf("wait %d returned %v before its slot", k, due.Sub(now))
		}
	}
}

// A load given After starts its clock only once that address answers,
// and fails, naming it, when it never does.
func TestRunStartsAfterReady(t *testing.T) {
	srv, _ := server(t, 1000)
	spec := NewSpec(srv.URL, "t")
	spec.FastCount, spec.FastRate = 1, 10
	spec.After = fmt.Sprintf("@wsgilab-load-test-%d", time.Now().UnixNano())

	done := make(chan Result, 1)
	go func() {
		res, err := Run(context.Background(), spec)
		assert.NoError(t, err)
		done <- res
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("the load ran before its After address answered")
	default:
	}
	listened := time.Now()
	ln, err := net.Listen("unix", spec.After)
	require.NoError(t, err)
	defer ln.Close()
	res := <-done
	assert.GreaterOrEqual(t, res.StartUnixNano, listened.UnixNano(), "the clock starts after the address answers")
	assert.Less(t, time.Duration(res.StartUnixNano-listened.UnixNano()), 50*time.Millisecond, "within a few polls")
	require.Len(t, res.Fast, 1)

	spec.After = fmt.Sprintf("@wsgilab-load-test-none-%d", time.Now().UnixNano())
	spec.AfterWait = 30 * time.Millisecond
	_, err = Run(context.Background(), spec)
	assert.ErrorContains(t, err, spec.After+" did not answer within 30ms")

	spec.AfterWait = -time.Second
	assert.ErrorContains(t, spec.Validate(), "AfterWait -1s is negative")
}

// A run stays armed (its lags held to the stop's absolute bounds) until
// enough of its requests have taken Second/Share, done or in flight, to
// put its p95 there: here 1 of 16, so its second request already finds
// the run disarmed, and a second-worst bound of 1 ns never stops it. The
// judge's fold (ArmedLags) replays the same requests the same way.
func TestRunDisarmsWithItsP95(t *testing.T) {
	srv, _ := server(t, 1<<20)
	spec := NewSpec(srv.URL, "t")
	spec.FastCount, spec.FastRate, spec.FastOffset = 16, 50, 10*time.Millisecond
	spec.BaselineRequests = 0
	spec.StopOnLag = &LagStop{Worst: time.Second, Second: time.Nanosecond, Share: 0.5}
	arm := NewArming(*spec.StopOnLag, spec.FastCount)
	require.Equal(t, 1, arm.Slow)
	require.Equal(t, 2*time.Nanosecond, arm.Limit)

	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Empty(t, res.Stopped, "disarmed once the first request has taken 2 ns")
	armed := ArmedLags(*spec.StopOnLag, res.Fast)
	assert.Equal(t, Latest{Worst: res.Fast[0].Lag}, armed, "the first request's lag alone")

	spec.StopOnLag.Share = 0 // never disarmed: the second request's lag stops it
	res, err = Run(context.Background(), spec)
	require.NoError(t, err)
	assert.Contains(t, res.Stopped, "two /fast requests")
}

// The judge's fold over a stalled run's records: the requests that start
// once 4 of 72 have been held past 100 ms (5 ms / 5 %) are left out; an
// idle run's are all in.
func TestArmedLags(t *testing.T) {
	b := LagStop{Worst: 25 * time.Millisecond, Second: 5 * time.Millisecond, Share: 0.05}
	ms := time.Millisecond
	var stalled, idle []FastRequest
	for k := range 72 {
		p := FastRequest{Seq: k, Scheduled: time.Duration(k) * 125 * ms, Latency: 2 * ms}
		q := p
		if k >= 2 { // held from the third request on
			q.Latency = 3 * time.Second
		}
		if k == 40 || k == 50 {
			p.Lag, q.Lag = 9*ms, 9*ms
		}
		idle, stalled = append(idle, p), append(stalled, q)
	}
	assert.Equal(t, Latest{Worst: 9 * ms, Second: 9 * ms}, ArmedLags(b, idle))
	assert.Equal(t, Latest{}, ArmedLags(b, stalled), "disarmed from request 6 on (2, 3, 4 and 5 held 100 ms)")
	stalled[4].Lag = 7 * ms // before the run is disarmed
	assert.Equal(t, Latest{Worst: 7 * ms}, ArmedLags(b, stalled))
	stalled[5].Error = NotSent
	assert.Equal(t, Latest{Worst: 7 * ms}, ArmedLags(b, stalled), "a request never sent is left out")
}

// A reader paced by the path (Spec.PacedByPath) takes the body as the path gives it,
// whatever DownloadRate says, and still records each read: here the
// server paces 512 KiB at 2 MiB/s itself (in 64 KiB writes 31.25 ms
// apart, 250 ms in all), and the spec's 1 MiB/s, which the reader would
// take 500 ms to keep, is only the path's nominal rate. Its reads follow
// the server's writes, not the rate.
func TestReaderPacedByThePath(t *testing.T) {
	const size, chunk = 512 << 10, 64 << 10
	mux := http.NewServeMux()
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		for range size / chunk {
			w.Write(make([]byte, chunk))
			w.(http.Flusher).Flush()
			time.Sleep(time.Second * chunk / (2 << 20))
		}
	})
	mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok": true}`)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	spec := NewSpec(srv.URL, "t", WithDownloads(1))
	spec.LargeSize, spec.DownloadRate, spec.PacedByPath = size, 1<<20, true
	spec.FastCount, spec.FastRate, spec.FastOffset = 4, 40, 10*time.Millisecond
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, res.Downloads, 1)
	d := res.Downloads[0]
	assert.True(t, d.Complete(), "%+v", d)
	assert.Less(t, d.Completion, 400*time.Millisecond, "paced by the server's 250 ms, not the reader's 500")
	assert.GreaterOrEqual(t, d.Completion, 7*time.Second*chunk/(2<<20), "the server's last write comes 7 sleeps in")
	require.NotEmpty(t, d.Reads)
	assert.EqualValues(t, size, d.Reads[len(d.Reads)-1].Bytes, "every read is recorded, the last completing the body")
	assert.GreaterOrEqual(t, len(d.Reads), size/chunk, "at least a read per write")

	h2 := NewSpec(srv.URL, "t", WithDownloads(1), WithSlowKind(KindH2Read))
	h2.PacedByPath = true
	assert.ErrorContains(t, h2.Validate(), `load: PacedByPath with slow kind "h2-slow-read": want plain slow readers ("read")`)
}
