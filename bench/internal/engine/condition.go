// Package engine is the lab's summary side: conditions, plans and
// settings as typed data, the journal of completed units, and the one
// summarizing path from a run's raw record to its report rows, a
// condition's summary, the merge of shards and the tables verdicts read.
// It links no Docker code: labreport merges and renders with it alone.
// Package labrun is the run side, which starts pods and measures them;
// data flows one way, run (labrun) -> record -> journal -> summary
// (engine) -> report; package verdict judges the summaries.
package engine

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

// Path is how clients reach the server, with the pod options it takes.
type Path struct {
	// ID is "direct", "nginx-off" or "nginx-on", or another front door's.
	ID string
	// Proxy is the front door in front of the server; nil is direct.
	Proxy *proxy.Config
	// TLS makes the path's entry point speak TLS: Proxy's, which must
	// then be NGINX with its TLS set, or the server's own (podspec.ServeTLS).
	TLS bool
	// HTTP2 makes the entry point speak HTTP/2 beside HTTP/1.1, chosen by
	// ALPN on its TLS listener: NGINX's http2 (nginxconf.WithHTTP2), which
	// forwards each stream upstream as an HTTP/1.1 request, or, directly
	// (DirectH2), a server that speaks HTTP/2 itself
	// (podspec.SpeaksHTTP2: Hypercorn; Gunicorn, uWSGI and Uvicorn speak
	// HTTP/1.1 only).
	HTTP2 bool
}

// The three paths of article A.
var (
	Direct   = Path{ID: "direct"}
	NginxOff = nginxPath(false)
	NginxOn  = nginxPath(true)
)

// The TLS paths: the server terminating TLS itself (Gunicorn's
// --certfile, Uvicorn's --ssl-certfile, uWSGI's --https-socket), or
// NGINX terminating it with buffering off or on and forwarding plain
// HTTP/1.1.
var (
	DirectTLS   = Path{ID: "direct-tls", TLS: true}
	NginxTLSOff = nginxTLSPath(false)
	NginxTLSOn  = nginxTLSPath(true)
)

// The HTTP/2 paths: NGINX terminating TLS with http2 on its listener,
// buffering off or on. /fast and the other HTTP/1.1 clients reach the
// same listener by ALPN http/1.1.
var (
	NginxH2Off = nginxH2Path(false)
	NginxH2On  = nginxH2Path(true)
	// NginxH2COff and NginxH2COn are NGINX speaking HTTP/2 by prior
	// knowledge on a plain listener (h2c), buffering off or on: NGINX
	// 1.22 takes no HTTP/1.1 there, so /fast itself goes over h2c
	// (load.Spec.H2Only), and only the HTTP/2 clients run on them.
	NginxH2COff = nginxH2CPath(false)
	NginxH2COn  = nginxH2CPath(true)
	// DirectH2 is the server's own TLS listener speaking HTTP/2 itself,
	// its streams its own to schedule and flow-control.
	DirectH2 = Path{ID: "direct-h2", TLS: true, HTTP2: true}
)

// direct is whether p has no front door: direct, direct-tls, direct-h2.
func (p Path) direct() bool { return p.ID == Direct.ID || p.ID == DirectTLS.ID || p.ID == DirectH2.ID }

func nginxH2Path(buffering bool) Path { return nginxTLSListener("nginx-h2", buffering, true) }

// nginxH2CPath is NGINX with http2 on its plain listener (h2c only),
// buffering off or on: nginx-h2c-off or nginx-h2c-on.
func nginxH2CPath(buffering bool) Path {
	id := "nginx-h2c-off"
	if buffering {
		id = "nginx-h2c-on"
	}
	p := NginxPath(id, nginxconf.New(nginxconf.WithBuffering(buffering), nginxconf.WithHTTP2(true)))
	p.HTTP2 = true
	return p
}

// h2c is whether p's entry point takes HTTP/2 only (h2c by prior
// knowledge): /fast goes over it alone.
func (p Path) h2c() bool { return p.HTTP2 && !p.TLS }

func nginxTLSPath(buffering bool) Path { return nginxTLSListener("nginx-tls", buffering, false) }

// nginxTLSListener is NGINX terminating TLS, with http2 on its listener
// or not, buffering off or on: the path <prefix>-off or <prefix>-on.
func nginxTLSListener(prefix string, buffering, http2 bool) Path {
	id := prefix + "-off"
	if buffering {
		id = prefix + "-on"
	}
	p := NginxPath(id, nginxconf.New(nginxconf.WithBuffering(buffering), nginxconf.WithTLS(true), nginxconf.WithHTTP2(http2)))
	p.TLS, p.HTTP2 = true, http2
	return p
}

