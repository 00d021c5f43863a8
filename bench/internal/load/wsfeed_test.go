package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feed is a team's WebSocket feed: it pushes size-byte text messages as
// fast as its writes return through a 16 KiB SO_SNDBUF, endlessly, or
// only count of them and then closes normally. When the consumer closes,
// it pushes backlog bytes more (what a server had queued before the
// close came in), then answers the close. It sends how the consumer's
// close ended on closed: its code once the whole backlog and the answer
// were written, -1 when the consumer reset the connection first.
func feed(t *testing.T, count, size, backlog int) (base string, closed <-chan int) {
	ch := make(chan int, 1)
	base = wsServer(t, 16<<10, func(c *websocket.Conn, _ *http.Request) {
		msg := make([]byte, size)
		var mu sync.Mutex // one writer at a time: the pusher, or the close
		stopped := false
		c.SetCloseHandler(func(code int, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			stopped = true
			for sent := 0; sent < backlog; sent += size {
				if c.WriteMessage(websocket.TextMessage, msg) != nil {
					ch <- -1
					return nil
				}
			}
			if c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second)) != nil {
				code = -1
			}
			ch <- code
			return nil
		})
		go func() {
			var ce *websocket.CloseError
			if _, _, err := c.ReadMessage(); !errors.As(err, &ce) {
				ch <- -1 // no close came: the close handler never ran
			}
		}()
		for i := 0; count == 0 || i < count; i++ {
			mu.Lock()
			if stopped || c.WriteMessage(websocket.TextMessage, msg) != nil {
				mu.Unlock()
				return
			}
			mu.Unlock()
		}
		mu.Lock()
		c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		mu.Unlock()
		time.Sleep(time.Second)
	})
	return base, ch
}

// feedSpec is one slow consumer of the feed at base, held for hold.
func feedSpec(base string, rate float64, hold time.Duration) Spec {
	spec := NewSpec(base, "t", WithDownloads(1), WithSlowKind(KindWSFeed))
	spec.WSURL, spec.DownloadRate, spec.HoldFor, spec.FastCount = WSURL(base, "/feed"), rate, hold, 0
	return spec
}

// TestWSFeedHoldsAndPaces: against a feed that pushes as fast as its
// writes return, the consumer reads at DownloadRate through its small
// receive buffer for HoldFor, whatever the messages are, then closes
// normally (1000), draining, unpaced and uncounted, what the feed still
// pushes before it answers: held, served, and about HoldFor x
// DownloadRate read and counted, whether the feed answers at once or
// after 4 MiB more (4 s at the consumer's pace, past the 1 s it waits:
// a paced drain would reset the feed's connection instead).
func TestWSFeedHoldsAndPaces(t *testing.T) {
	for _, backlog := range []int{0, 4 << 20} {
		t.Run(strconv.Itoa(backlog), func(t *testing.T) { feedHoldsAndPaces(t, backlog) })
	}
}

func feedHoldsAndPaces(t *testing.T, backlog int) {
	const rate, hold = 1 << 20, time.Second
	base, closed := feed(t, 0, 10_000, backlog)
	start := time.Now()
	res, err := Run(context.Background(), feedSpec(base, rate, hold))
	wall := time.Since(start)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeHeld, d.Outcome(), "%+v", d.Error)
	assert.True(t, d.Served())
	assert.False(t, d.Complete(), "a held connection is never complete")
	assert.Equal(t, http.StatusSwitchingProtocols, d.Status)
	// Held for HoldFor, then at most the close's grace.
	assert.GreaterOrEqual(t, wall, hold)
	assert.Less(t, wall, hold+wsFeedGrace+500*time.Millisecond)
	assert.InDelta(t, float64(rate), float64(d.Bytes), 0.2*rate, "read at DownloadRate: %d bytes", d.Bytes)
	assert.InDelta(t, d.Bytes/10_000, int64(d.Messages), 1, "every whole message counted")
	assert.NotEmpty(t, d.Reads)
	select {
	case code := <-closed:
		assert.Equal(t, websocket.CloseNormalClosure, code, "the consumer closes normally")
	case <-time.After(5 * time.Second):
		t.Fatal("the feed never saw the consumer's close")
	}
}

