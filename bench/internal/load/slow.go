package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Slow-client kinds (Spec.SlowKind): what each of a run's slow clients
// does. A slow client of any kind is recorded as a Download (its Kind
// says which).
const (
	// KindRead is article A's slow reader: a download read at a paced
	// rate through a small receive buffer (the default, "").
	KindRead = "read"
	// KindUpload sends a POST body of UploadSize bytes at UploadRate
	// through a small send buffer, then reads the answer.
	KindUpload = "upload"
	// KindHeaders sends a request's header lines one every HeaderGap and
	// never ends them; it closes its connection HoldFor after connecting.
	KindHeaders = "headers"
	// KindSilent connects, sends nothing, and closes HoldFor later.
	KindSilent = "silent"
	// KindIdle is an idle keep-alive connection: it sends one whole
	// request for FastURL (HTTP/1.1, kept alive), reads its answer, then
	// sends nothing more and closes HoldFor after connecting, unless the
	// server closes it first (its keep-alive timeout).
	KindIdle = "idle"
	// KindTLS opens a connection to TLSURL's host and sends a real
	// ClientHello one byte every HeaderGap; it closes its connection
	// HoldFor after connecting (tls.go).
	KindTLS = "slow-tls"
	// KindH2Read is a slow HTTP/2 reader: one cleartext HTTP/2
	// connection with H2Streams streams for LargeURL, each read at
	// DownloadRate through a window of ReceiveBuffer bytes (h2.go).
	KindH2Read = "h2-slow-read"
	// KindH2Streams opens H2Streams streams for LargeURL on one cleartext
	// HTTP/2 connection with a window of 0, so no body byte may come, and
	// closes it HoldFor after connecting (h2.go).
	KindH2Streams = "h2-many-streams"
	// KindWS is a slow WebSocket consumer: one WebSocket to WSURL whose
	// server pushes WSMessages messages of WSMessageSize bytes, read at
	// DownloadRate through a ReceiveBuffer-byte SO_RCVBUF (ws.go).
	KindWS = "ws-slow-consumer"
	// KindWSFeed is a slow consumer of a team's own WebSocket feed: one
	// WebSocket to WSURL, read at DownloadRate through a ReceiveBuffer
	// SO_RCVBUF, whatever it pushes, and closed HoldFor after connecting
	// (wsfeed.go).
	KindWSFeed = "ws-feed"
)

// Defaults of the slow-client kinds beyond article A's reader.
const (
	DefaultUploadSize = 16 << 20
	DefaultUploadRate = 2 << 20 // bytes/s
	DefaultSendBuffer = 8 << 10 // SO_SNDBUF asked for
	DefaultHeaderGap  = 500 * time.Millisecond
	// DefaultHoldFor outlasts article A's /fast schedule (72 requests at
	// 8/s from 0.25 s end at 9.125 s): the slow headers never end, and
	// the silent connections stay silent, for the whole window. A longer
	// schedule needs a longer HoldFor.
	DefaultHoldFor = 9500 * time.Millisecond
	// MaxHoldFor bounds HoldFor.
	MaxHoldFor = time.Minute
)

// Holds reports whether a slow client of kind holds a connection open
// rather than moving a body: it has no body, so the app keeps no record
// of it, and it is never Complete.
func Holds(kind string) bool {
	return kind == KindHeaders || kind == KindSilent || kind == KindIdle || kind == KindTLS || kind == KindH2Streams || kind == KindWSFeed
}

// heldAnswer is the status a held connection of kind may get and still
// be held, closed or reset rather than answered (OutcomeStatus): an idle
// connection's request, a held stream's headers, a feed's 101; 0 for
// the kinds that send no whole request.
func heldAnswer(kind string) int {
	switch kind {
	case KindIdle, KindH2Streams:
		return http.StatusOK
	case KindWSFeed:
		return http.StatusSwitchingProtocols
	}
	return 0
}