func nginxPath(buffering bool) Path {
	id := "nginx-off"
	if buffering {
		id = "nginx-on"
	}
	return NginxPath(id, nginxconf.New(nginxconf.WithBuffering(buffering)))
}

// NginxPath is the path id through NGINX at settings s.
func NginxPath(id string, s nginxconf.Config) Path {
	c := proxy.Nginx(s)
	return Path{ID: id, Proxy: &c}
}

// Option is the pod option that puts this path in front of the server:
// its front door, and TLS at its entry point.
func (p Path) Option() podspec.Option {
	return func(c *podspec.Config) {
		podspec.WithTLS(p.TLS)(c)
		if p.Proxy == nil {
			podspec.WithProxy(nil)(c)
			return
		}
		pc := *p.Proxy
		podspec.WithProxy(&pc)(c)
	}
}

// server is s as path p runs it: terminating TLS itself on a direct TLS
// path (podspec.ServeTLS), else as it is.
func (p Path) server(s podspec.Server) (podspec.Server, error) {
	if !p.TLS || p.Proxy != nil {
		return s, nil
	}
	return podspec.ServeTLS(s)
}

// TCPProfile is the network namespace's TCP memory sysctls.
type TCPProfile struct {
	// ID names the profile in condition ids and reports.
	ID string
	// Rmem and Wmem are net.ipv4.tcp_rmem and tcp_wmem: "MIN DEFAULT MAX".
	Rmem, Wmem string
}

// Stock is stock Linux's TCP memory, pinned so results do not depend on
// the host's tuning.
var Stock = TCPProfile{ID: "stock", Rmem: podspec.DefaultTCPRmem, Wmem: podspec.DefaultTCPWmem}

// ArticleHost is the article's host as the lab infers it: stock TCP
// memory but for an 8 MiB send-buffer ceiling (tcp_wmem max), the
// smallest of a sweep of ceilings under which both the article's main
// series and its pilot land in the article's ranges (reports/measurements.md).
var ArticleHost = TCPProfile{ID: "article-host", Rmem: podspec.DefaultTCPRmem, Wmem: "4096 16384 8388608"}

// Condition is one cell of a matrix: what runs, behind what, under which
// load. Its zero value is not usable; the fields' docs state the contract.
type Condition struct {
	// ID is the subtest name and the key of every report row.
	ID string
	// Ref is the article's cell this condition reproduces, the key of its
	// published figures; empty when the article has none.
	Ref string
	// Server is the app's command line.
	Server podspec.Server
	// Path puts NGINX in front, or not.
	Path Path
	// Downloads is how many slow clients run at once, 0 to MaxDownloads:
	// slow downloads, or the slow clients SlowKind names.
	Downloads int
	// SlowKind is what the slow clients do: load.KindRead ("" too),
	// load.KindUpload, load.KindHeaders, load.KindSilent, load.KindIdle,
	// load.KindTLS, an HTTP/2 kind (load.KindH2Read, load.KindH2Streams),
	// whose clients are connections of H2Streams streams each, or
	// load.KindWS, WebSocket consumers of BodyBytes in 64 KiB messages,
	// or load.KindWSFeed, consumers of a team's feed (Target.WSPath)
	// held for the fast path's window, no BodyBytes.
	SlowKind string
	// H2Streams is how many streams each HTTP/2 slow client opens, 1 to
	// load.MaxH2Streams, for an HTTP/2 SlowKind only (0 otherwise): each
	// stream is recorded as a slow client's outcome (Records).
	H2Streams int
	// ConnectRate, when above 0, opens the slow clients this many a
	// second instead of all at once (load.Spec.ConnectRate), within
	// load.MaxRamp; /fast then starts, and every held connection is held
	// until, DefaultHoldFor after the last opened.
	ConnectRate float64
	// BodyBytes is each download's size, passed to the app as ?size=
	// (an upload's: its body's size).
	BodyBytes int64
	// ReadRate is the rate the slow readers' downloads are paced at,
	// bytes per second, by the client or by the hop Pacer names (an
	// upload's: its send rate).
	ReadRate float64
	// Pacer is what paces slow readers at ReadRate: empty, the lab's own
	// reader; or PacerToxiproxy, a Toxiproxy hop between the client and
	// the entry point (pacer.go).
	Pacer string
	// Fault, when set, names a fault on the slow clients' path (Faults):
	// they go through a Toxiproxy hop that carries it, /fast only when
	// the fault says so (Fault.Fast).
	Fault string
	// HangS, when above 0, sends the downloads to the app's /hang?s=,
	// whose handler sleeps that long in Python before it answers
	// BodyBytes: 1 to MaxHangS, for slow readers only (the Hang column).
	HangS int
	// Stream, when set, runs one event-stream reader beside /fast.
	Stream *Stream
	// FastRequests is how many /fast requests the run sends at article
	// A's 8/s, 0 to MaxFastRequests: 0 is article A's 72 (a 9 s window).
	FastRequests int
	// TCP is the namespace's TCP memory profile.
	TCP TCPProfile
	// ClientCPUs, when above 0, is the client container's CPU quota in
	// cores instead of article A's 0.20: for loads of more slow clients
	// than article A's, so that the client's own CPU never sets the
	// figures (engine.ClientCPUsFor).
	ClientCPUs float64
	// ClientMemory, when above 0, is the client container's memory limit
	// in bytes instead of podspec.DefaultClientMemory (with ClientCPUs):
	// for thousands of held connections, up to MaxClientMemory.
	ClientMemory int64
	// MinRuns is the fewest runs the condition takes whatever LAB_RUNS
	// says, 0 to MaxRuns (0: LAB_RUNS alone); for a condition whose runs
	// are bimodal, so that the median of its runs is not a coin toss.
	MinRuns int
	// MayExhaust says the load may drive the app or the proxy to its
	// memory limit: an OOM kill of either is then the run's outcome
	// (report.Run.OOMKilled, a failure of the server, as a cut reader
	// is), not an error of the lab. A kill of the client or the sampler
	// is always the lab's error.
	MayExhaust bool
	// AppLimits and ProxyLimits, when set, replace article A's limits of
	// the app and NGINX containers (a stack file's limits).
	AppLimits, ProxyLimits *podspec.Limits
	// Target, when set, is a team's own app in place of the lab's (a
	// stack file's check): its paths and statuses. Such an app keeps no
	// write records, so a run needs none to be sound.
	Target *Target
}

