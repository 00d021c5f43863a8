package load

import (
	"context"
	"encoding/binary"
	"net"
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

// wsPusher is a WebSocket server that pushes the messages seqs names (a
// message of size bytes each, opening with its sequence number) as fast
// as its writes return, through a sndbuf-byte SO_SNDBUF, then closes
// normally; it records when each write returned and the ?count= and
// ?size= it was asked for.
type wsPusher struct {
	seqs   []uint64
	size   int
	sndbuf int
	mu     sync.Mutex
	wrote  []time.Time
	query  string
}

// wsServer is a WebSocket server for a test: each connection it
// upgrades, its SO_SNDBUF set to sndbuf (0: the kernel's own), goes to
// serve with its request, and is closed once serve returns.
func wsServer(t *testing.T, sndbuf int, serve func(c *websocket.Conn, r *http.Request)) string {
	up := websocket.Upgrader{WriteBufferSize: 4096}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if sndbuf > 0 {
			require.NoError(t, c.NetConn().(*net.TCPConn).SetWriteBuffer(sndbuf))
		}
		serve(c, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (p *wsPusher) serve(t *testing.T) string {
	return wsServer(t, p.sndbuf, func(c *websocket.Conn, r *http.Request) {
		p.mu.Lock()
		p.query = r.URL.RawQuery
		p.mu.Unlock()
		msg := make([]byte, p.size)
		for _, seq := range p.seqs {
			binary.BigEndian.PutUint64(msg, seq)
			if c.WriteMessage(websocket.BinaryMessage, msg) != nil {
				return
			}
			p.mu.Lock()
			p.wrote = append(p.wrote, time.Now())
			p.mu.Unlock()
		}
		c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for { // until the consumer's close answers ours
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	})
}

// wsSpec is one slow consumer of count messages of size bytes at base.
func wsSpec(base string, count, size int, rate float64) Spec {
	spec := NewSpec(base, "t", WithDownloads(1), WithSlowKind(KindWS))
	spec.WSMessages, spec.WSMessageSize, spec.DownloadRate, spec.FastCount = count, size, rate, 0
	spec.WSURL = WSURLFor(base, count, size)
	return spec
}

func seqs(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i)
	}
	return out
}

// TestWSConsumerPacesReads: against a WebSocket server that pushes as
// fast as its writes return, the slow consumer reads the socket at
// DownloadRate through its small receive buffer, so its 1 MiB takes a
// second, and the server's writes are held back to within its buffers of
// the consumer's pace: backpressure reaches the sender.
func TestWSConsumerPacesReads(t *testing.T) {
	const count, size, rate = 64, 16 << 10, 1 << 20 // 1 MiB at 1 MiB/s
	p := &wsPusher{seqs: seqs(count), size: size, sndbuf: 16 << 10}
	base := p.serve(t)
	spec := wsSpec(base, count, size, rate)
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeComplete, d.Outcome(), "%+v", d.Error)
	assert.Equal(t, http.StatusSwitchingProtocols, d.Status)
	assert.Equal(t, count, d.Messages)
	assert.EqualValues(t, count*size, d.Bytes)
	assert.Zero(t, d.Lost)
	assert.Zero(t, d.Reordered)
	assert.InDelta(t, 1.0, d.Completion.Seconds(), 0.2, "read at DownloadRate")
	assert.NotEmpty(t, d.Reads)
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Equal(t, "count="+strconv.Itoa(count)+"&size="+strconv.Itoa(size), p.query)
	require.Len(t, p.wrote, count)
	// The server's buffers (a 16 KiB send buffer, doubled by the kernel,
	// and the consumer's 8 KiB receive buffer, doubled) and a message in
	// flight hold at most about 112 KiB: the last write cannot return
	// before the consumer has read the rest.
	slack := 2*(16<<10) + 2*DefaultReceiveBuffer + 2*size
	earliest := time.Duration(float64(count*size-slack) / rate * float64(time.Second))
	assert.GreaterOrEqual(t, p.wrote[count-1].Sub(p.wrote[0]), earliest-50*time.Millisecond, "the sender is held to the consumer's pace")
}

// TestWSConsumerCountsEveryMessage: a message missing from the sequence
// and one out of order are counted and make the consumer's record an
// error, and so is a normal close before the last message.
func TestWSConsumerCountsEveryMessage(t *testing.T) {
	p := &wsPusher{seqs: []uint64{0, 1, 3, 2, 5}, size: 64}
	spec := wsSpec(p.serve(t), 6, 64, 1<<20)
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, 5, d.Messages)
	assert.Equal(t, 1, d.Lost, "4 never came")
	assert.Equal(t, 1, d.Reordered, "2 came after 3")
	assert.Contains(t, d.Error, "1 messages lost and 1 out of order")
	assert.False(t, d.Complete())

	p = &wsPusher{seqs: seqs(3), size: 64}
	res, err = Run(context.Background(), wsSpec(p.serve(t), 4, 64, 1<<20))
	require.NoError(t, err)
	d = res.Downloads[0]
	assert.Equal(t, "websocket: closed normally after 3 of 4 messages", d.Error)
	assert.Equal(t, OutcomeTruncated, d.Outcome())
}

// TestWSConsumerRefusesAPlainAnswer: a path that answers 200 instead of
// 101 Switching Protocols is named as not taking WebSockets.
func TestWSConsumerRefusesAPlainAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"fast": true}`))
	}))
	t.Cleanup(srv.Close)
	res, err := Run(context.Background(), wsSpec(srv.URL, 4, 64, 1<<20))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, http.StatusOK, d.Status)
	assert.Contains(t, d.Error, "answered 200, not 101 Switching Protocols")
	assert.Equal(t, OutcomeStatus, d.Outcome())
}

// TestWSSpecValidate: the consumer's fields are checked, each named.
func TestWSSpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Spec)
		want string
	}{
		"url":      {func(s *Spec) { s.WSURL = "http://127.0.0.1:1/ws" }, "WSURL"},
		"wss":      {func(s *Spec) { s.WSURL = "wss://127.0.0.1:1/ws" }, "want CAPEM"},
		"messages": {func(s *Spec) { s.WSMessages = 0 }, "WSMessages"},
		"size":     {func(s *Spec) { s.WSMessageSize = 4 }, "WSMessageSize"},
		"rate":     {func(s *Spec) { s.DownloadRate = 0 }, "DownloadRate"},
	} {
		t.Run(name, func(t *testing.T) {
			s := wsSpec("http://127.0.0.1:1", 4, 64, 1<<20)
			require.NoError(t, s.Validate())
			tc.mod(&s)
			assert.ErrorContains(t, s.Validate(), tc.want)
		})
	}
}
