package load

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// The slow WebSocket consumer (KindWS): one WebSocket (RFC 6455, spoken
// by gorilla/websocket) to WSURL, whose server pushes WSMessages binary
// messages of WSMessageSize bytes as fast as its transport takes them
// and then waits for the consumer to close (1000) once it has them all;
// the consumer reads the socket at DownloadRate through a ReceiveBuffer
// SO_RCVBUF (the slow reader's pacedConn), so what the server cannot send
// waits in its own buffers, or pushes back on its sender.
//
// Each message opens with its sequence number (8 bytes, big-endian, from
// 0): the consumer counts every message, and one missing before the last
// received (Lost), arriving after a later one (Reordered), repeated, or
// a close before the last is an error, never a silent loss. A consumer
// is complete when every message came whole and in order; it then closes
// normally (1000) itself (closeWS).

// Defaults of a slow WebSocket consumer: 256 messages of 64 KiB, the
// 16 MiB of article A's download, read at its 2 MiB/s (8 s).
const (
	DefaultWSMessages    = 256
	DefaultWSMessageSize = 64 << 10
	// MaxWSMessages and MaxWSMessageSize bound the app's ?count= and
	// ?size= (wsgiapp/asgiapp.py's own caps).
	MaxWSMessages    = 1 << 16
	MaxWSMessageSize = 1 << 20
	// wsSeqBytes is the sequence number's length at a message's start.
	wsSeqBytes = 8
)

// WSURLFor is the app's WebSocket at base (an http:// or https:// URL)
// pushing count messages of size bytes.
func WSURLFor(base string, count, size int) string {
	return WSURL(base, fmt.Sprintf("%s?count=%d&size=%d", WSPath, count, size))
}

// WSPath is the app's WebSocket (wsgiapp/asgiapp.py).
const WSPath = "/ws"

// WSURL is path at base, an http:// or https:// URL turned ws:// or wss://.
func WSURL(base, path string) string {
	return strings.Replace(strings.Replace(base, "https://", "wss://", 1), "http://", "ws://", 1) + path
}

// validateWS names the first malformed field of a slow WebSocket consumer.
func (s Spec) validateWS() error {
	if err := checkWSURL(s); err != nil {
		return err
	}
	switch {
	case s.WSMessages < 1 || s.WSMessages > MaxWSMessages:
		return fmt.Errorf("load: WSMessages %d: want 1 to %d", s.WSMessages, MaxWSMessages)
	case s.WSMessageSize < wsSeqBytes || s.WSMessageSize > MaxWSMessageSize:
		return fmt.Errorf("load: WSMessageSize %d: want %d (the sequence number) to %d bytes", s.WSMessageSize, wsSeqBytes, MaxWSMessageSize)
	case s.DownloadRate <= 0 || s.ReceiveBuffer <= 0 || s.ReadSize <= 0:
		return errors.New("load: DownloadRate, ReceiveBuffer and ReadSize must be positive")
	}
	return nil
}

// wsConsumer runs one slow WebSocket consumer named id.
func wsConsumer(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: KindWS, WantStatus: http.StatusSwitchingProtocols,
		Expected: int64(spec.WSMessages) * int64(spec.WSMessageSize), Start: time.Since(runStart)}
	ctx, cancel := context.WithTimeout(ctx, spec.DownloadTimeout)
	defer cancel()
	conn, pc, sent := dialWS(ctx, spec, id, runStart, spec.DownloadTimeout, &d)
	if conn == nil {
		return d
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.NetConn().SetDeadline(time.Unix(1, 0)) })()
	conn.SetReadLimit(int64(spec.WSMessageSize))
	seen := make([]bool, spec.WSMessages)
	var top uint64 // one past the highest sequence number received
	for d.Messages < spec.WSMessages {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				d.Error = err.Error()
			}
			break
		}
		d.Messages++
		d.Bytes += int64(len(msg))
		if typ != websocket.BinaryMessage || len(msg) != spec.WSMessageSize {
			d.Error = fmt.Sprintf("websocket: message %d is %d bytes of type %d, want %d bytes, binary", d.Messages, len(msg), typ, spec.WSMessageSize)
			break
		}
		seq := binary.BigEndian.Uint64(msg)
		if seq >= uint64(len(seen)) || seen[seq] {
			d.Error = fmt.Sprintf("websocket: message %d carries sequence number %d: past the %d pushed, or repeated", d.Messages, seq, spec.WSMessages)
			break
		}
		seen[seq] = true
		if seq+1 < top {
			d.Reordered++
		}
		top = max(top, seq+1)
	}
	if pc != nil && pc.started {
		pc.finish()
		d.FirstByte = pc.t0.Sub(sent) // the 101's first byte: the pacing's start
		d.FirstByteAt = pc.t0.Sub(runStart)
		d.Completion = time.Since(sent) // to the last message read, the close left out
		d.Reads = pc.marks
	}
	if d.Messages == spec.WSMessages && d.Error == "" {
		d.Error = closeWS(conn)
	}
	for _, ok := range seen[:top] {
		if !ok {
			d.Lost++
		}
	}
	switch {
	case d.Lost > 0 || d.Reordered > 0:
		d.Error = strings.TrimSuffix(fmt.Sprintf("websocket: %d messages lost and %d out of order before the last received; %s", d.Lost, d.Reordered, d.Error), "; ")
	case d.Error == "" && d.Messages < spec.WSMessages:
		d.Error = fmt.Sprintf("websocket: closed normally after %d of %d messages", d.Messages, spec.WSMessages)
	}
	return d
}