// Target is a team's app as the load sees it.
type Target struct {
	// FastPath is the fast path, answering FastStatus (0: 200) with a
	// body of any length.
	FastPath   string
	FastStatus int
	// LargePath answers 200 with LargeBytes bytes: the slow readers'
	// download.
	LargePath  string
	LargeBytes int64
	// UploadPath takes the slow uploads' POST bodies, answering
	// UploadStatus (0: 200).
	UploadPath   string
	UploadStatus int
	// WSPath is a WebSocket feed (with its query, if any) that answers
	// the Upgrade with 101 and pushes what it pushes: the load.KindWSFeed
	// consumers' (a stack's requires.ws_slow_consumers).
	WSPath string
}

// Stream is an event stream (SSE) read beside /fast: the app's /events
// sends Events events GapMs apart, each carrying its send time.
type Stream struct {
	Events, GapMs int
	// XAccelNo makes the app send X-Accel-Buffering: no, which turns
	// NGINX's proxy buffering off for this response.
	XAccelNo bool
	// AcceptGzip makes the reader accept a gzip answer.
	AcceptGzip bool
}

// Runs is how many runs c takes when the series asks for runs.
func (c Condition) Runs(runs int) int { return max(runs, c.MinRuns) }

// Limits of a Condition's load.
const (
	// MaxDownloads bounds the slow clients that move a body; MaxHeldConns
	// bounds those that hold a connection (load.Holds).
	MaxDownloads = MaxScaleReaders
	// MaxClientMemory bounds ClientMemory.
	MaxClientMemory = 1 << 30
	MaxBodyBytes    = 1 << 30 // the app's own cap on ?size=
	// MaxHangS bounds HangS: half the client's download timeout
	// (load.DefaultDownloadTimeout, 60 s), so a request answered after
	// its sleep is still read whole, not timed out (the app's own cap on
	// /hang?s= is 60).
	MaxHangS = 30
	// MaxClientCPUs bounds ClientCPUs: the machine has 2 cores, and the
	// app and the sampler need theirs.
	MaxClientCPUs = 1
	// MaxStreamGapMs is the app's own cap on /events?gap_ms=.
	MaxStreamGapMs = 1000
	// MaxFastRequests bounds FastRequests: a minute at 8/s.
	MaxFastRequests = 480
)

// slowKinds are the accepted SlowKinds.
var slowKinds = []string{"", load.KindRead, load.KindUpload, load.KindHeaders, load.KindSilent, load.KindIdle, load.KindTLS, load.KindH2Read, load.KindH2Streams, load.KindWS, load.KindWSFeed}

// tlsKinds are the SlowKinds whose clients speak TLS on a TLS path.
var tlsKinds = []string{"", load.KindRead, load.KindSilent, load.KindTLS, load.KindH2Read, load.KindH2Streams}

