package load

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// StreamSpec is one event-stream (SSE) reader: it GETs URL, whose events
// each carry their send time as "data: <ns since the epoch>", and stamps
// each event's arrival, so the delay a proxy adds is measured per event.
type StreamSpec struct {
	URL string `json:"url"`
	// Events is how many events the stream sends, 1 to MaxStreamEvents.
	Events int `json:"events"`
	// AcceptGzip sends Accept-Encoding: gzip (and decodes a gzip answer).
	AcceptGzip bool `json:"accept_gzip,omitempty"`
	// Timeout bounds the whole stream.
	Timeout time.Duration `json:"timeout_ns"`
}

// MaxStreamEvents bounds StreamSpec.Events.
const MaxStreamEvents = 1000

func (s *StreamSpec) validate() error {
	if s == nil {
		return nil
	}
	switch {
	case s.Events < 1 || s.Events > MaxStreamEvents:
		return fmt.Errorf("load: Stream.Events %d: want 1 to %d", s.Events, MaxStreamEvents)
	case s.Timeout <= 0 || s.Timeout > MaxHoldFor:
		return fmt.Errorf("load: Stream.Timeout %v: want above 0 and at most %v", s.Timeout, MaxHoldFor)
	}
	return checkURL(s.URL)
}

// StreamResult is the event stream as the reader saw it.
type StreamResult struct {
	Status int `json:"status"`
	// Encoding is the answer's Content-Encoding ("" or "gzip").
	Encoding string  `json:"encoding,omitempty"`
	Events   []Event `json:"events"`
	Error    string  `json:"error,omitempty"`
}

// Event is one event: when the app sent it and when the reader had it,
// on the shared wall clock.
type Event struct {
	Seq           int   `json:"seq"`
	SentUnixNs    int64 `json:"sent_unix_ns"`
	ArrivedUnixNs int64 `json:"arrived_unix_ns"`
}

// Delay is how long the event took from the app to the reader.
func (e Event) Delay() time.Duration { return time.Duration(e.ArrivedUnixNs - e.SentUnixNs) }

// readStream reads the stream of s to its end.
func readStream(ctx context.Context, s StreamSpec) StreamResult {
	var r StreamResult
	err := func() error {
		ctx, cancel := context.WithTimeout(ctx, s.Timeout)
		defer cancel()
		u, _ := url.Parse(s.URL) // checked by validate
		conn, err := plainDialer.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		defer conn.Close()
		dl, _ := ctx.Deadline()
		conn.SetDeadline(dl)
		defer cutOnStop(ctx, conn)()
		req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\nAccept: text/event-stream\r\n"
		if s.AcceptGzip {
			req += "Accept-Encoding: gzip\r\n"
		}
		if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return fmt.Errorf("receive header: %w", err)
		}
		defer resp.Body.Close()
		r.Status, r.Encoding = resp.StatusCode, resp.Header.Get("Content-Encoding")
		var body io.Reader = resp.Body
		if r.Encoding == "gzip" {
			// gzip's reader hands out what each flushed block decodes to,
			// so an event is stamped when its block arrives.
			zr, err := gzip.NewReader(body)
			if err != nil {
				return fmt.Errorf("gzip: %w", err)
			}
			body = zr
		}
		return r.scan(body, s.Events)
	}()
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// scan stamps each "data:" line as it is read, up to want events; an
// "id:" line numbers the event that follows.
func (r *StreamResult) scan(body io.Reader, want int) error {
	sc := bufio.NewScanner(body)
	seq := len(r.Events)
	for len(r.Events) < want && sc.Scan() {
		now := time.Now().UnixNano()
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			if n, err := strconv.Atoi(v); err == nil {
				seq = n
			}
			continue
		}
		v, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		sent, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("event %d: data %q is not a time in ns", seq, v)
		}
		r.Events = append(r.Events, Event{Seq: seq, SentUnixNs: sent, ArrivedUnixNs: now})
		seq++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("receive body: %w", err)
	}
	return nil
}
