package load

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClosedCountsLikeAB(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		switch {
		case k%10 == 0:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("0123456789"))
		case k%10 == 5:
			w.Write([]byte("0123")) // another length than the first good one
		default:
			w.Write([]byte("0123456789"))
		}
	}))
	t.Cleanup(srv.Close)

	res, err := Closed(context.Background(), ClosedSpec{URL: srv.URL + "/x", N: 100, C: 4, Timeout: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 100, res.Completed)
	assert.Equal(t, 10, res.FailedBy[FailNon2xx])
	assert.Equal(t, 10, res.FailedBy[FailLength])
	assert.Equal(t, 20, res.Failed)
	assert.Equal(t, 80, res.Latencies.Count)
	assert.Positive(t, res.ReqPerS)
	assert.Positive(t, res.CPU)
}

func TestClosedCountsConnectFailures(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	res, err := Closed(context.Background(), ClosedSpec{URL: url, N: 5, C: 1, Timeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, 5, res.FailedBy[FailConnect])
}

func TestClosedSpecValidate(t *testing.T) {
	err := ClosedSpec{URL: "http://127.0.0.1:1", N: 1, C: 2, Timeout: time.Second}.Validate()
	assert.ErrorContains(t, err, "C <= N")
	err = ClosedSpec{URL: "127.0.0.1:1", N: 1, C: 1, Timeout: time.Second}.Validate()
	assert.True(t, err != nil && strings.Contains(err.Error(), "http://"))
}

// The Burn knob makes our generator the bottleneck: each request costs at
// least Burn of CPU, whatever the server does.
func TestClosedBurnSlowsTheGenerator(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	const n, burn = 40, 3 * time.Millisecond
	res, err := Closed(context.Background(), ClosedSpec{URL: srv.URL, N: n, C: 4, Timeout: time.Second, Burn: burn})
	require.NoError(t, err)
	assert.Zero(t, res.Failed)
	assert.GreaterOrEqual(t, res.Total, time.Duration(n)*burn, "n x burn: the loop is one goroutine")

	err = ClosedSpec{URL: srv.URL, N: 1, C: 1, Timeout: time.Second, Burn: time.Second}.Validate()
	assert.ErrorContains(t, err, "Burn 1s: want 0 to 100ms")
}

// A server that accepts and never answers: each request fails as a
// receive failure at its timeout (ab's -s would end the run), and the run
// ends.
func TestClosedTimesOutASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	held := make(chan net.Conn, 8)
	t.Cleanup(func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	const timeout = 200 * time.Millisecond
	res, err := Closed(context.Background(), ClosedSpec{URL: "http://" + ln.Addr().String() + "/", N: 4, C: 2, Timeout: timeout})
	require.NoError(t, err)
	assert.Equal(t, 4, res.Completed)
	assert.Equal(t, 4, res.FailedBy[FailReceive])
	assert.GreaterOrEqual(t, res.Total, 2*timeout, "two rounds of two")
	assert.Less(t, res.Total, 2*timeout+200*time.Millisecond, "each ended within the deadline check's period")
}

// Bodies larger than the read buffer are counted to the byte, and a server
// that closes without an answer is a receive failure.
func TestClosedCountsLargeBodiesAndEmptyAnswers(t *testing.T) {
	var n atomic.Int64
	big := strings.Repeat("x", 300<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		w.Write([]byte(big))
	}))
	t.Cleanup(srv.Close)
	res, err := Closed(context.Background(), ClosedSpec{URL: srv.URL + "/big", N: 40, C: 5, Timeout: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 40, res.Completed)
	assert.Equal(t, map[string]int{FailReceive: 10}, res.FailedBy, "no length failure: every body counted whole")
}

func TestClosedStopsOnItsContext(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() }) // accepts nothing: connections wait in the backlog
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err = Closed(ctx, ClosedSpec{URL: "http://" + ln.Addr().String() + "/", N: 10, C: 2, Timeout: 30 * time.Second})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(began), time.Second)
}

// A server that resets the connection after part of its answer: the bytes
// before the reset are readable, then the reset; a receive failure, as ab
// -r counts it and as the goroutine engine did, never a good answer (whose
// truncated length would then make every good one a length failure).
func TestClosedCountsAResetAsAReceiveFailure(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				c.Read(buf)
				c.Write([]byte("HTTP/1.0 200 OK\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 500)))
				c.(*net.TCPConn).SetLinger(0) // the reset follows the bytes at once
				c.Close()
			}()
		}
	}()
	res, err := Closed(context.Background(), ClosedSpec{URL: "http://" + ln.Addr().String() + "/", N: 20, C: 4, Timeout: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 20, res.Completed)
	assert.Equal(t, map[string]int{FailReceive: 20}, res.FailedBy)
}