// h2 is whether c's slow clients speak HTTP/2.
func (c Condition) h2() bool {
	return c.SlowKind == load.KindH2Read || c.SlowKind == load.KindH2Streams
}

// Records is how many slow-client outcomes a run of c records: a stream
// each of the HTTP/2 clients' (Downloads x H2Streams), else one a client.
func (c Condition) Records() int {
	if c.h2() {
		return c.Downloads * c.H2Streams
	}
	return c.Downloads
}

// ws is whether c's slow clients are WebSocket consumers.
func (c Condition) ws() bool { return c.SlowKind == load.KindWS || c.SlowKind == load.KindWSFeed }

// wsLocation is the path c's WebSocket consumers open, its query left
// out: the app's /ws, or a team's feed (Target.WSPath).
func (c Condition) wsLocation() string {
	if c.SlowKind == load.KindWSFeed && c.Target != nil {
		p, _, _ := strings.Cut(c.Target.WSPath, "?")
		return p
	}
	return load.WSPath
}

// reads is whether c's slow clients are slow readers (downloads).
func (c Condition) reads() bool { return c.SlowKind == "" || c.SlowKind == load.KindRead }

// paced is whether c's slow clients move a body at a rate.
func (c Condition) paced() bool { return !load.Holds(c.SlowKind) }

// maxSlowClients is how many slow clients c may run: MaxHeldConns of a
// kind that holds a connection, else MaxDownloads (a feed's consumers
// too, which hold a connection but read at a pace).
func (c Condition) maxSlowClients() int {
	if load.Holds(c.SlowKind) && c.SlowKind != load.KindWSFeed {
		return MaxHeldConns
	}
	return MaxDownloads
}