// dialWS opens spec's WebSocket (WSURL) for the consumer id, its reads
// paced at DownloadRate through a ReceiveBuffer SO_RCVBUF, and records
// the handshake in d: its connect time, its status (101 only once the
// handshake passed the client's checks), and its failure named (nil
// conn); pc's read marks count from runStart. sent is when the
// connection was open and the handshake sent. The handshake has
// handshakeWait.
func dialWS(ctx context.Context, spec *Spec, id string, runStart time.Time, handshakeWait time.Duration, d *Download) (conn *websocket.Conn, pc *pacedConn, sent time.Time) {
	dialer := websocket.Dialer{
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			began := time.Now()
			c, err := BufferDialer(syscall.SO_RCVBUF, spec.ReceiveBuffer).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			sent = time.Now()
			d.Connect, d.ReceiveBufferGranted, d.LocalPort = sent.Sub(began), receiveBuffer(c), localPort(c)
			pc = &pacedConn{Conn: c, rate: spec.DownloadRate, max: spec.ReadSize, runStart: runStart}
			return pc, nil
		},
		HandshakeTimeout: handshakeWait,
		ReadBufferSize:   spec.ReadSize,
	}
	if spec.tlsConf != nil {
		dialer.TLSClientConfig = spec.tlsConf.Clone()
	}
	conn, resp, err := dialer.DialContext(ctx, spec.WSURL, http.Header{"X-Lab-Id": {id}})
	if resp != nil {
		d.Status = resp.StatusCode
		resp.Body.Close()
	}
	if err == nil {
		return conn, pc, sent
	}
	switch {
	case errors.Is(err, websocket.ErrBadHandshake) && resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		d.Error = fmt.Sprintf("websocket: %s answered %d, not 101 Switching Protocols: its path does not take WebSockets", spec.WSURL, resp.StatusCode)
	case errors.Is(err, websocket.ErrBadHandshake):
		// A 101 the client refused opened nothing: no status to serve by.
		d.Status = 0
		d.Error = fmt.Sprintf("websocket: %s answered 101, but its handshake failed the client's checks (Upgrade, Connection, Sec-WebSocket-Accept)", spec.WSURL)
	case pc == nil:
		d.Error = fmt.Sprintf("connect: %v", err)
	default:
		d.Error = fmt.Sprintf("websocket handshake: %v", err)
	}
	return nil, nil, sent
}

// closeWS closes conn normally, as a consumer that has every message
// does, and waits for the server's answer: "" once it came, or the
// connection ended otherwise (every message was had: how the server
// ends the connection is not the data's), an error when a message came
// past the last pushed.
func closeWS(conn *websocket.Conn) string {
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(wsCloseWait)) != nil {
		return ""
	}
	conn.SetReadDeadline(time.Now().Add(wsCloseWait))
	if _, _, err := conn.ReadMessage(); err == nil {
		return "websocket: a message past the last pushed"
	}
	return ""
}

// wsCloseWait bounds the close handshake.
const wsCloseWait = 5 * time.Second