// validateSlow names the first malformed slow-client field.
func (s Spec) validateSlow() error {
	if s.Downloads == 0 {
		return nil
	}
	if s.PacedByPath && s.SlowKind != "" && s.SlowKind != KindRead {
		return fmt.Errorf("load: PacedByPath with slow kind %q: want plain slow readers (%q), whose one socket a hop on the path paces", s.SlowKind, KindRead)
	}
	switch s.SlowKind {
	case "", KindRead, KindH2Read:
		if s.DownloadRate <= 0 || s.ReadSize <= 0 || s.LargeSize <= 0 || s.ReceiveBuffer <= 0 {
			return errors.New("load: DownloadRate, ReadSize, LargeSize and ReceiveBuffer must be positive")
		}
		if s.SlowKind == KindH2Read {
			return s.validateH2()
		}
	case KindUpload:
		if s.UploadRate <= 0 || s.UploadSize <= 0 || s.ReadSize <= 0 || s.SendBuffer <= 0 {
			return errors.New("load: UploadRate, UploadSize, ReadSize and SendBuffer must be positive")
		}
		return checkURL(s.UploadURL)
	case KindWS:
		return s.validateWS()
	case KindWSFeed:
		return s.validateWSFeed()
	case KindHeaders, KindSilent, KindIdle, KindTLS, KindH2Streams:
		if s.HoldFor <= 0 || s.HoldFor > MaxHoldFor {
			return fmt.Errorf("load: HoldFor %v: want above 0 and at most %v", s.HoldFor, MaxHoldFor)
		}
		if s.SlowKind == KindH2Streams {
			return s.validateH2()
		}
		if (s.SlowKind == KindHeaders || s.SlowKind == KindTLS) && (s.HeaderGap <= 0 || s.HeaderGap > s.HoldFor) {
			return fmt.Errorf("load: HeaderGap %v: want above 0 and at most HoldFor (%v)", s.HeaderGap, s.HoldFor)
		}
		if s.SlowKind == KindTLS {
			return checkTLSURL(s.TLSURL)
		}
	default:
		return fmt.Errorf("load: SlowKind %q: want %q, %q, %q, %q, %q, %q, %q, %q, %q or %q", s.SlowKind,
			KindRead, KindUpload, KindHeaders, KindSilent, KindIdle, KindTLS, KindH2Read, KindH2Streams, KindWS, KindWSFeed)
	}
	return nil
}

// plainOnly names a URL that is https where a client writes plain TCP:
// the event-stream reader's, and the slow clients' of an upload (its
// URL) and the header and idle kinds (HTTP/1.1 to FastURL's host). The
// HTTP/2 kinds speak TLS on an https LargeURL (dialH2).
func (s Spec) plainOnly() error {
	if s.Stream != nil && strings.HasPrefix(s.Stream.URL, "https://") {
		return fmt.Errorf("load: Stream.URL %s is https, but the event-stream reader writes plain TCP: want an http:// URL", s.Stream.URL)
	}
	var u, what string
	if s.Downloads > 0 {
		switch s.SlowKind {
		case KindUpload:
			u, what = s.UploadURL, "UploadURL"
		case KindHeaders, KindIdle:
			u, what = s.FastURL, "FastURL"
		}
	}
	if strings.HasPrefix(u, "https://") {
		return fmt.Errorf("load: %s %s is https, but %s clients write plain TCP: want an http:// URL", what, u, s.SlowKind)
	}
	return nil
}

func checkURL(u string) error {
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("load: %q is not an http:// or https:// URL", u)
	}
	return nil
}

// slowClient runs one slow client of spec's kind: its records, one but
// for the HTTP/2 kinds' streams (Spec.clientsRecords).
func slowClient(ctx context.Context, spec *Spec, id string, runStart time.Time) []Download {
	switch spec.SlowKind {
	case KindH2Read, KindH2Streams:
		return h2Client(ctx, spec, id, runStart)
	}
	return []Download{slowConn(ctx, spec, id, runStart)}
}

// slowConn runs one slow client of a kind that opens one connection.
func slowConn(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	switch spec.SlowKind {
	case KindUpload:
		return upload(ctx, spec, id, runStart)
	case KindHeaders:
		return hold(ctx, spec, id, runStart)
	case KindSilent, KindIdle:
		return quiet(ctx, spec, id, runStart)
	case KindTLS:
		return slowHello(ctx, spec, id, runStart)
	case KindWS:
		return wsConsumer(ctx, spec, id, runStart)
	case KindWSFeed:
		return wsFeed(ctx, spec, id, runStart)
	}
	return download(ctx, spec, id, runStart)
}

// BufferDialer sets SO_RCVBUF or SO_SNDBUF (opt) to size before connecting.
func BufferDialer(opt, size int) *net.Dialer {
	return &net.Dialer{KeepAlive: -1, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, opt, size) })
		return errors.Join(err, serr)
	}}
}