// Validate names the first malformed field, its value and what is accepted.
func (c Condition) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("engine: condition has no ID")
	case len(c.Server.Cmd) == 0:
		return fmt.Errorf("engine: condition %s: Server has no command", c.ID)
	case c.Path.ID == "" || c.Path.direct() != (c.Path.Proxy == nil):
		return fmt.Errorf("engine: condition %s: Path %q: want direct, direct-tls or direct-h2 (no proxy), or a front door's path with its config", c.ID, c.Path.ID)
	case c.Path.Proxy == nil && (c.Path.TLS != (c.Path.ID != Direct.ID) || c.Path.HTTP2 != (c.Path.ID == DirectH2.ID)):
		return fmt.Errorf("engine: condition %s: Path %s with TLS %v, HTTP2 %v: want direct without either, direct-tls with TLS, or direct-h2 with both", c.ID, c.Path.ID, c.Path.TLS, c.Path.HTTP2)
	case c.Path.ID == DirectH2.ID && !podspec.SpeaksHTTP2(c.Server):
		return fmt.Errorf("engine: condition %s: Path direct-h2 with server %s, which speaks HTTP/1.1 only: want a server that speaks HTTP/2 itself (Hypercorn), or NGINX's HTTP/2 listener in front", c.ID, c.Server.ID)
	case c.Path.Proxy != nil && c.Path.TLS != c.Path.Proxy.TLS():
		return fmt.Errorf("engine: condition %s: Path %s with TLS %v, but its %s front door's TLS is %v: want both (NGINX with nginxconf.WithTLS), or neither", c.ID, c.Path.ID, c.Path.TLS, c.Path.Proxy.Kind, c.Path.Proxy.TLS())
	case c.HangS < 0 || c.HangS > MaxHangS || c.HangS > 0 && (!c.reads() || c.Downloads == 0 || c.Target != nil):
		return fmt.Errorf("engine: condition %s: HangS %d: want 0, or 1 to %d seconds for the lab app's slow readers (SlowKind %q, %d downloads)", c.ID, c.HangS, MaxHangS, c.SlowKind, c.Downloads)
	case c.SlowKind == load.KindTLS && !c.Path.TLS:
		return fmt.Errorf("engine: condition %s: SlowKind %s on path %s: want a TLS path (direct-tls, or NGINX terminating TLS)", c.ID, c.SlowKind, c.Path.ID)
	case c.Path.HTTP2 && c.Path.Proxy != nil && (c.Path.Proxy.Nginx == nil || !c.Path.Proxy.Nginx.HTTP2):
		return fmt.Errorf("engine: condition %s: Path %s with HTTP2: want NGINX with http2 on its listener (nginxconf.WithHTTP2: over TLS, or h2c on a plain one), or direct-h2", c.ID, c.Path.ID)
	case c.Path.h2c() && c.Downloads > 0 && !c.h2():
		return fmt.Errorf("engine: condition %s: SlowKind %q on path %s, which takes HTTP/2 only (h2c): want %s or %s", c.ID, c.SlowKind, c.Path.ID, load.KindH2Read, load.KindH2Streams)
	case c.Path.Proxy != nil && c.Path.Proxy.Nginx != nil && c.Path.Proxy.Nginx.HTTP2 != c.Path.HTTP2:
		return fmt.Errorf("engine: condition %s: Path %s with HTTP2 %v, but its NGINX's http2 is %v: want both, or neither", c.ID, c.Path.ID, c.Path.HTTP2, c.Path.Proxy.Nginx.HTTP2)
	case c.h2() && !c.Path.HTTP2:
		return fmt.Errorf("engine: condition %s: SlowKind %s on path %s, which does not speak HTTP/2: want an HTTP/2 path (NGINX with http2 on its TLS listener)", c.ID, c.SlowKind, c.Path.ID)
	case c.h2() && c.Downloads > 0 && (c.H2Streams < 1 || c.H2Streams > load.MaxH2Streams):
		return fmt.Errorf("engine: condition %s: H2Streams %d: want 1 to %d streams a connection", c.ID, c.H2Streams, load.MaxH2Streams)
	case c.SlowKind == load.KindWS && c.Downloads > 0 && (c.BodyBytes%load.DefaultWSMessageSize != 0 || c.BodyBytes/load.DefaultWSMessageSize > load.MaxWSMessages):
		return fmt.Errorf("engine: condition %s: BodyBytes %d for WebSocket consumers: want whole messages of %d bytes, at most %d of them", c.ID, c.BodyBytes, load.DefaultWSMessageSize, load.MaxWSMessages)
	case c.Downloads > 0 && c.SlowKind == load.KindWSFeed && (c.Target == nil || c.Target.WSPath == ""):
		return fmt.Errorf("engine: condition %s: consumers of a team's feed (%s) need Target.WSPath", c.ID, load.KindWSFeed)
	case c.Downloads > 0 && c.ws() && c.Path.Proxy != nil && c.Path.Proxy.Nginx == nil:
		return fmt.Errorf("engine: condition %s: WebSocket consumers on path %s, behind %s: want direct, or NGINX with its WebSocket location (nginxconf.WithWebSocket)", c.ID, c.Path.ID, c.Path.Proxy.Kind)
	case c.Downloads > 0 && c.ws() && c.Path.Proxy != nil && c.Path.Proxy.Nginx != nil && c.Path.Proxy.Nginx.Custom == "" && c.Path.Proxy.Nginx.WebSocketPath != c.wsLocation():
		// A team's own config passes the Upgrade on itself, or its
		// stack check's WebSocket check says it does not.
		return fmt.Errorf("engine: condition %s: WebSocket consumers of %s on path %s, whose NGINX does not pass the Upgrade on there: want direct, or NGINX with its WebSocket location at %s (nginxconf.WithWebSocket)", c.ID, c.wsLocation(), c.Path.ID, c.wsLocation())
	case c.Downloads > 0 && c.SlowKind == load.KindWSFeed && c.ReadRate <= 0:
		return fmt.Errorf("engine: condition %s: ReadRate %g: want a positive rate in bytes per second, a feed consumer's pace", c.ID, c.ReadRate)
	case !c.h2() && c.H2Streams != 0:
		return fmt.Errorf("engine: condition %s: H2Streams %d with SlowKind %q: want 0, or an HTTP/2 kind (%s, %s)", c.ID, c.H2Streams, c.SlowKind, load.KindH2Read, load.KindH2Streams)
	case c.Path.TLS && c.Downloads > 0 && !slices.Contains(tlsKinds, c.SlowKind):
		return fmt.Errorf("engine: condition %s: SlowKind %q on TLS path %s: want one of %q, whose clients speak TLS", c.ID, c.SlowKind, c.Path.ID, tlsKinds)
	case c.Path.TLS && c.Stream != nil:
		return fmt.Errorf("engine: condition %s: an event stream on TLS path %s: want a plain path (the stream reader speaks plain HTTP)", c.ID, c.Path.ID)
	case !slices.Contains(slowKinds, c.SlowKind):
		return fmt.Errorf("engine: condition %s: SlowKind %q: want one of %q", c.ID, c.SlowKind, slowKinds)
	case c.Downloads < 0 || c.Downloads > c.maxSlowClients():
		return fmt.Errorf("engine: condition %s: Downloads %d: want 0 to %d (slow clients of kind %q)", c.ID, c.Downloads, c.maxSlowClients(), c.SlowKind)
	case c.ConnectRate < 0 || (c.ConnectRate > 0 && float64(c.Downloads)/c.ConnectRate > load.MaxRamp.Seconds()):
		return fmt.Errorf("engine: condition %s: ConnectRate %g: want 0 (all at once) or a rate that opens its %d slow clients within %v", c.ID, c.ConnectRate, c.Downloads, load.MaxRamp)
	case c.ClientMemory < 0 || c.ClientMemory > MaxClientMemory || (c.ClientMemory > 0 && c.ClientCPUs == 0):
		return fmt.Errorf("engine: condition %s: ClientMemory %d: want 0 (%d) or up to %d bytes, with ClientCPUs", c.ID, c.ClientMemory, podspec.DefaultClientMemory, MaxClientMemory)
	case c.Downloads > 0 && (c.paced() || c.SlowKind == load.KindH2Streams) && (c.BodyBytes <= 0 || c.BodyBytes > MaxBodyBytes):
		return fmt.Errorf("engine: condition %s: BodyBytes %d: want 1 to %d", c.ID, c.BodyBytes, MaxBodyBytes)
	case c.Downloads > 0 && c.SlowKind == load.KindUpload && c.Path.Proxy != nil && c.Path.Proxy.Kind == proxy.KindNginx && c.BodyBytes > nginxconf.ClientMaxBodyBytes:
		return fmt.Errorf("engine: condition %s: BodyBytes %d: an upload through NGINX takes at most %d (client_max_body_size)", c.ID, c.BodyBytes, nginxconf.ClientMaxBodyBytes)
	case c.Downloads > 0 && c.paced() && c.ReadRate <= 0:
		return fmt.Errorf("engine: condition %s: ReadRate %g: want a positive rate in bytes per second", c.ID, c.ReadRate)
	case c.Pacer != "" && c.Pacer != PacerToxiproxy:
		return fmt.Errorf("engine: condition %s: Pacer %q: want empty (the lab's own reader) or %q", c.ID, c.Pacer, PacerToxiproxy)
	case c.Pacer == PacerToxiproxy && (!c.reads() || c.Downloads == 0):
		return fmt.Errorf("engine: condition %s: Pacer %s with SlowKind %q, %d downloads: want slow readers (%q, 1 or more), whose downloads a hop can pace", c.ID, c.Pacer, c.SlowKind, c.Downloads, load.KindRead)
	case c.Pacer == PacerToxiproxy && c.Target != nil:
		return fmt.Errorf("engine: condition %s: Pacer %s with a team's app (Target): want the lab app, whose write records the cross-check reads", c.ID, c.Pacer)
	case c.Pacer == PacerToxiproxy && math.Abs(toxiproxyRateError(c.ReadRate)) > MaxToxiproxyRateError:
		return fmt.Errorf("engine: condition %s: ReadRate %g with Pacer %s: Toxiproxy paces whole KB/s of 1,000 bytes, %d KB/s here, %.3g %% off: want a rate within %g %% of one (%d bytes/s is)",
			c.ID, c.ReadRate, c.Pacer, toxiproxyRate(c.ReadRate), 100*toxiproxyRateError(c.ReadRate), 100*MaxToxiproxyRateError, max(1, toxiproxyRate(c.ReadRate))*1000)
	case c.TCP.ID == "":
		return fmt.Errorf("engine: condition %s: TCP profile has no ID", c.ID)
	case c.ClientCPUs < 0 || c.ClientCPUs > MaxClientCPUs:
		return fmt.Errorf("engine: condition %s: ClientCPUs %g: want 0 (article A's %g) to %g cores", c.ID, c.ClientCPUs, podspec.DefaultClientCPUs, float64(MaxClientCPUs))
	case c.MinRuns < 0 || c.MinRuns > MaxRuns:
		return fmt.Errorf("engine: condition %s: MinRuns %d: want 0 to %d", c.ID, c.MinRuns, MaxRuns)
	case c.FastRequests < 0 || c.FastRequests > MaxFastRequests:
		return fmt.Errorf("engine: condition %s: FastRequests %d: want 0 (article A's %d) to %d", c.ID, c.FastRequests, load.DefaultFastCount, MaxFastRequests)
	case c.Stream != nil && (c.Stream.Events < 1 || c.Stream.Events > load.MaxStreamEvents):
		return fmt.Errorf("engine: condition %s: Stream.Events %d: want 1 to %d", c.ID, c.Stream.Events, load.MaxStreamEvents)
	case c.Stream != nil && (c.Stream.GapMs < 0 || c.Stream.GapMs > MaxStreamGapMs):
		return fmt.Errorf("engine: condition %s: Stream.GapMs %d: want 0 to %d", c.ID, c.Stream.GapMs, MaxStreamGapMs)
	}
	if err := c.Target.validate(c); err != nil {
		return err
	}
	if err := c.validateFault(); err != nil {
		return err
	}
	if _, err := c.Path.server(c.Server); err != nil {
		return fmt.Errorf("engine: condition %s: Path %s: %w", c.ID, c.Path.ID, err)
	}
	return c.Pod("validate:only").Validate()
}

