// Package load is the lab's load generators, run inside the client
// container (labagent), so their CPU is the client's budget. For slow-client
// conditions (Run): slow downloads that read through a small receive buffer
// at a paced rate and count their reads, and an open-loop /fast requester
// that sends its requests on an absolute schedule. For throughput
// (Closed): a closed loop with ab's semantics, and ab's output parser.
package load

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of Spec, from article A.
const (
	DefaultDownloadRate     = 2 << 20 // bytes/s
	DefaultReceiveBuffer    = 8 << 10 // SO_RCVBUF asked for; Linux grants double
	DefaultReadSize         = 16 << 10
	DefaultLargeSize        = 16 << 20
	DefaultFastRate         = 8 // requests/s
	DefaultFastCount        = 72
	DefaultFastOffset       = 250 * time.Millisecond
	DefaultFastTimeout      = 30 * time.Second
	DefaultDownloadTimeout  = 60 * time.Second
	DefaultFastBodyBytes    = 12
	DefaultBaselineRequests = 72
	DefaultBaselineGap      = 25 * time.Millisecond
)

// Spec is one run's load. The harness sends it to labagent as JSON.
type Spec struct {
	// LargeURL is the download target; the body must be LargeSize bytes.
	LargeURL  string `json:"large_url"`
	LargeSize int64  `json:"large_size"`
	// Downloads is how many slow clients run at once (0 for none), of
	// SlowKind: slow downloads unless it says otherwise.
	Downloads int `json:"downloads"`
	// SlowKind is what the slow clients do: KindRead ("" too), KindUpload,
	// KindHeaders, KindSilent, KindIdle, KindTLS, KindH2Read,
	// KindH2Streams or KindWS.
	SlowKind string `json:"slow_kind,omitempty"`
	// ConnectRate, when above 0, starts the slow clients this many a
	// second, the k-th k/ConnectRate after the run's start, instead of
	// all at once: thousands of connections opened at once overflow any
	// listen backlog, and the SYNs retried a second later would measure
	// the burst, not the connections held. The ramp (Downloads /
	// ConnectRate) is at most MaxRamp.
	ConnectRate float64 `json:"connect_rate,omitempty"`
	// IDPrefix names the downloads (IDPrefix-dlK) in X-Lab-Id, so the
	// app's write records can be matched to them.
	IDPrefix string `json:"id_prefix"`
	// DownloadRate is the rate the slow readers' downloads are paced at,
	// in bytes per second: by the client's own reads, or, when PacedByPath,
	// by the path.
	DownloadRate float64 `json:"download_rate"`
	// PacedByPath makes slow readers (KindRead) read as fast as their socket
	// gives, recording every read: something on the path paces them at
	// DownloadRate (a Toxiproxy bandwidth hop, the lab's second
	// instrument for its pacer), and the client only watches.
	PacedByPath bool `json:"paced_by_path,omitempty"`
	// ReceiveBuffer is the SO_RCVBUF set before connecting, in bytes.
	ReceiveBuffer int `json:"receive_buffer"`
	// ReadSize caps each read from the socket, in bytes.
	ReadSize        int           `json:"read_size"`
	DownloadTimeout time.Duration `json:"download_timeout_ns"`

	// UploadURL is a KindUpload's target; each POSTs UploadSize bytes at
	// UploadRate bytes per second, ReadSize bytes a write, through a
	// SendBuffer-byte SO_SNDBUF.
	UploadURL string `json:"upload_url,omitempty"`
	// UploadStatus is the answer a served upload gets; 0 is 200.
	UploadStatus int     `json:"upload_status,omitempty"`
	UploadSize   int64   `json:"upload_size,omitempty"`
	UploadRate   float64 `json:"upload_rate,omitempty"`
	SendBuffer   int     `json:"send_buffer,omitempty"`
	// HoldFor is how long a KindHeaders, KindSilent, KindIdle, KindTLS,
	// KindH2Streams or KindWSFeed client holds its connection (to
	// FastURL's host; KindTLS: to TLSURL's; KindWSFeed: to WSURL's)
	// before it closes it; a KindHeaders client sends a header
	// line every HeaderGap meanwhile, a KindTLS client a byte of its
	// ClientHello.
	HoldFor   time.Duration `json:"hold_for_ns,omitempty"`
	HeaderGap time.Duration `json:"header_gap_ns,omitempty"`
	// TLSURL is a KindTLS client's target, an https:// URL: its host is
	// dialled, its host name is the hello's server name.
	TLSURL string `json:"tls_url,omitempty"`
	// CAPEM is the only certificate an https:// URL's server is trusted
	// under (the pod's CA), PEM; required when any URL is https. /fast,
	// its baseline and the downloads then handshake TLS on each new
	// connection, with no session resumption: a new client's full cost.
	CAPEM string `json:"ca_pem,omitempty"`
	// tlsConf is CAPEM's client config, made once by Run.
	tlsConf *tls.Config
	// H2Streams is how many streams a KindH2Read or KindH2Streams client
	// opens on its one connection (at most MaxH2Streams, and at most what
	// the server's SETTINGS_MAX_CONCURRENT_STREAMS allows: a stream past
	// it is recorded as not opened). Each stream is a Download.
	H2Streams int `json:"h2_streams,omitempty"`
	// WSURL is a KindWS consumer's WebSocket (ws:// or wss://), whose
	// server pushes WSMessages binary messages of WSMessageSize bytes,
	// each opening with its sequence number (WSURLFor); or a KindWSFeed
	// consumer's, a team's feed (WSURL).
	WSURL         string `json:"ws_url,omitempty"`
	WSMessages    int    `json:"ws_messages,omitempty"`
	WSMessageSize int    `json:"ws_message_size,omitempty"`

	// Stream, when set, runs one event-stream reader beside the /fast
	// requester (stream.go).
	Stream *StreamSpec `json:"stream,omitempty"`

	// FastURL is the requested endpoint; its body must be FastBodyBytes
	// long (AnyLength: any length) and its status FastStatus (0: 200).
	FastURL       string `json:"fast_url"`
	FastBodyBytes int64  `json:"fast_body_bytes"`
	FastStatus    int    `json:"fast_status,omitempty"`
	// FastRate and FastCount make the open-loop schedule: request k is
	// sent at start + FastOffset + k/FastRate, whatever earlier ones do.
	FastRate   float64       `json:"fast_rate"`
	FastCount  int           `json:"fast_count"`
	FastOffset time.Duration `json:"fast_offset_ns"`
	// FastTimeout bounds one /fast request.
	FastTimeout time.Duration `json:"fast_timeout_ns"`
	// FastH2 runs a second /fast series over HTTP/2 beside the HTTP/1.1
	// one (fasth2.go): FastCount requests on the same schedule, each half
	// an interval after its HTTP/1.1 twin, each over a new connection
	// (TLS with ALPN h2 on an https FastURL, h2c by prior knowledge on an
	// http one). Its records are Result.FastH2; StopOnLag follows the
	// HTTP/1.1 series only.
	FastH2 bool `json:"fast_h2,omitempty"`
	// H2Only says the entry point takes HTTP/2 only: NGINX's h2c
	// listener (listen … http2 without ssl), which NGINX 1.22 serves by
	// prior knowledge and which answers no HTTP/1.1. The /fast series
	// itself, and its baseline, then go over h2c, each request a new
	// connection; FastURL must be http, FastH2 off, and the slow clients
	// HTTP/2's.
	H2Only bool `json:"h2_only,omitempty"`

	// BaselineRequests, after the load, times that many raw exchanges
	// with FastURL (connect, write the request, read to EOF; no HTTP
	// parsing, no scheduler), BaselineGap apart so the CPU quotas refill
	// as they do between the /fast requester's requests: what the endpoint costs
	// without the harness.
	BaselineRequests int           `json:"baseline_requests"`
	BaselineGap      time.Duration `json:"baseline_gap_ns"`

	// After, when set, is a unix socket address (a leading @ names one
	// in the abstract namespace, which a pod's containers share with its
	// network) that the load connects to before its clock starts: a
	// sampler's probe.SamplerSpec.ReadyAddr, open once the sampler has
	// taken its first sample (or, with its QuietFor, once the counts it
	// waits for are quiet, at most probe.MaxQuietWait). The load retries every AfterPoll for at most
	// AfterWait (DefaultAfterWait when 0), then fails naming the address.
	// The sampler's and the load's starts then overlap instead of
	// following each other.
	After     string        `json:"after,omitempty"`
	AfterWait time.Duration `json:"after_wait_ns,omitempty"`

	// Warm, when set, is fetched whole before the sampler starts
	// (RunWarm, which labrun execs as labagent warm and a Job's client
	// runs itself), so that what the server opens on first use is in the
	// count before the load. Run does not warm.
	Warm *Warm `json:"warm,omitempty"`

	// StopOnLag, when set, ends the run as soon as the /fast requester's
	// own lag has made it a run the series redoes (disturb's lag bounds,
	// which the harness copies here): the rest of its window would only
	// be thrown away. Result.Stopped then says why; such a run is never
	// summarized as valid.
	StopOnLag *LagStop `json:"stop_on_lag,omitempty"`

	// HiccupEvery, when above 0, runs the client's hiccup meter over the
	// load with this sleep (hiccup.go; DefaultHiccupEvery); at least
	// MinHiccupEvery. With it, the client's early stop holds only the
	// worst lag: the meter witnesses the stalls the second-worst sampled.
	HiccupEvery time.Duration `json:"hiccup_every_ns,omitempty"`
}

