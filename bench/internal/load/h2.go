package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The HTTP/2 slow clients (KindH2Read, KindH2Streams). Each is one
// connection, spoken with golang.org/x/net/http2's Framer, that opens
// H2Streams streams for LargeURL: over cleartext (h2c, with prior
// knowledge) on an http URL, over TLS with ALPN h2 on an https one.
// HTTP/2's flow control is what makes them slow: a stream's server may
// send only as many bytes as the client's window allows, so a reader
// that returns its window at a pace holds the server's side of the
// stream as a slow TCP reader holds its socket.
//
// Each stream is recorded as a Download (ID "<client>-sN"). A slow
// reader's stream is a download: complete when its 200's body came whole
// and was read. A held stream (KindH2Streams) is held, closed, reset or
// answered with an error status, as the other held kinds are.

// MaxH2Streams bounds Spec.H2Streams: NGINX's http2_max_concurrent_streams
// defaults to 128, Hypercorn's to 100. DefaultH2Streams is a slow
// HTTP/2 reader's.
const (
	MaxH2Streams     = 256
	DefaultH2Streams = 4
)

// maxH2Window bounds a slow HTTP/2 reader's window (ReceiveBuffer):
// HTTP/2 allows 2^31-1 bytes, the lab's slow readers ask for kilobytes.
const maxH2Window = 16 << 20

// validateH2 names the first malformed field an HTTP/2 slow client has
// beyond its slow reader's or its held connection's (validateSlow).
func (s Spec) validateH2() error {
	if s.H2Streams < 1 || s.H2Streams > MaxH2Streams {
		return fmt.Errorf("load: H2Streams %d: want 1 to %d streams a connection", s.H2Streams, MaxH2Streams)
	}
	if s.SlowKind == KindH2Read && s.ReceiveBuffer > maxH2Window {
		return fmt.Errorf("load: ReceiveBuffer %d: a stream's window is at most %d bytes here", s.ReceiveBuffer, maxH2Window)
	}
	return nil
}

// clientsRecords is how many Downloads one slow client records: its
// streams for the HTTP/2 kinds, one for the others.
func (s Spec) clientsRecords() int {
	if s.SlowKind == KindH2Read || s.SlowKind == KindH2Streams {
		return s.H2Streams
	}
	return 1
}

// h2Stream is one stream's state beside its record.
type h2Stream struct {
	d *Download
	// received counts the DATA bytes (payload and padding: what the
	// window is charged); consumed those the pacer has read; returned
	// those given back to the window.
	received, consumed, returned int64
	t0                           time.Time // the first DATA frame
	sent                         time.Time // the request's HEADERS
	ended, done                  bool      // END_STREAM came; the record is final
}

// finish makes s's record final at now, with errText as its error, and
// counts it off remaining; a final record stays as it is.
func (s *h2Stream) finish(now time.Time, errText string, remaining *int) {
	if !s.done {
		s.done = true
		*remaining--
		s.d.Completion = now.Sub(s.sent)
		s.d.Error = errText
	}
}

// h2Event is one frame the reader goroutine read, copied out of the
// Framer's buffers, or the error that ended the connection.
type h2Event struct {
	typ      http2.FrameType
	stream   uint32
	n        int64 // DATA: the flow-controlled length
	end      bool  // END_STREAM
	ack      bool  // SETTINGS, PING
	status   int   // HEADERS' :status
	code     http2.ErrCode
	maxConc  uint32 // SETTINGS' MAX_CONCURRENT_STREAMS, 0 when absent
	lastID   uint32 // GOAWAY's last stream
	pingData [8]byte
	err      error
}