func (t *Target) validate(c Condition) error {
	if t == nil {
		return nil
	}
	for name, p := range map[string]string{"FastPath": t.FastPath, "LargePath": t.LargePath, "UploadPath": t.UploadPath, "WSPath": t.WSPath} {
		if p != "" && !strings.HasPrefix(p, "/") {
			return fmt.Errorf("engine: condition %s: Target.%s %q: want an absolute path such as /healthz", c.ID, name, p)
		}
	}
	switch {
	case t.FastPath == "":
		return fmt.Errorf("engine: condition %s: Target.FastPath is empty: want the path /fast stands for", c.ID)
	case c.Downloads > 0 && (c.reads() || c.SlowKind == load.KindH2Read) && (t.LargePath == "" || t.LargeBytes <= 0):
		return fmt.Errorf("engine: condition %s: slow readers need Target.LargePath and LargeBytes > 0 (got %q, %d)", c.ID, t.LargePath, t.LargeBytes)
	case c.Downloads > 0 && c.SlowKind == load.KindUpload && t.UploadPath == "":
		return fmt.Errorf("engine: condition %s: slow uploads need Target.UploadPath", c.ID)
	case c.Downloads > 0 && c.SlowKind == load.KindWSFeed && t.WSPath == "":
		return fmt.Errorf("engine: condition %s: a feed's consumers need Target.WSPath", c.ID)
	}
	return nil
}