// MinHiccupEvery is the shortest sleep the meter takes: at 2 ms its wakes
// already cost an idle client about as much as its load (hiccup.go), and
// each halving of the sleep doubles that.
const MinHiccupEvery = time.Millisecond

// LagStop is when a run stops early for its requester's lag: one request
// started more than Worst late, or two more than Second late (not in a
// run that meters its hiccups: Spec.HiccupEvery), while the run is armed.
// These are the redo rule's own bounds (disturb.Judge's lag and
// lag-second checks), which only grow as requests start: once crossed, no
// later request can uncross them.
//
// With Share, the rule lets a run's lags grow with its /fast p95 (a lag
// of 10 ms is nothing to a p95 of seconds): the run is armed only until
// its p95 is sure to reach Second/Share, that is until enough requests
// have taken that long, done or still in flight (Armed). A run stopped
// while armed is one the rule discards whatever the rest would measure;
// past that, only the rule judges, at the end, against the p95.
type LagStop struct {
	Worst  time.Duration `json:"worst_ns"`
	Second time.Duration `json:"second_ns"`
	Share  float64       `json:"share,omitempty"`
}

// lagWatch applies a LagStop to the lags of a run's requests as they
// start; stop is called once, with the reason, when one crosses it.
type lagWatch struct {
	bounds LagStop
	stop   func(error)
	mu     sync.Mutex
	late   Latest
	done   bool
	arm    Arming
	// metered: the run meters its hiccups (Spec.HiccupEvery), so only
	// the worst lag stops it.
	metered bool
}

// Latest folds requests' lags into the worst and the second-worst, as
// both the early stop (LagStop) and the redo rule's summary read them.
type Latest struct{ Worst, Second time.Duration }

// Add folds in one lag.
func (l *Latest) Add(lag time.Duration) {
	if lag > l.Worst {
		l.Worst, l.Second = lag, l.Worst
	} else if lag > l.Second {
		l.Second = lag
	}
}