// h2Client runs one HTTP/2 slow client of spec's kind; id names its
// streams' records.
func h2Client(ctx context.Context, spec *Spec, id string, runStart time.Time) []Download {
	hold := spec.SlowKind == KindH2Streams
	ds := make([]Download, spec.H2Streams)
	began := time.Now()
	for i := range ds {
		ds[i] = Download{ID: fmt.Sprintf("%s-s%d", id, i+1), Kind: spec.SlowKind, Start: began.Sub(runStart)}
		if !hold {
			ds[i].Expected = spec.LargeSize
		}
	}
	fail := func(err error) []Download {
		for i := range ds {
			if ds[i].Error == "" {
				ds[i].Error = err.Error()
			}
		}
		return ds
	}
	u, err := url.Parse(spec.LargeURL)
	if err != nil {
		return fail(err)
	}
	limit := spec.DownloadTimeout
	if hold {
		limit = spec.HoldFor
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	conn, err := dialH2(ctx, u, BufferDialer(syscall.SO_RCVBUF, spec.ReceiveBuffer), spec.tlsConf)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Time{}) // the context's end sets it, below, so that ctx.Err() is set first
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	for i := range ds {
		ds[i].LocalPort = localPort(conn)
	}
	window := uint32(spec.ReceiveBuffer)
	if hold {
		window = 0 // the server may send headers, never a byte of body
	}
	fr := http2.NewFramer(conn, bufio.NewReaderSize(conn, 32<<10))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		return fail(fmt.Errorf("connect: send preface: %w", err))
	}
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		return fail(fmt.Errorf("connect: send settings: %w", err))
	}
	events := make(chan h2Event, 64)
	go readH2(fr, events)
	defer func() {
		conn.Close()
		for range events { // the reader ends on the closed connection
		}
	}()

	// The server's SETTINGS come first: how many streams it allows.
	ev, err := nextH2(ctx, events)
	if err != nil || ev.typ != http2.FrameSettings || ev.ack {
		why := "its first frame was not SETTINGS"
		if err != nil {
			why = err.Error()
		}
		return fail(fmt.Errorf("connect: no SETTINGS from the server (it may not speak HTTP/2 here): %s", why))
	}
	if err := fr.WriteSettingsAck(); err != nil {
		return fail(fmt.Errorf("connect: send settings ack: %w", err))
	}
	open := len(ds)
	if ev.maxConc > 0 && int(ev.maxConc) < open {
		open = int(ev.maxConc)
		for i := open; i < len(ds); i++ {
			ds[i].Error = fmt.Sprintf("connect: not opened: the server allows %d streams", ev.maxConc)
		}
	}
	streams := map[uint32]*h2Stream{}
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for i := range open {
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", u.Scheme}, {":authority", u.Host},
			{":path", u.RequestURI()}, {"x-lab-id", ds[i].ID}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}) // writes to a bytes.Buffer
		}
		sid := uint32(2*i + 1)
		streams[sid] = &h2Stream{d: &ds[i], sent: time.Now()}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: sid, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			return fail(fmt.Errorf("send request: %w", err))
		}
	}

	// A slow reader's pacing runs after every frame and at the next
	// moment a stream may read on (wake); a held client only waits.
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	remaining := open
	var connErr error
	for remaining > 0 && connErr == nil {
		select {
		case <-ctx.Done():
			connErr = ctx.Err()
			continue
		case <-wake.C:
		case ev := <-events:
			if connErr = takeH2(fr, streams, ev, runStart, &remaining); connErr != nil {
				continue
			}
		}
		if hold {
			continue
		}
		var next time.Time
		next, connErr = paceH2(fr, streams, spec, time.Now(), runStart, &remaining)
		if !next.IsZero() {
			wake.Reset(time.Until(next))
		}
	}
	if hold && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		for _, s := range streams {
			if !s.done {
				s.d.Held, s.done = true, true
				s.d.Completion = time.Since(began)
			}
		}
		return ds
	}
	for _, s := range streams {
		if !s.done {
			s.d.Completion = time.Since(s.sent)
			s.d.Error = connErr.Error()
		}
	}
	return ds
}

// dialH2 connects to u's host: h2c by prior knowledge on an http URL, or
// TLS under tc offering ALPN h2 and http/1.1 on an https one, refused by
// name when the server chose other than h2 (it cannot speak HTTP/2 there).
func dialH2(ctx context.Context, u *url.URL, dialer *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if tc != nil {
		tc = tc.Clone()
		tc.NextProtos = []string{http2.NextProtoTLS, "http/1.1"} // as a browser offers
	}
	conn, err := dialURL(ctx, u, dialer, tc)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "connect:") {
			err = fmt.Errorf("connect: %w", err) // a handshake that failed: never started, as a refused connect
		}
		return nil, err
	}
	if t, ok := conn.(*tls.Conn); ok {
		if p := t.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
			conn.Close()
			return nil, fmt.Errorf("connect: %s does not speak HTTP/2 over TLS: ALPN chose %q, not %q", u.Host, p, http2.NextProtoTLS)
		}
	}
	return conn, nil
}

// nextH2 is the reader's next event, or the context's end.
func nextH2(ctx context.Context, events <-chan h2Event) (h2Event, error) {
	select {
	case ev, ok := <-events:
		if !ok {
			return ev, errors.New("connection closed")
		}
		return ev, ev.err
	case <-ctx.Done():
		return h2Event{}, ctx.Err()
	}
}