// Pod is the pod this condition runs in, on the lab image imageRef.
func (c Condition) Pod(imageRef string) podspec.Config {
	server, err := c.Path.server(c.Server)
	if err != nil {
		server = c.Server // Validate names the error; the pod's own Validate refuses it too
	}
	opts := []podspec.Option{podspec.WithServer(server), c.Path.Option(), podspec.WithTCPMem(c.TCP.Rmem, c.TCP.Wmem)}
	if c.Path.Proxy != nil && c.Server.Port != 0 {
		opts = append(opts, podspec.WithProxy(forwardingTo(*c.Path.Proxy, c.Server)))
	}
	if c.AppLimits != nil {
		opts = append(opts, podspec.WithAppLimits(*c.AppLimits))
	}
	if c.ProxyLimits != nil {
		opts = append(opts, podspec.WithProxyLimits(*c.ProxyLimits))
	}
	if c.ClientCPUs > 0 {
		opts = append(opts, podspec.WithClientLimits(podspec.Limits{CPUs: c.ClientCPUs, Memory: cmp.Or(c.ClientMemory, podspec.DefaultClientMemory)}))
	}
	if c.Pacer == PacerToxiproxy { // after the server and the front door it relays to
		opts = append(opts, podspec.WithHops(&podspec.Hops{Client: c.pacingHop()}))
	}
	if h := c.faultHops(); h != nil { // as the pacer's: after the server and the front door
		opts = append(opts, podspec.WithHops(h))
	}
	return podspec.New(imageRef, opts...)
}