// begin starts request seq, due at due in a run started at runStart: it
// takes the start's time under the watch's lock, so that the requests'
// starts are in the order the watch saw them, as the judge orders them
// from the records (ArmedLags), and folds its lag. Without a watch it
// only takes the time.
func (w *lagWatch) begin(seq int, runStart, due time.Time) time.Time {
	if w == nil {
		return time.Now()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	began := time.Now()
	at, lag := began.Sub(runStart), began.Sub(due)
	armed := w.arm.Armed(at)
	w.arm.Start(seq, at)
	if w.done || !armed {
		return began
	}
	w.late.Add(lag)
	second := w.late.Second
	if w.metered {
		second = 0
	}
	if why := w.bounds.Crossed(w.late.Worst, second); why != nil {
		w.done = true
		w.stop(why)
	}
	return began
}

// end ends request seq, begun at began, and returns its latency, taken
// under the lock: a request another one's begin found in flight ended
// after that begin.
func (w *lagWatch) end(seq int, began time.Time) time.Duration {
	if w == nil {
		return time.Since(began)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	latency := time.Since(began)
	w.arm.End(seq, latency)
	return latency
}

// Arming says when a run is armed under a LagStop (its lags held to the
// absolute bounds): until Slow of its requests have taken Limit or more,
// done or in flight, which puts its p95 (the nearest rank) at Limit or
// above. The client's stop and the redo rule's judge (ArmedLags) fold the
// same requests' lags by it. A zero Limit is never disarmed.
type Arming struct {
	Limit time.Duration
	Slow  int
	spans map[int]span
}

type span struct{ start, latency time.Duration } // latency < 0: in flight

// NewArming is the arming of b over a run of n /fast requests.
func NewArming(b LagStop, n int) Arming {
	a := Arming{Slow: n - int(math.Ceil(0.95*float64(n))) + 1}
	if b.Share > 0 {
		a.Limit = time.Duration(float64(b.Second) / b.Share)
	}
	return a
}

// Start records request seq's start at offset at.
func (a *Arming) Start(seq int, at time.Duration) {
	if a.spans == nil {
		a.spans = map[int]span{}
	}
	a.spans[seq] = span{at, -1}
}

// End records request seq's latency.
func (a *Arming) End(seq int, latency time.Duration) {
	if s, ok := a.spans[seq]; ok {
		s.latency = latency
		a.spans[seq] = s
	}
}

// Armed is whether the run is still armed at offset at: fewer than Slow
// requests started before at had taken Limit by then (a request done by
// then counts its latency, one in flight the time since its start).
func (a *Arming) Armed(at time.Duration) bool {
	if a.Limit <= 0 {
		return true
	}
	slow := 0
	for _, s := range a.spans {
		took := at - s.start
		if s.latency >= 0 {
			took = min(took, s.latency)
		}
		if s.start < at && took >= a.Limit {
			slow++
		}
	}
	return slow < a.Slow
}

// ArmedLags folds the lags of the /fast requests that started while the
// run was armed under b, in the order they started, as the client's stop
// did: the worst and second-worst lag the stop held to its bounds. Requests
// never sent are left out.
func ArmedLags(b LagStop, fast []FastRequest) Latest {
	sent := slices.DeleteFunc(slices.Clone(fast), func(p FastRequest) bool { return strings.HasPrefix(p.Error, NotSent) })
	slices.SortStableFunc(sent, func(x, y FastRequest) int { return cmp.Compare(x.Scheduled+x.Lag, y.Scheduled+y.Lag) })
	arm := NewArming(b, len(fast))
	var late Latest
	for _, p := range sent {
		at := p.Scheduled + p.Lag
		if arm.Armed(at) {
			late.Add(p.Lag)
		}
		arm.Start(p.Seq, at)
		arm.End(p.Seq, p.Latency)
	}
	return late
}

// Crossed says which bound a run's worst and second-worst lag so far
// crossed, or nil.
func (b LagStop) Crossed(worst, second time.Duration) error {
	switch {
	case worst > b.Worst:
		return fmt.Errorf("a /fast request started %v late (the redo rule's bound: %v)", worst, b.Worst)
	case second > b.Second:
		return fmt.Errorf("two /fast requests started %v and %v late (the redo rule's bound for the second: %v)", worst, second, b.Second)
	}
	return nil
}

// Defaults of Spec.After.
const (
	// DefaultAfterWait bounds the wait for After: a sampler takes its
	// first sample within 0.2 s of its exec here, and waits for quiet
	// descriptors at most 6 s more (probe.MaxQuietWait).
	DefaultAfterWait = 10 * time.Second
	// AfterPoll is the wait's retry period; the window starts at most
	// this late after the sampler is ready.
	AfterPoll = 2 * time.Millisecond
)

// Option changes a Spec.
type Option func(*Spec)

// WithDownloads sets the number of concurrent slow downloads.
func WithDownloads(n int) Option { return func(s *Spec) { s.Downloads = n } }

// WithSlowKind sets what the slow clients do (KindRead, KindUpload,
// KindHeaders, KindSilent, KindIdle or KindTLS), with that kind's
// defaults: uploads of DefaultUploadSize at DefaultUploadRate to base's
// /upload; connections held for DefaultHoldFor, with a header line (or a
// hello's byte) every DefaultHeaderGap; DefaultH2Streams streams a slow
// HTTP/2 reader, as many as the server allows (up to MaxH2Streams) held
// ones. A KindTLS client's TLSURL is WithTLSURL's.
func WithSlowKind(kind string) Option {
	return func(s *Spec) {
		s.SlowKind = kind
		switch kind {
		case KindUpload:
			s.UploadURL = strings.TrimSuffix(s.FastURL, "/fast") + "/upload"
			s.UploadSize, s.UploadRate, s.SendBuffer = DefaultUploadSize, DefaultUploadRate, DefaultSendBuffer
		case KindHeaders, KindSilent, KindIdle, KindTLS:
			s.HoldFor, s.HeaderGap = DefaultHoldFor, DefaultHeaderGap
		case KindH2Read:
			s.H2Streams = DefaultH2Streams
		case KindH2Streams:
			s.H2Streams, s.HoldFor = MaxH2Streams, DefaultHoldFor
		case KindWS:
			s.WSMessages, s.WSMessageSize = DefaultWSMessages, DefaultWSMessageSize
			s.WSURL = WSURLFor(strings.TrimSuffix(s.FastURL, "/fast"), s.WSMessages, s.WSMessageSize)
		case KindWSFeed:
			s.HoldFor = DefaultHoldFor
		}
	}
}

// WithTLSURL sets a KindTLS client's target (an https:// URL).
func WithTLSURL(u string) Option { return func(s *Spec) { s.TLSURL = u } }

// WithBaseline sets the number of baseline exchanges after the load.
func WithBaseline(n int) Option { return func(s *Spec) { s.BaselineRequests = n } }

// NewSpec returns article A's load against the server at base (a URL such
// as http://127.0.0.1:8000), changed by opts.
func NewSpec(base, idPrefix string, opts ...Option) Spec {
	s := Spec{
		LargeURL: base + "/large", LargeSize: DefaultLargeSize, IDPrefix: idPrefix,
		DownloadRate: DefaultDownloadRate, ReceiveBuffer: DefaultReceiveBuffer, ReadSize: DefaultReadSize,
		DownloadTimeout: DefaultDownloadTimeout,
		FastURL:         base + "/fast", FastBodyBytes: DefaultFastBodyBytes,
		FastRate: DefaultFastRate, FastCount: DefaultFastCount, FastOffset: DefaultFastOffset,
		FastTimeout: DefaultFastTimeout, BaselineGap: DefaultBaselineGap,
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// Validate names the first malformed field.
func (s Spec) Validate() error {
	switch {
	case s.Downloads < 0:
		return fmt.Errorf("load: Downloads %d is negative", s.Downloads)
	case s.FastCount < 0 || (s.FastCount > 0 && s.FastRate <= 0):
		return errors.New("load: FastCount must be >= 0 and FastRate positive")
	case s.FastTimeout <= 0 || s.DownloadTimeout <= 0:
		return errors.New("load: FastTimeout and DownloadTimeout must be positive")
	case s.AfterWait < 0:
		return fmt.Errorf("load: AfterWait %v is negative", s.AfterWait)
	case s.ConnectRate < 0 || (s.ConnectRate > 0 && s.Ramp() > MaxRamp):
		return fmt.Errorf("load: ConnectRate %g: want 0 (all at once) or a rate that starts %d slow clients within %v", s.ConnectRate, s.Downloads, MaxRamp)
	case s.StopOnLag != nil && !(s.StopOnLag.Second > 0 && s.StopOnLag.Second <= s.StopOnLag.Worst && s.StopOnLag.Share >= 0 && s.StopOnLag.Share < 1):
		return fmt.Errorf("load: StopOnLag worst %v, second %v, share %v: want both positive, the second at most the worst, the share in [0, 1)",
			s.StopOnLag.Worst, s.StopOnLag.Second, s.StopOnLag.Share)
	case s.HiccupEvery != 0 && s.HiccupEvery < MinHiccupEvery:
		return fmt.Errorf("load: HiccupEvery %v: want 0 (no meter) or at least %v", s.HiccupEvery, MinHiccupEvery)
	case s.H2Only && (s.FastH2 || !strings.HasPrefix(s.FastURL, "http://")):
		return fmt.Errorf("load: H2Only with FastURL %s, FastH2 %v: want an http:// FastURL (h2c by prior knowledge) and no second series", s.FastURL, s.FastH2)
	case s.Warm != nil && s.Warm.validate() != nil:
		return s.Warm.validate()
	case s.H2Only && s.Stream != nil:
		return errors.New("load: H2Only with an event stream: its reader speaks HTTP/1.1, which the entry point does not take")
	case s.H2Only && s.Downloads > 0 && s.SlowKind != KindH2Read && s.SlowKind != KindH2Streams:
		return fmt.Errorf("load: H2Only with SlowKind %q: the entry point takes HTTP/2 only, want %s or %s", s.SlowKind, KindH2Read, KindH2Streams)
	}
	for _, u := range []string{s.LargeURL, s.FastURL} {
		if err := checkURL(u); err != nil {
			return err
		}
	}
	if _, err := s.clientTLS(); err != nil {
		return err
	}
	if err := s.plainOnly(); err != nil {
		return err
	}
	for _, u := range []string{s.LargeURL, s.FastURL, s.UploadURL} {
		if strings.HasPrefix(u, "https://") && s.CAPEM == "" {
			return fmt.Errorf("load: %s is https: want CAPEM, the certificate its server is trusted under", u)
		}
	}
	if err := s.validateSlow(); err != nil {
		return err
	}
	return s.Stream.validate()
}

// MaxRamp bounds the slow clients' start (Spec.ConnectRate).
const MaxRamp = 10 * time.Second

// Ramp is how long the slow clients take to start: Downloads /
// ConnectRate, 0 when they start at once.
func (s Spec) Ramp() time.Duration {
	if s.ConnectRate <= 0 {
		return 0
	}
	return time.Duration(float64(s.Downloads) / s.ConnectRate * float64(time.Second))
}

// Download is one slow client's outcome: a slow download's, or, as Kind
// says, a slow upload's or a held connection's (slow.go).
type Download struct {
	ID string `json:"id"`
	// Kind is the client's SlowKind; "" is a slow download.
	Kind   string `json:"kind,omitempty"`
	Status int    `json:"status"`
	// Bytes is the body length received (an upload: sent; a held
	// connection: the header bytes sent); Expected the Content-Length
	// (an upload's: UploadSize).
	Bytes    int64 `json:"bytes"`
	Expected int64 `json:"expected"`
	// Framing is how the response said where its body ends
	// (FramingLength, FramingChunked or FramingClose); empty when no
	// response header came.
	Framing string `json:"framing,omitempty"`
	// ShortAsWhole says the body ended cleanly by its own framing but
	// was not Expected bytes: a short body presented as whole, which a
	// client cannot tell from a whole one (OutcomeSilentShort).
	ShortAsWhole bool `json:"short_as_whole,omitempty"`
	// WantStatus is the status a served upload gets (Spec.UploadStatus);
	// 0 is 200, as for every download.
	WantStatus int `json:"want_status,omitempty"`
	// Held says a held connection was still open when the client closed
	// it after HoldFor.
	Held bool `json:"held,omitempty"`
	// Messages are the WebSocket messages a KindWS or KindWSFeed
	// consumer received (a feed's are counted only);
	// Lost those missing from the server's sequence, Reordered those that
	// came after a later one. Either is an error: no message is lost
	// silently.
	Messages  int `json:"messages,omitempty"`
	Lost      int `json:"lost,omitempty"`
	Reordered int `json:"reordered,omitempty"`
	// ReceiveBufferGranted is SO_RCVBUF as the kernel reports it after
	// connecting (Linux doubles the request for its bookkeeping).
	ReceiveBufferGranted int `json:"receive_buffer_granted"`
	// Start is when the connect began, as an offset from the run's start.
	Start time.Duration `json:"start_ns"`
	// Connect is how long a held connection's connect took: a SYN that a
	// full listen backlog dropped is sent again a second later.
	Connect time.Duration `json:"connect_ns,omitempty"`
	// FirstByte runs from sending the request to the first response byte;
	// FirstByteAt is that byte's arrival as an offset from the run's start,
	// where the paced schedule starts: by time t the client has read
	// about DownloadRate x (t - FirstByteAt) bytes.
	FirstByte   time.Duration `json:"first_byte_ns"`
	FirstByteAt time.Duration `json:"first_byte_at_ns"`
	// LocalPort is the client's port, naming this download's sockets.
	LocalPort int `json:"local_port"`
	// Completion runs from sending the request to having the whole body,
	// including the pacing wait after the last read.
	Completion time.Duration `json:"completion_ns"`
	// Reads is the client's own count of the body bytes it had read, after
	// each read: what is still unread at any instant is measured, not
	// modelled from the nominal rate.
	Reads []ReadMark `json:"reads,omitempty"`
	Error string     `json:"error,omitempty"`
}

// ReadMark is the body bytes read so far at At, an offset from the run's
// start.
type ReadMark struct {
	At    time.Duration `json:"at_ns"`
	Bytes int64         `json:"bytes"`
}

// ReadBy is how many body bytes the client had read at offset t from the
// run's start, and whether its reads say so (false before the first).
func (d Download) ReadBy(t time.Duration) (int64, bool) {
	i, found := slices.BinarySearchFunc(d.Reads, t, func(m ReadMark, t time.Duration) int { return cmp.Compare(m.At, t) })
	if found {
		return d.Reads[i].Bytes, true
	}
	if i == 0 {
		return 0, false
	}
	return d.Reads[i-1].Bytes, true
}

// Complete is a 200 with the whole body and no error; a held connection
// is never complete (see Served).
func (d Download) Complete() bool {
	return !Holds(d.Kind) && d.Error == "" && d.Status == wantStatus(d.WantStatus) && d.Bytes == d.Expected && d.Expected > 0
}

// Served says the server dealt with the slow client as its kind expects:
// a download or an upload complete; a held connection accepted, whatever
// the server then did with it (held it, answered, closed or reset it:
// its Outcome).
func (d Download) Served() bool {
	if Holds(d.Kind) {
		o := d.Outcome()
		// A feed that never opened (no 101) fed nothing.
		return o != OutcomeRefused && o != OutcomeTimeout && (d.Kind != KindWSFeed || d.Status == http.StatusSwitchingProtocols)
	}
	return d.Complete()
}

// Outcomes of a slow client, as Download.Outcome names them.
const (
	OutcomeComplete  = "complete"
	OutcomeTruncated = "truncated" // the server closed the connection early
	// OutcomeSilentShort is a short body presented as whole: its framing
	// ended cleanly before Expected bytes (a lying Content-Length, or a
	// body ended by the connection's close). Data lost silently.
	OutcomeSilentShort = "silent-short"
	// OutcomeOverlong is a whole body longer than asked for: the app
	// answered something else than the download (a team's path whose
	// size is not the one its stack file says).
	OutcomeOverlong = "overlong"
	OutcomeReset    = "reset"   // the server (or a proxy) reset it
	OutcomeTimeout  = "timeout" // the client's own deadline ran out
	OutcomeRefused  = "refused" // no connection, or no response header
	OutcomeStatus   = "status"  // a response other than 200
	OutcomeHeld     = "held"    // a held connection stayed open to its end
	OutcomeClosed   = "closed"  // the server closed a held connection
)

// Outcome is how the slow client was served: complete, truncated (cut
// short, and its framing says so), silent-short (cut short, and its
// framing says it was whole), overlong (longer than asked), reset,
// timeout, refused or status (an error status); a held connection is
// held, closed, reset, status (the server answered it, or answered an
// idle connection's request with an error), refused (no connection; an
// idle one's request unanswered) or timeout (the client's own context
// or deadline ran out).
func (d Download) Outcome() string {
	if Holds(d.Kind) {
		switch {
		case d.Held:
			return OutcomeHeld
		case strings.HasPrefix(d.Error, "connect:"):
			return OutcomeRefused
		case strings.Contains(d.Error, "deadline exceeded") || strings.Contains(d.Error, "context canceled") || strings.Contains(d.Error, "i/o timeout"):
			return OutcomeTimeout
		case d.Kind == KindIdle && d.Status == 0:
			return OutcomeRefused // connected, but its request got no answer
		case d.Status != 0 && d.Status != heldAnswer(d.Kind):
			return OutcomeStatus
		case d.Error != "":
			return OutcomeReset
		}
		return OutcomeClosed
	}
	switch {
	case d.Complete():
		return OutcomeComplete
	case d.ShortAsWhole:
		return OutcomeSilentShort
	case d.Kind != KindUpload && d.Status == http.StatusOK && d.Expected > 0 && d.Bytes > d.Expected:
		return OutcomeOverlong
	case d.Kind == KindUpload && d.Status != 0 && d.Status != wantStatus(d.WantStatus):
		// The server refused the body with an answer, and may have reset
		// the connection after it: its answer says why.
		return OutcomeStatus
	case strings.Contains(d.Error, "connection reset") || strings.Contains(d.Error, "broken pipe"):
		return OutcomeReset
	case strings.Contains(d.Error, "i/o timeout") || strings.Contains(d.Error, "deadline exceeded"):
		return OutcomeTimeout
	case d.Status == 0:
		return OutcomeRefused
	case d.Status != wantStatus(d.WantStatus):
		return OutcomeStatus
	}
	return OutcomeTruncated
}

// FastRequest is one /fast request's outcome.
type FastRequest struct {
	Seq int `json:"seq"`
	// Scheduled is the planned send time, Lag how late it really started,
	// both from the run's start.
	Scheduled time.Duration `json:"scheduled_ns"`
	Lag       time.Duration `json:"lag_ns"`
	// Latency runs from starting the TCP connect to having the whole body.
	Latency time.Duration `json:"latency_ns"`
	Status  int           `json:"status"`
	Bytes   int64         `json:"bytes"`
	Error   string        `json:"error,omitempty"`
}

// AnyLength, as Spec.FastBodyBytes, accepts a body of any length.
const AnyLength = -1

// OK is the spec's status (FastStatus, or 200) with the full body
// (FastBodyBytes long, unless AnyLength).
func (p FastRequest) OK(s Spec) bool {
	return p.Error == "" && p.Status == wantStatus(s.FastStatus) && (s.FastBodyBytes == AnyLength || p.Bytes == s.FastBodyBytes)
}

// wantStatus is status, or 200 for 0.
func wantStatus(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// Result is one run as the client saw it.
type Result struct {
	Spec Spec `json:"spec"`
	// StartUnixNano anchors the offsets to the shared wall clock, so the
	// harness can line them up with the app's and the sampler's records.
	StartUnixNano int64         `json:"start_unix_ns"`
	Downloads     []Download    `json:"downloads"`
	Fast          []FastRequest `json:"fast"`
	// FastH2 is the HTTP/2 series' requests (Spec.FastH2), by Seq.
	FastH2   []FastRequest `json:"fast_h2,omitempty"`
	Baseline []FastRequest `json:"baseline,omitempty"`
	// Stream is the event stream's reader's record, when the spec ran one.
	Stream  *StreamResult `json:"stream,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// WallStep is how far the wall clock moved against the monotonic
	// clock over the run (its wall-clock elapsed time minus Elapsed): the
	// app's, the sampler's and the client's records are lined up on the
	// wall clock, which a step of the system's time would shift against
	// the client's monotonic offsets. About 0; the redo rule redoes a run
	// whose step passes its bound (disturb.DefaultWallStep).
	WallStep time.Duration `json:"wall_step_ns"`
	// GCCycles counts the requester's own garbage collections during the
	// run: each can delay a request's start (labagent runs with the
	// collector off, so it should be 0).
	GCCycles uint32 `json:"gc_cycles"`
	// HiccupTicks counts the hiccup meter's wakes over the load (0: no
	// meter, Spec.HiccupEvery), Hiccups are the late ones in the order
	// taken, and HiccupsLost those past MaxHiccups, not kept.
	HiccupTicks int      `json:"hiccup_ticks,omitempty"`
	Hiccups     []Hiccup `json:"hiccups,omitempty"`
	HiccupsLost int      `json:"hiccups_lost,omitempty"`
	// Stopped says why the run ended early (Spec.StopOnLag); empty for a
	// run that ran its whole load. The requests still waiting for their
	// slot were not sent (NotSent); those already on their way (the one
	// that crossed the bound, any in its last 2 ms before its slot) and
	// its slow clients were cut where they stood.
	Stopped string `json:"stopped,omitempty"`
}

// NotSent begins the error of a /fast request that a stopped run never
// sent.
const NotSent = "not sent: the run stopped early"

// Run performs spec: the downloads start at once, the /fast requests FastOffset
// later; it returns when every request has ended.
func Run(ctx context.Context, spec Spec) (Result, error) {
	if err := spec.Validate(); err != nil {
		return Result{}, err
	}
	if err := awaitReady(ctx, spec.After, cmp.Or(spec.AfterWait, DefaultAfterWait)); err != nil {
		return Result{}, err
	}
	spec.tlsConf, _ = spec.clientTLS() // Validate has parsed it
	var watch *lagWatch
	var done <-chan struct{} // closed when the run stops early
	if spec.StopOnLag != nil {
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		watch, done = &lagWatch{bounds: *spec.StopOnLag, stop: stop, arm: NewArming(*spec.StopOnLag, spec.FastCount),
			metered: spec.HiccupEvery > 0}, ctx.Done()
	}
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	gc0 := mem.NumGC
	start := time.Now()
	res := Result{Spec: spec, StartUnixNano: start.UnixNano(),
		Downloads: make([]Download, spec.Downloads*spec.clientsRecords()), Fast: make([]FastRequest, spec.FastCount)}
	if spec.FastH2 {
		res.FastH2 = make([]FastRequest, spec.FastCount)
	}
	meter := startHiccups(spec.HiccupEvery, start)
	var wg sync.WaitGroup
	for k := range spec.Downloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if spec.ConnectRate > 0 {
				// A Go timer, not waitUntil: thousands of clients must not
				// each lock a thread in the kernel's sleep.
				time.Sleep(time.Until(start.Add(time.Duration(float64(k) / spec.ConnectRate * float64(time.Second)))))
			}
			n := spec.clientsRecords()
			copy(res.Downloads[k*n:(k+1)*n], slowClient(ctx, &spec, fmt.Sprintf("%s-dl%d", spec.IDPrefix, k+1), start))
		}()
	}
	if spec.Stream != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := readStream(ctx, *spec.Stream)
			res.Stream = &r
		}()
	}
	// Every request waits in its own goroutine for its slot, so no send
	// depends on an earlier one (open loop) nor on a goroutine's start-up.
	fastStart := start.Add(spec.FastOffset)
	interval := time.Duration(float64(time.Second) / max(spec.FastRate, 1e-9))
	// slot sends request k into *into at due, or records it not sent if
	// the run stops first.
	slot := func(k int, due time.Time, into *FastRequest, send func() FastRequest) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !waitUntil(due, done) {
				*into = FastRequest{Seq: k, Scheduled: due.Sub(start), Error: NotSent}
				return
			}
			*into = send()
		}()
	}
	for k := range spec.FastCount {
		due := fastStart.Add(time.Duration(k) * interval)
		slot(k, due, &res.Fast[k], func() FastRequest { return fastRequest(ctx, &spec, k, start, due, watch) })
		if spec.FastH2 {
			dueH2 := fastH2Due(fastStart, k, interval)
			slot(k, dueH2, &res.FastH2[k], func() FastRequest { return fastH2Request(ctx, &spec, k, start, dueH2) })
		}
	}
	wg.Wait()
	meter.stop(&res)
	for k := range spec.BaselineRequests {
		if ctx.Err() != nil {
			break
		}
		time.Sleep(spec.BaselineGap)
		res.Baseline = append(res.Baseline, rawExchange(ctx, &spec, k))
	}
	if watch != nil && ctx.Err() != nil {
		res.Stopped = context.Cause(ctx).Error()
	}
	end := time.Now()
	res.Elapsed = end.Sub(start)
	res.WallStep = time.Duration(end.UnixNano()-start.UnixNano()) - res.Elapsed
	runtime.ReadMemStats(&mem)
	res.GCCycles = mem.NumGC - gc0
	return res, nil
}

func fastRequest(ctx context.Context, spec *Spec, seq int, runStart, due time.Time, watch *lagWatch) FastRequest {
	began := watch.begin(seq, runStart, due)
	p := FastRequest{Seq: seq, Scheduled: due.Sub(runStart), Lag: began.Sub(due)}
	ctx, cancel := context.WithTimeout(ctx, spec.FastTimeout)
	defer cancel()
	var status int
	var n int64
	var err error
	if spec.H2Only {
		status, n, err = h2Exchange(ctx, spec.FastURL, spec)
	} else {
		status, n, _, err = exchange(ctx, spec.FastURL, "", nil, spec.tlsConf, nil)
	}
	p.Latency = watch.end(seq, began)
	p.settle(spec, status, n, err)
	return p
}

// settle records a /fast exchange's answer on p: its status and body
// length, and err, or a body not FastBodyBytes long (unless AnyLength).
func (p *FastRequest) settle(spec *Spec, status int, n int64, err error) {
	p.Status, p.Bytes = status, n
	if err == nil && spec.FastBodyBytes != AnyLength && n != spec.FastBodyBytes {
		err = fmt.Errorf("body is %d bytes, want %d", n, spec.FastBodyBytes)
	}
	if err != nil {
		p.Error = err.Error()
	}
}

// cutOnStop ends conn's reads and writes once ctx is done: a run stopped
// early (Spec.StopOnLag) cuts its slow clients, and its /fast requests
// still waiting for a blocked server, where they stand instead of waiting
// out their pace or their server. The conn's own deadline is moved, so
// whatever the client was blocked in returns; closing it stays its
// owner's job, and the returned func unregisters the cut as it does.
func cutOnStop(ctx context.Context, conn net.Conn) (release func() bool) {
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// plainDialer dials without TCP keep-alive: Go's default sets three socket
// options per connection for /fast requests that a request of a few milliseconds
// never sends, and the lab's clients open thousands of connections.
var plainDialer = &net.Dialer{KeepAlive: -1}

// rawExchange is the baseline: the least a client can do to get /fast.
func rawExchange(ctx context.Context, spec *Spec, seq int) FastRequest {
	if spec.H2Only {
		// No raw HTTP/2: the least is one stream on a new connection.
		ctx, cancel := context.WithTimeout(ctx, spec.FastTimeout)
		defer cancel()
		began := time.Now()
		p := FastRequest{Seq: seq}
		var err error
		p.Status, p.Bytes, err = h2Exchange(ctx, spec.FastURL, spec)
		p.Latency = time.Since(began)
		if err != nil {
			p.Error = err.Error()
		}
		return p
	}
	p := FastRequest{Seq: seq}
	u, err := url.Parse(spec.FastURL)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	req := []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	ctx, cancel := context.WithTimeout(ctx, spec.FastTimeout)
	defer cancel()
	began := time.Now()
	conn, err := dialURL(ctx, u, plainDialer, spec.tlsConf)
	if err == nil {
		_, err = conn.Write(req)
		for err == nil {
			var n int
			n, err = conn.Read(buf)
			p.Bytes += int64(n)
		}
		conn.Close()
		if errors.Is(err, io.EOF) {
			err = nil
		}
	}
	p.Latency = time.Since(began)
	if err != nil {
		p.Error = err.Error()
	}
	return p
}

func download(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Expected: spec.LargeSize, Start: time.Since(runStart)}
	ctx, cancel := context.WithTimeout(ctx, spec.DownloadTimeout)
	defer cancel()
	var sent time.Time
	var pc *pacedConn
	status, n, framing, err := exchange(ctx, spec.LargeURL, id, BufferDialer(syscall.SO_RCVBUF, spec.ReceiveBuffer), spec.tlsConf, func(c net.Conn) net.Conn {
		sent = time.Now()
		d.ReceiveBufferGranted, d.LocalPort = receiveBuffer(c), localPort(c)
		pc = &pacedConn{Conn: c, rate: spec.DownloadRate, max: spec.ReadSize, runStart: runStart, byPath: spec.PacedByPath}
		return pc
	})
	d.Status, d.Bytes, d.Framing = status, n, framing
	if pc != nil && pc.started {
		pc.finish()
		d.FirstByte = pc.t0.Sub(sent)
		d.FirstByteAt = pc.t0.Sub(runStart)
		d.Completion = time.Since(sent)
		d.Reads = bodyMarks(pc.marks, pc.total-n)
	}
	if err == nil && n != spec.LargeSize {
		err = fmt.Errorf("body is %d bytes, want %d", n, spec.LargeSize)
		if status == http.StatusOK && n < spec.LargeSize {
			// A 200 whose own framing said the body ended here: a client
			// that trusts it takes a short body for the whole. (An error
			// status's body is not the download's.)
			d.ShortAsWhole = true
			err = fmt.Errorf("%w; its framing (%s) said it was whole", err, framing)
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// Framings of a response body (Download.Framing): how the response said
// where its body ends.
const (
	FramingLength  = "content-length"
	FramingChunked = "chunked"
	// FramingClose ends the body at the connection's close: a client
	// cannot tell a cut body from a whole one.
	FramingClose = "close"
)

// framingOf is how resp says where its body ends.
func framingOf(resp *http.Response) string {
	switch {
	case slices.Contains(resp.TransferEncoding, "chunked"):
		return FramingChunked
	case resp.ContentLength >= 0:
		return FramingLength
	}
	return FramingClose
}

// exchange sends one GET over a new connection (Connection: close) and
// reads the whole body; an https URL's connection is TLS under tc. wrap,
// when set, wraps the connection after the request is written. It returns the status, the body length and its
// framing; a body its framing says is cut short (a Content-Length not
// met, a chunked body without its last chunk) is an error.
func exchange(ctx context.Context, rawURL, id string, dialer *net.Dialer, tc *tls.Config, wrap func(net.Conn) net.Conn) (int, int64, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, 0, "", err
	}
	if dialer == nil {
		dialer = plainDialer
	}
	conn, err := dialURL(ctx, u, dialer, tc)
	if err != nil {
		return 0, 0, "", err
	}
	defer conn.Close()
	defer cutOnStop(ctx, conn)()
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: close\r\n"
	if id != "" {
		req += "X-Lab-Id: " + id + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		return 0, 0, "", fmt.Errorf("send: %w", err)
	}
	var r io.Reader = conn
	if wrap != nil {
		r = wrap(conn)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(r, 4096), nil)
	if err != nil {
		return 0, 0, "", fmt.Errorf("receive header: %w", err)
	}
	defer resp.Body.Close()
	// io.Discard's ReadFrom would read in 8 KiB steps; a plain writer and
	// our own buffer let each read ask for up to 32 KiB, which pacedConn
	// caps at ReadSize.
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, make([]byte, 32<<10))
	if err != nil {
		return resp.StatusCode, n, framingOf(resp), fmt.Errorf("receive body: %w", err)
	}
	return resp.StatusCode, n, framingOf(resp), nil
}

func receiveBuffer(c net.Conn) int {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var v int
	raw.Control(func(fd uintptr) {
		v, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	return v
}

// pacedConn reads at most max bytes a call, and never before the absolute
// time t0 + bytes/rate, t0 being the first byte: late wakeups do not add
// up, the schedule catches up.
type pacedConn struct {
	net.Conn
	rate    float64
	max     int
	started bool
	t0      time.Time
	total   int64
	// runStart anchors marks; marks count the bytes read from the socket
	// (headers included) after each read.
	runStart time.Time
	marks    []ReadMark
	// unpaced, once set (by any goroutine), ends the pacing and the
	// marks: the client has stopped measuring and only drains the
	// connection (a feed consumer's close handshake).
	unpaced atomic.Bool
	// byPath reads as the bytes come, marking every read: the path paces
	// them (Spec.PacedByPath).
	byPath bool
}

// due is when the bytes read so far are due at the rate: at once when
// the path paces them.
func (p *pacedConn) due() time.Time {
	if p.byPath {
		return time.Time{}
	}
	return p.t0.Add(time.Duration(float64(p.total) / p.rate * float64(time.Second)))
}

func (p *pacedConn) Read(b []byte) (int, error) {
	if len(b) > p.max {
		b = b[:p.max]
	}
	paced := !p.unpaced.Load()
	if p.started && paced {
		time.Sleep(time.Until(p.due()))
	}
	n, err := p.Conn.Read(b)
	if n > 0 && !p.started {
		p.started, p.t0 = true, time.Now()
	}
	p.total += int64(n)
	if n > 0 && paced {
		p.marks = append(p.marks, ReadMark{At: time.Since(p.runStart), Bytes: p.total})
	}
	return n, err
}

// localPort is c's local TCP port, naming its sockets in the sampler's
// records (0 for a connection that is not TCP).
func localPort(c net.Conn) int {
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// bodyMarks turns socket-level marks into body bytes by taking off the
// response header's length.
func bodyMarks(marks []ReadMark, header int64) []ReadMark {
	for i := range marks {
		marks[i].Bytes = max(0, marks[i].Bytes-header)
	}
	return marks
}

// finish waits out the pacing after the last read, as the article's
// client did before it counted the download complete.
func (p *pacedConn) finish() { time.Sleep(time.Until(p.due())) }

// awaitReady connects to the unix socket addr (nothing to do when addr is
// empty), retrying every AfterPoll until it answers or wait passes.
func awaitReady(ctx context.Context, addr string, wait time.Duration) error {
	if addr == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "unix", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("load: %s did not answer within %v, so the load did not start: %w", addr, wait, err)
		case <-time.After(AfterPoll):
		}
	}
}