// TestWSFeedEndedByTheServer: a feed that ends with a normal close
// before the hold is over closed the connection, and served it.
func TestWSFeedEndedByTheServer(t *testing.T) {
	base, _ := feed(t, 3, 100, 0)
	res, err := Run(context.Background(), feedSpec(base, 1<<20, 5*time.Second))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeClosed, d.Outcome(), "%+v", d.Error)
	assert.True(t, d.Served())
	assert.Equal(t, 3, d.Messages)
	assert.EqualValues(t, 300, d.Bytes)
	assert.Less(t, d.Completion, 4*time.Second)
}

// TestWSFeedRefusesAPlainAnswer: a feed path that answers 200 instead of
// 101 is named, and fed nothing: never served, as a held connection the
// server answered otherwise would be.
func TestWSFeedRefusesAPlainAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	}))
	t.Cleanup(srv.Close)
	res, err := Run(context.Background(), feedSpec(srv.URL, 1<<20, time.Second))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeStatus, d.Outcome())
	assert.Contains(t, d.Error, "answered 200, not 101 Switching Protocols")
	assert.False(t, d.Served())
}

// TestWSFeedSpecValidate: the feed consumer's fields are checked, each
// named.
func TestWSFeedSpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Spec)
		want string
	}{
		"url":  {func(s *Spec) { s.WSURL = "http://127.0.0.1:1/feed" }, "WSURL"},
		"wss":  {func(s *Spec) { s.WSURL = "wss://127.0.0.1:1/feed" }, "want CAPEM"},
		"hold": {func(s *Spec) { s.HoldFor = 0 }, "HoldFor"},
		"rate": {func(s *Spec) { s.DownloadRate = 0 }, "DownloadRate"},
	} {
		t.Run(name, func(t *testing.T) {
			s := feedSpec("http://127.0.0.1:1", 1<<20, time.Second)
			require.NoError(t, s.Validate())
			tc.mod(&s)
			assert.ErrorContains(t, s.Validate(), tc.want)
		})
	}
}

// TestHandshake: a path that takes WebSockets answers 101 and is closed
// normally; one that does not answers its own status; no server at all
// is an error.
func TestHandshake(t *testing.T) {
	base, closed := feed(t, 0, 100, 0)
	status, err := Handshake(context.Background(), WSURL(base, "/feed"), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusSwitchingProtocols, status)
	select {
	case code := <-closed:
		assert.Equal(t, websocket.CloseNormalClosure, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the feed never saw the close")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) }))
	t.Cleanup(srv.Close)
	status, err = Handshake(context.Background(), WSURL(srv.URL, "/healthz"), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	_, err = Handshake(context.Background(), "ws://127.0.0.1:1/feed", nil)
	assert.Error(t, err)
}

// TestWSFeedDroppedBehindItsBacklog: a feed that drops its consumer
// (1011) behind 3 MiB the consumer has not read yet is seen only in the
// drain after the hold: an error, never held.
func TestWSFeedDroppedBehindItsBacklog(t *testing.T) {
	base := wsServer(t, 4<<20, func(c *websocket.Conn, _ *http.Request) {
		msg := make([]byte, 64<<10)
		for range 48 { // 3 MiB, into the socket's buffer
			if c.WriteMessage(websocket.BinaryMessage, msg) != nil {
				return
			}
		}
		c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "gone"), time.Now().Add(time.Second))
		time.Sleep(3 * time.Second)
	})
	res, err := Run(context.Background(), feedSpec(base, 1<<20, time.Second))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.False(t, d.Held)
	assert.Contains(t, d.Error, "the feed ended the connection")
	assert.Contains(t, d.Error, "1011")
	assert.Equal(t, OutcomeReset, d.Outcome())
}

// TestWSFeedRefusesAFailedHandshake: a 101 whose Sec-WebSocket-Accept is
// wrong opened nothing: the consumer is not served, and Handshake says
// it failed rather than that the path answered 101.
func TestWSFeedRefusesAFailedHandshake(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: wrong\r\n\r\n")
		buf.Flush()
		time.Sleep(time.Second)
	}))
	t.Cleanup(srv.Close)
	res, err := Run(context.Background(), feedSpec(srv.URL, 1<<20, time.Second))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Contains(t, d.Error, "handshake failed the client's checks")
	assert.False(t, d.Served(), "no feed opened")
	_, err = Handshake(context.Background(), WSURL(srv.URL, "/feed"), nil)
	assert.Error(t, err)
}