// Load is this condition's load against the pod's entry point base; the
// downloads are named idPrefix-dlK.
func (c Condition) Load(base, idPrefix string) load.Spec {
	s := load.NewSpec(base, idPrefix, load.WithDownloads(c.Downloads), load.WithSlowKind(c.SlowKind))
	switch {
	case c.Downloads == 0:
		if c.Stream == nil {
			s.BaselineRequests = load.DefaultBaselineRequests
		}
	case c.SlowKind == load.KindUpload:
		s.UploadSize, s.UploadRate = c.BodyBytes, c.ReadRate
	case c.SlowKind == load.KindTLS:
		s.TLSURL = base
	case c.SlowKind == load.KindWS:
		s.WSMessageSize = load.DefaultWSMessageSize
		s.WSMessages = int(c.BodyBytes / int64(s.WSMessageSize))
		s.WSURL = load.WSURLFor(base, s.WSMessages, s.WSMessageSize)
		s.DownloadRate = c.ReadRate
	case c.SlowKind == load.KindWSFeed:
		s.DownloadRate = c.ReadRate // WSURL: the Target's
	case c.SlowKind == load.KindH2Streams:
		s.LargeURL = base + "/large?size=" + strconv.FormatInt(c.BodyBytes, 10)
		s.LargeSize = c.BodyBytes
	case c.paced():
		s.LargeURL = base + "/large?size=" + strconv.FormatInt(c.BodyBytes, 10)
		if c.HangS > 0 {
			s.LargeURL = fmt.Sprintf("%s/hang?s=%d&size=%d", base, c.HangS, c.BodyBytes)
		}
		s.LargeSize, s.DownloadRate = c.BodyBytes, c.ReadRate
	}
	if c.h2() {
		s.H2Streams = c.H2Streams
	}
	// An entry point that speaks HTTP/2 beside HTTP/1.1 is timed over
	// both protocols; one that takes HTTP/2 only (h2c), over it alone.
	s.FastH2, s.H2Only = c.Path.HTTP2 && !c.Path.h2c(), c.Path.h2c()
	if c.FastRequests > 0 {
		s.FastCount = c.FastRequests
	}
	if c.ConnectRate > 0 {
		// /fast starts once the last connection is open, and each is held
		// until DefaultHoldFor after that.
		s.ConnectRate = c.ConnectRate
		s.FastOffset += s.Ramp()
		s.HoldFor += s.Ramp()
	}
	if t := c.Target; t != nil {
		s.FastURL, s.FastBodyBytes, s.FastStatus = base+t.FastPath, load.AnyLength, t.FastStatus
		s.UploadURL, s.UploadStatus = base+t.UploadPath, t.UploadStatus
		if (c.reads() || c.SlowKind == load.KindH2Read) && c.Downloads > 0 {
			s.LargeURL, s.LargeSize = base+t.LargePath, t.LargeBytes
		}
		if c.SlowKind == load.KindWSFeed {
			s.WSURL = load.WSURL(base, t.WSPath)
		}
	}
	if st := c.Stream; st != nil {
		u := fmt.Sprintf("%s/events?n=%d&gap_ms=%d", base, st.Events, st.GapMs)
		if st.XAccelNo {
			u += "&xaccel=no"
		}
		s.Stream = &load.StreamSpec{URL: u, Events: st.Events, AcceptGzip: st.AcceptGzip, Timeout: StreamTimeout}
	}
	if f, ok := FaultByID(c.Fault); ok && f.Cut() && c.Target != nil && c.Downloads > 0 {
		// A team's app may open on its first download or upload what it
		// keeps (a database connection, a cached file): fetched whole
		// at the entry point, as many at once as the cut clients, before
		// the count the leak checks compare with.
		s.Warm = &load.Warm{URL: s.LargeURL, Count: c.Downloads}
		if c.SlowKind == load.KindUpload {
			s.Warm.URL, s.Warm.BodyBytes = s.UploadURL, c.BodyBytes
		}
	}
	c.throughHop(&s) // last: a Target's paths go through it too
	return s
}

// throughHop sends to the pod's client hop what goes through it: the
// downloads the Toxiproxy pacer paces (/fast keeps to the entry point,
// as in the lab-paced cell); a fault's slow clients, paced by the
// reader unless the hop paces them (Fault.Paces), and /fast when the
// fault says so (Fault.Fast), with no raw exchange after the load,
// which through the hop would time its delay 72 times over.
func (c Condition) throughHop(s *load.Spec) {
	hop := podspec.ThroughClientHop
	if c.Pacer == PacerToxiproxy && c.reads() && c.Downloads > 0 {
		s.LargeURL, s.PacedByPath = hop(s.LargeURL), true
	}
	f, ok := FaultByID(c.Fault)
	if !ok || f.Client == nil {
		return
	}
	switch {
	case c.Downloads == 0:
	case c.SlowKind == load.KindUpload:
		s.UploadURL = hop(s.UploadURL)
	case c.reads():
		s.LargeURL, s.PacedByPath = hop(s.LargeURL), f.Paces
	}
	if f.Fast {
		s.FastURL, s.BaselineRequests = hop(s.FastURL), 0
	}
}

// StreamTimeout bounds an event stream's reader.
const StreamTimeout = 30 * time.Second

// ValidateAll validates every condition and checks that ids are unique.
func ValidateAll(cs []Condition) error {
	seen := map[string]bool{}
	for _, c := range cs {
		if err := c.Validate(); err != nil {
			return err
		}
		if seen[c.ID] {
			return fmt.Errorf("engine: condition id %s is repeated", c.ID)
		}
		seen[c.ID] = true
	}
	return nil
}

// forwardingTo is p forwarding to s's own port, when s has one (a team's
// image): p's Upstream and NGINX's nested settings say the same.
func forwardingTo(p proxy.Config, s podspec.Server) *proxy.Config {
	if s.Port == 0 {
		return &p
	}
	p.Upstream = fmt.Sprintf("127.0.0.1:%d", s.Port)
	if p.Nginx != nil {
		n := *p.Nginx
		n.Upstream = p.Upstream
		p.Nginx = &n
	}
	return &p
}