// readH2 reads frames until the connection fails, and sends each on
// events as an h2Event; the last carries the error. It closes events.
func readH2(fr *http2.Framer, events chan<- h2Event) {
	defer close(events)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			events <- h2Event{err: err}
			return
		}
		ev := h2Event{typ: f.Header().Type, stream: f.Header().StreamID}
		switch f := f.(type) {
		case *http2.DataFrame:
			ev.n, ev.end = int64(f.Header().Length), f.StreamEnded()
		case *http2.MetaHeadersFrame:
			ev.status, _ = strconv.Atoi(f.PseudoValue("status"))
			ev.end = f.StreamEnded()
		case *http2.SettingsFrame:
			ev.ack = f.IsAck()
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				ev.maxConc = max(v, 1)
			}
		case *http2.PingFrame:
			ev.ack, ev.pingData = f.IsAck(), f.Data
		case *http2.RSTStreamFrame:
			ev.code = f.ErrCode
		case *http2.GoAwayFrame:
			ev.code, ev.lastID = f.ErrCode, f.LastStreamID
		}
		events <- ev
	}
}

// takeH2 applies one event: it records a stream's status, body bytes,
// end or reset, answers the server's SETTINGS and PINGs, and refuses the
// streams a GOAWAY names. An error ends the connection.
func takeH2(fr *http2.Framer, streams map[uint32]*h2Stream, ev h2Event, runStart time.Time, remaining *int) error {
	if ev.err != nil {
		return ev.err
	}
	finish := func(s *h2Stream, errText string) { s.finish(time.Now(), errText, remaining) }
	s := streams[ev.stream]
	switch ev.typ {
	case http2.FrameSettings:
		if !ev.ack {
			return fr.WriteSettingsAck()
		}
	case http2.FramePing:
		if !ev.ack {
			return fr.WritePing(true, ev.pingData)
		}
	case http2.FrameGoAway:
		for id, s := range streams {
			if id > ev.lastID {
				finish(s, fmt.Sprintf("refused: GOAWAY %v", ev.code))
			}
		}
	case http2.FrameHeaders:
		if s != nil && s.d.Status == 0 {
			s.d.Status = ev.status
			s.d.FirstByte = time.Since(s.sent)
		}
		if s != nil && ev.end {
			s.ended = true
			if s.d.Kind == KindH2Streams || s.received == s.consumed {
				finish(s, "")
			}
		}
	case http2.FrameData:
		if s == nil {
			return nil
		}
		if s.t0.IsZero() && ev.n > 0 {
			s.t0 = time.Now()
			s.d.FirstByteAt = s.t0.Sub(runStart)
		}
		s.received += ev.n
		s.ended = s.ended || ev.end
		if s.d.Kind == KindH2Streams && ev.end {
			finish(s, "")
		}
	case http2.FrameRSTStream:
		if s != nil {
			finish(s, fmt.Sprintf("connection reset: RST_STREAM %v", ev.code))
		}
	}
	return nil
}

// paceH2 reads each slow stream's received bytes at DownloadRate from its
// first DATA frame, as a paced reader drains its socket, and returns them
// to the stream's window and the connection's a ReadSize (at most a
// window) at a time; a stream whose END_STREAM came and whose bytes are
// all read is complete. It returns the next moment a stream may read a
// step on, or zero when every stream waits for the server.
func paceH2(fr *http2.Framer, streams map[uint32]*h2Stream, spec *Spec, now time.Time, runStart time.Time, remaining *int) (time.Time, error) {
	step := min(int64(spec.ReadSize), int64(spec.ReceiveBuffer))
	var toConn int64
	var next time.Time
	for id, s := range streams {
		if s.done || s.t0.IsZero() {
			continue
		}
		allowed := int64(spec.DownloadRate * now.Sub(s.t0).Seconds())
		if c := min(s.received, allowed); c > s.consumed {
			s.consumed = c
			s.d.Bytes = c
			s.d.Reads = append(s.d.Reads, ReadMark{At: now.Sub(runStart), Bytes: c})
		}
		if s.ended {
			toConn += s.consumed - s.returned // a closed stream: the connection's window only
			s.returned = s.consumed
			if s.consumed == s.received {
				s.finish(now, "", remaining)
				continue
			}
		} else if inc := s.consumed - s.returned; inc >= step {
			if err := fr.WriteWindowUpdate(id, uint32(inc)); err != nil {
				return time.Time{}, err
			}
			s.returned += inc
			toConn += inc
		}
		// The next step this stream can take once it may read it.
		target := s.returned + step
		if s.ended {
			target = s.received
		}
		if target <= s.received {
			// A microsecond on, so the rate's rounding cannot wake it early.
			at := s.t0.Add(time.Duration(float64(target)/spec.DownloadRate*float64(time.Second)) + time.Microsecond)
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	if toConn > 0 {
		if err := fr.WriteWindowUpdate(0, uint32(toConn)); err != nil {
			return time.Time{}, err
		}
	}
	return next, nil
}