// upload POSTs UploadSize bytes to UploadURL at UploadRate, ReadSize bytes
// a write on an absolute schedule, then reads the answer. Bytes counts the
// body bytes the kernel took; the upload is complete when all were taken
// and the server answered 200.
func upload(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: KindUpload, Expected: spec.UploadSize, WantStatus: spec.UploadStatus, Start: time.Since(runStart)}
	ctx, cancel := context.WithTimeout(ctx, spec.DownloadTimeout)
	defer cancel()
	u, _ := url.Parse(spec.UploadURL) // checked by Validate
	conn, err := BufferDialer(syscall.SO_SNDBUF, spec.SendBuffer).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		d.Error = fmt.Sprintf("connect: %v", err)
		return d
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	defer cutOnStop(ctx, conn)()
	d.LocalPort = localPort(conn)
	head := "POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n" +
		"Content-Type: application/octet-stream\r\nContent-Length: " + strconv.FormatInt(spec.UploadSize, 10) +
		"\r\nX-Lab-Id: " + id + "\r\n\r\n"
	sent := time.Now()
	if _, err = io.WriteString(conn, head); err == nil {
		chunk := make([]byte, spec.ReadSize)
		for d.Bytes < spec.UploadSize && err == nil {
			time.Sleep(time.Until(sent.Add(time.Duration(float64(d.Bytes) / spec.UploadRate * float64(time.Second)))))
			var n int
			n, err = conn.Write(chunk[:min(int64(len(chunk)), spec.UploadSize-d.Bytes)])
			d.Bytes += int64(n)
		}
		if err != nil {
			err = fmt.Errorf("send body: %w", err)
		}
	}
	// The server may answer before the body ends (an error status):
	// read its answer whatever the send did.
	resp, rerr := http.ReadResponse(bufio.NewReader(conn), nil)
	if rerr == nil {
		d.Status = resp.StatusCode
		_, rerr = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	d.Completion = time.Since(sent)
	if err == nil && rerr != nil {
		err = fmt.Errorf("receive: %w", rerr)
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// hold opens a connection and holds it for HoldFor, sending a header line
// every HeaderGap that never ends the request. Whatever the
// server does meanwhile ends the hold early and is recorded: it answers
// (Status), closes (EOF) or resets the connection. Bytes counts the bytes
// sent.
func hold(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: spec.SlowKind, Start: time.Since(runStart)}
	conn, u, began := dialHeld(ctx, spec, spec.FastURL, &d)
	if conn == nil {
		return d
	}
	defer conn.Close()
	// The server's side: its first answer line, its close or its reset.
	ended := make(chan serverEnd, 1)
	go func() {
		line, err := bufio.NewReader(conn).ReadString('\n')
		if line != "" {
			ended <- serverEnd{status: statusOf(line)}
			return
		}
		ended <- serverEnd{err: err}
	}()
	lines := []string{"GET " + u.RequestURI() + " HTTP/1.1\r\n", "Host: " + u.Host + "\r\n", "X-Lab-Id: " + id + "\r\n"}
	// hold serves KindHeaders alone (silent and idle connections are
	// quiet's): the request line now, a header line every HeaderGap.
	k := 0
	d.holdSending(ctx, spec, conn, began, ended, func() error {
		line := fmt.Sprintf("X-Slow-%d: %d\r\n", k, k)
		if k < len(lines) {
			line = lines[k]
		}
		k++
		n, err := io.WriteString(conn, line)
		d.Bytes += int64(n)
		return err
	})
	return d
}

// holdSending holds conn, opened at began, and records how it ended in
// d: it calls send now and every HeaderGap, until HoldFor is over
// (Held), the server ends it (what its reader sent on ended) or a send
// fails; then it closes conn. After a failed send, the server's answer,
// close or reset, when it comes within 100 ms, is the better record.
func (d *Download) holdSending(ctx context.Context, spec *Spec, conn net.Conn, began time.Time, ended <-chan serverEnd, send func() error) {
	var end serverEnd
	var sendErr error
	deadline := time.NewTimer(spec.HoldFor)
	defer deadline.Stop()
	ticker := time.NewTicker(spec.HeaderGap)
	defer ticker.Stop()
loop:
	for sendErr = send(); sendErr == nil; {
		select {
		case <-ctx.Done():
			sendErr = ctx.Err()
		case <-deadline.C:
			d.Held = true
			break loop
		case end = <-ended:
			break loop
		case <-ticker.C:
			sendErr = send()
		}
	}
	d.Completion = time.Since(began)
	conn.Close()
	if d.Held {
		return
	}
	if end == (serverEnd{}) {
		select {
		case end = <-ended:
			if errors.Is(end.err, net.ErrClosed) {
				end.err = sendErr
			}
		case <-time.After(100 * time.Millisecond):
			end.err = sendErr
		}
	}
	d.Status = end.status
	if end.err != nil && !errors.Is(end.err, io.EOF) {
		d.Error = end.err.Error()
	}
}

// serverEnd is how the server ended a held connection: an answer's
// status, or the read error of its close (io.EOF) or reset.
type serverEnd struct {
	status int
	err    error
}

// statusOf is the status code of an HTTP status line, -1 when line is not
// one (the server sent something else).
func statusOf(line string) int {
	var major, minor, code int
	if _, err := fmt.Sscanf(line, "HTTP/%d.%d %d", &major, &minor, &code); err != nil {
		return -1
	}
	return code
}

// quiet holds a connection that sends nothing (KindSilent), or nothing
// after one kept-alive request and its answer (KindIdle), until HoldFor
// after connecting. It runs in one goroutine with a small buffer, so one
// client holds ten thousand of them: a single read waits for the
// server's close, reset or answer, and its deadline is the hold's end.
// For KindIdle, Status is the answer's and Bytes the request's length.
func quiet(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: spec.SlowKind, Start: time.Since(runStart)}
	conn, u, began := dialHeld(ctx, spec, spec.FastURL, &d)
	if conn == nil {
		return d
	}
	defer conn.Close()
	conn.SetDeadline(began.Add(spec.HoldFor))
	// The run's end (its context) ends the hold at once.
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	r := bufio.NewReaderSize(conn, quietBuffer)
	if spec.SlowKind == KindIdle {
		if err := idleRequest(conn, r, u, &d); err != nil {
			d.Completion = time.Since(began)
			d.Error = err.Error()
			return d
		}
	}
	line, err := r.ReadString('\n')
	d.Completion = time.Since(began)
	var ne net.Error
	switch {
	case line != "":
		// The server answered the silence (an error status, or a timeout
		// notice on an idle connection), or sent something else (-1).
		d.Status = statusOf(line)
	case errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil:
		d.Held = true
	case ctx.Err() != nil:
		d.Error = ctx.Err().Error()
	case !errors.Is(err, io.EOF):
		d.Error = err.Error()
	}
	return d
}

