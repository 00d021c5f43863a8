package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// The slow consumer of a team's own WebSocket feed (KindWSFeed): one
// WebSocket to WSURL, a path of the team's app that pushes what it
// pushes (prices, events, a log), read at DownloadRate through a
// ReceiveBuffer SO_RCVBUF (the slow reader's pacedConn), held for
// HoldFor after connecting and then closed normally (1000). The lab
// cannot know the feed's messages, so it counts them and their bytes,
// whatever their type and size, and checks nothing in them (KindWS is
// the lab's own /ws, whose every message is numbered). It is a held
// kind (Holds): no app record, an outcome of held, closed or reset; but
// a handshake answered with anything but 101 is never served (Served).

// wsFeedGrace bounds the close frame's write at the hold's end.
const wsFeedGrace = time.Second

// validateWSFeed names the first malformed field of a feed's consumer.
func (s Spec) validateWSFeed() error {
	if err := checkWSURL(s); err != nil {
		return err
	}
	switch {
	case s.HoldFor <= 0 || s.HoldFor > MaxHoldFor:
		return fmt.Errorf("load: HoldFor %v: want above 0 and at most %v", s.HoldFor, MaxHoldFor)
	case s.DownloadRate <= 0 || s.ReceiveBuffer <= 0 || s.ReadSize <= 0:
		return errors.New("load: DownloadRate, ReceiveBuffer and ReadSize must be positive")
	}
	return nil
}

// wsFeed runs one slow consumer of a team's feed named id.
func wsFeed(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: KindWSFeed, WantStatus: http.StatusSwitchingProtocols, Start: time.Since(runStart)}
	// The handshake has the hold, as a held connection's connect does.
	conn, pc, began := dialWS(ctx, spec, id, runStart, min(spec.HoldFor, spec.DownloadTimeout), &d)
	if conn == nil {
		return d
	}
	defer conn.Close()
	// At the hold's end the consumer sends its close (1000) and drains
	// the connection, unpaced and uncounted, until the feed answers it:
	// the close handshake, so that the feed sees a normal close, not a
	// reset of a socket closed unread. A feed that has not answered
	// within wsFeedGrace is cut then.
	end := began.Add(spec.HoldFor)
	conn.NetConn().SetReadDeadline(end.Add(wsFeedGrace))
	var closing atomic.Bool
	stop := time.AfterFunc(time.Until(end), func() {
		closing.Store(true)
		pc.unpaced.Store(true)
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wsFeedGrace))
	})
	defer stop.Stop()
	// The run's end (its context) ends the hold at once.
	defer context.AfterFunc(ctx, func() { conn.NetConn().SetDeadline(time.Unix(1, 0)) })()
	var err error
	for {
		var r io.Reader
		if _, r, err = conn.NextReader(); err != nil {
			break
		}
		var n int64
		n, err = io.Copy(io.Discard, r)
		if closing.Load() {
			continue // the close handshake's drain
		}
		d.Bytes += n
		if err != nil {
			break
		}
		d.Messages++
	}
	d.Completion = time.Since(began)
	if pc.started {
		d.FirstByte, d.FirstByteAt, d.Reads = pc.t0.Sub(began), pc.t0.Sub(runStart), pc.marks
	}
	var ce *websocket.CloseError
	switch {
	case ctx.Err() != nil:
		d.Error = ctx.Err().Error()
	case stop.Stop() || !closing.Load():
		// The feed ended before the hold did.
		if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
			d.Error = "websocket: " + strings.TrimPrefix(err.Error(), "websocket: ")
		}
	case errors.As(err, &ce) && ce.Code != websocket.CloseNormalClosure:
		// The drain came to a close other than the answer to the
		// consumer's: the feed dropped it (1011, a reset), its close
		// waiting behind what the consumer had not read yet.
		d.Error = "websocket: the feed ended the connection: " + strings.TrimPrefix(err.Error(), "websocket: ")
	default:
		// Open to the hold's end: the feed answered the close, or
		// sent nothing more within wsFeedGrace.
		d.Held, d.Completion = true, spec.HoldFor
	}
	return d
}

// checkWSURL names a WSURL that is no ws:// or wss:// URL, or a wss://
// one without its CA.
func checkWSURL(s Spec) error {
	u, err := url.Parse(s.WSURL)
	switch {
	case err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
		return fmt.Errorf("load: WSURL %q: want a ws:// or wss:// URL", s.WSURL)
	case u.Scheme == "wss" && s.CAPEM == "":
		return fmt.Errorf("load: WSURL %s is wss: want CAPEM, the certificate its server is trusted under", s.WSURL)
	}
	return nil
}

// Handshake asks the WebSocket u (ws:// or wss://, trusted under
// tlsConf) for its Upgrade, once, and closes it normally at once if it
// opened: the status it answered (101 when it takes WebSockets), or the
// error of a connection or handshake that got no answer. A stack's
// WebSocket check (labagent get -ws) runs it before any step.
func Handshake(ctx context.Context, u string, tlsConf *tls.Config) (int, error) {
	d := websocket.Dialer{TLSClientConfig: tlsConf}
	conn, resp, err := d.DialContext(ctx, u, nil)
	if resp != nil {
		resp.Body.Close()
	}
	if err == nil {
		defer conn.Close()
		closeAnswered(conn)
		return resp.StatusCode, nil
	}
	if errors.Is(err, websocket.ErrBadHandshake) && resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		return resp.StatusCode, nil
	}
	return 0, err // a 101 that failed the client's checks opened nothing
}

// closeAnswered closes conn normally (1000) and reads on, discarding,
// until the server answers its close, for at most wsFeedGrace.
func closeAnswered(conn *websocket.Conn) {
	deadline := time.Now().Add(wsFeedGrace)
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if conn.WriteControl(websocket.CloseMessage, msg, deadline) != nil {
		return
	}
	conn.SetReadDeadline(deadline)
	for {
		if _, _, err := conn.NextReader(); err != nil {
			return
		}
	}
}