// quietBuffer is a quiet connection's read buffer: an answer's header
// lines pass through it; a response's header block may be longer.
const quietBuffer = 512

// idleRequest sends the one request of an idle keep-alive connection and
// reads its answer, whole. An answer that did not come within the hold
// is an error naming it.
func idleRequest(conn net.Conn, r *bufio.Reader, u *url.URL, d *Download) error {
	n, err := io.WriteString(conn, "GET "+u.RequestURI()+" HTTP/1.1\r\nHost: "+u.Host+"\r\n\r\n")
	d.Bytes = int64(n)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return fmt.Errorf("receive header: %w", err)
	}
	d.Status = resp.StatusCode
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("receive body: %w", err)
	}
	return nil
}

// dialHeld opens a held connection to rawURL's host (FastURL's; a slow
// TLS client's, TLSURL's) within HoldFor and records its port in d; it
// returns the connection, the URL and when it opened, or no connection
// and the failure in d.
func dialHeld(ctx context.Context, spec *Spec, rawURL string, d *Download) (net.Conn, *url.URL, time.Time) {
	u, err := url.Parse(rawURL)
	if err != nil {
		d.Error = err.Error()
		return nil, nil, time.Time{}
	}
	dialCtx, cancel := context.WithTimeout(ctx, spec.HoldFor)
	defer cancel()
	t0 := time.Now()
	conn, err := plainDialer.DialContext(dialCtx, "tcp", u.Host)
	d.Connect = time.Since(t0)
	if err != nil {
		d.Error = fmt.Sprintf("connect: %v", err)
		return nil, nil, time.Time{}
	}
	d.LocalPort = localPort(conn)
	return conn, u, time.Now()
}
