package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/toxic"
)

// Faults on the path (issue 34): Toxiproxy's toxics on a hop between the
// client and the pod's entry point, which the slow clients go through
// while /fast keeps to the entry point itself (but when Fault.Fast), or
// between the front door and the app. The lab's reader and uploader pace
// as they do in every other cell (but when Fault.Paces); the hop only
// adds the fault. A fault is data: one entry in Faults, and the matrix column
// that runs it (FaultColumns).
type Fault struct {
	// ID names the fault in Condition.Fault and is its column's id.
	ID string
	// Kind is the slow clients the fault acts on: load.KindRead or
	// load.KindUpload.
	Kind string
	// Text says what the fault does.
	Text string
	// Client, when set, is the client hop's buffers and toxics, which the
	// slow clients go through; App, when set, the hop between the front
	// door and the server, which everything the front door forwards goes
	// through. Their Listen and Upstream are the pod's (podspec.WithHops).
	Client, App *toxic.Hop
	// Paces, when set, paces the slow readers' downloads on the client
	// hop, by a bandwidth toxic at the condition's ReadRate ahead of
	// Client's own toxics, and the reader takes what comes
	// (load.Spec.PacedByPath): a toxic that delays what it relays holds
	// a queue of 1,024 reads, megabytes the hop would read ahead of a
	// reader that paced itself; behind the pace it holds what arrives
	// within its delay.
	Paces bool
	// Fast, when set, sends /fast through the client hop too, and the
	// fault's cells have a twin with no slow client (IdleColumn), /fast's
	// own baseline on that hop.
	Fast bool
	// CutBytes, when above 0, is where the hop ends each slow client's
	// connection: the bytes its limit_data toxic relays on the slow
	// client's stream (a download's response, an upload's request),
	// headers included. The hop then closes both of its sockets.
	CutBytes int64
}

// Cut reports whether f ends its slow clients' connections part-way.
func (f Fault) Cut() bool { return f.CutBytes > 0 }

// ResetCutBytes is where a reset fault cuts a slow client: 4 MiB, a
// quarter of article A's 16 MiB, 2 s into its download or upload at
// 2 MiB/s, with about 7 s of the /fast series left to see the server
// recover.
const ResetCutBytes = 4 << 20

// ReaderSendBuffer is SO_SNDBUF on the hop's socket to a slow reader
// (toxic.Hop.DownstreamSendBuffer): with the kernel's autotuned default
// the hop queued about a megabyte the reader had not taken, and so read
// the server faster than the reader does. A cut shows it: limit_data
// counts a byte as relayed once that buffer takes it, and the hop cut
// the app off while the reader had 8 to 28 KiB of a 1 MiB limit; with
// 16 KiB, at 988 to 1,004 KiB (hop's
// TestDownstreamSendBufferCutsWhereTheClientStops, 20 runs). So the
// server sees the reader it sees in the slow-read cell.
const ReaderSendBuffer = 16 << 10

// readerHop is a client hop for article A's slow readers carrying
// toxics: it reads the entry point through the lab reader's own 8 KiB
// receive buffer and queues at most ReaderSendBuffer for the reader.
func readerHop(toxics ...toxic.Toxic) *toxic.Hop {
	return &toxic.Hop{UpstreamReceiveBuffer: load.DefaultReceiveBuffer, DownstreamSendBuffer: ReaderSendBuffer, Toxics: toxics}
}

// The faults.
var (
	// ResetDownload cuts each slow reader's download after ResetCutBytes:
	// the reader gets EOF, and the hop closes its socket to the entry
	// point with bytes unread, which resets it. The hop reads the entry
	// point through the lab reader's own 8 KiB receive buffer, so the
	// server sees the reader it sees in the slow-read cell.
	ResetDownload = Fault{ID: "reset-mid-download", Kind: load.KindRead, CutBytes: ResetCutBytes,
		Text:   "slow readers (16 MiB read at 2 MiB/s through an 8 KiB receive buffer) whose connection Toxiproxy's limit_data ends after 4 MiB, both sides closed",
		Client: readerHop(toxic.Toxic{Name: "cut", Type: "limit_data", Stream: toxic.Downstream, Attributes: map[string]int64{"bytes": ResetCutBytes}})}
	// ResetUpload cuts each slow upload after ResetCutBytes of its
	// request: the server reads 4 MiB of a 16 MiB body and then the end
	// of the connection.
	ResetUpload = Fault{ID: "reset-mid-upload", Kind: load.KindUpload, CutBytes: ResetCutBytes,
		Text:   "slow uploads (16 MiB POST bodies sent at 2 MiB/s through an 8 KiB send buffer) whose connection Toxiproxy's limit_data ends after 4 MiB, both sides closed",
		Client: &toxic.Hop{Toxics: []toxic.Toxic{{Name: "cut", Type: "limit_data", Stream: toxic.Upstream, Attributes: map[string]int64{"bytes": ResetCutBytes}}}}}
	// SlicedRead hands each slow reader its response in slices
	// (SliceBytes on average, give or take SliceVariation), each its own
	// write, so its own segments: what a lossy mobile link's segments
	// look like to a client. The server writes to the hop as it would to
	// the reader.
	SlicedRead = Fault{ID: "sliced-read", Kind: load.KindRead,
		Text: "slow readers (16 MiB read at 2 MiB/s through an 8 KiB receive buffer) whose responses Toxiproxy's slicer hands over in segments of 512 to 1,536 bytes",
		Client: readerHop(toxic.Toxic{Name: "slices", Type: "slicer", Stream: toxic.Downstream,
			Attributes: map[string]int64{"average_size": SliceBytes, "size_variation": SliceVariation, "delay": 0}})}
	// SlowClose holds back each end of a slow reader's connection for
	// SlowCloseDelay: the reader learns of the server's close, and the
	// server of the reader's, 2 s late, as behind a middlebox that keeps a
	// half-closed connection open.
	SlowClose = Fault{ID: "slow-close", Kind: load.KindRead,
		Text: "slow readers (16 MiB read at 2 MiB/s through an 8 KiB receive buffer) whose connection's close Toxiproxy's slow_close holds back 2 s each way",
		Client: readerHop(
			toxic.Toxic{Name: "close-down", Type: "slow_close", Stream: toxic.Downstream, Attributes: map[string]int64{"delay": SlowCloseDelay.Milliseconds()}},
			toxic.Toxic{Name: "close-up", Type: "slow_close", Stream: toxic.Upstream, Attributes: map[string]int64{"delay": SlowCloseDelay.Milliseconds()}})}
	// Latency50 and Latency150 delay every byte each way on the client
	// hop, /fast's included: a round trip of 100 or 300 ms, give or take
	// a fifth each way, as mobile clients add.
	Latency50  = latencyFault(50*time.Millisecond, 10*time.Millisecond)
	Latency150 = latencyFault(150*time.Millisecond, 30*time.Millisecond)
	// SlowLink puts a slower link between the front door and the app:
	// Toxiproxy's bandwidth toxic relays each response at SlowLinkRate
	// (8 MiB/s) to the front door, through sockets of SlowLinkBuffer.
	// Article A's slow readers reach the entry point as in their own
	// cell.
	SlowLink = Fault{ID: "slow-upstream", Kind: load.KindRead,
		Text: "slow readers (16 MiB read at 2 MiB/s through an 8 KiB receive buffer) behind a front door whose link to the app Toxiproxy's bandwidth toxic holds to 8 MiB/s a connection",
		App: &toxic.Hop{UpstreamReceiveBuffer: SlowLinkBuffer, DownstreamSendBuffer: SlowLinkBuffer,
			Toxics: []toxic.Toxic{{Name: "link", Type: "bandwidth", Stream: toxic.Downstream, Attributes: map[string]int64{"rate": toxiproxyRate(SlowLinkRate)}}}}}
)

// SlowLinkRate is the slow link's rate, bytes a second: 8 MiB/s, four
// times a slow reader's, so the front door still reads ahead of its
// readers, but takes article A's 16 MiB 2 s to read.
const SlowLinkRate = 8 << 20

// SlowLinkBuffer is SO_RCVBUF on the slow link's socket to the app and
// SO_SNDBUF on its socket to the front door (toxic.Hop's
// UpstreamReceiveBuffer and DownstreamSendBuffer): 64 KiB each, so that
// the hop holds what a link in flight would. With the kernel's autotuned
// buffers the hop itself held megabytes: behind NGINX buffering off, the
// app's write took 1.9 to 3.0 s, where without the hop it takes the
// reader's 4.4 to 4.9 s (reports/measurements.md, stop 68). The app's
// send buffer and NGINX's receive buffer are left as they are.
const SlowLinkBuffer = 64 << 10

// latencyFault delays every byte l (uniform within jitter either side)
// each way on the client hop: Toxiproxy's latency toxic on both
// streams, behind the hop's pace downstream (Fault.Paces).
func latencyFault(l, jitter time.Duration) Fault {
	delay := func(name, stream string) toxic.Toxic {
		return toxic.Toxic{Name: name, Type: "latency", Stream: stream,
			Attributes: map[string]int64{"latency": l.Milliseconds(), "jitter": jitter.Milliseconds()}}
	}
	return Fault{ID: LatencyFaultID(int(l.Milliseconds())), Kind: load.KindRead, Paces: true, Fast: true,
		Text: fmt.Sprintf("slow readers (16 MiB at 2 MiB/s, paced by the hop, through an 8 KiB socket) and /fast through a hop that delays every byte %d ms, give or take %d, each way (Toxiproxy's latency toxic)",
			l.Milliseconds(), jitter.Milliseconds()),
		Client: readerHop(delay("delay-down", toxic.Downstream), delay("delay-up", toxic.Upstream))}
}

// LatencyFaultID is the id of the latency fault that delays ms each way
// (a stack file's requires.client_latency_ms).
func LatencyFaultID(ms int) string { return fmt.Sprintf("latency-%dms", ms) }

// Delay is a latency fault's delay each way and its jitter, 0 for
// another fault.
func (f Fault) Delay() (latency, jitter time.Duration) {
	if f.Client == nil {
		return 0, 0
	}
	for _, t := range f.Client.Toxics {
		if t.Type == "latency" {
			return time.Duration(t.Attributes["latency"]) * time.Millisecond, time.Duration(t.Attributes["jitter"]) * time.Millisecond
		}
	}
	return 0, 0
}

// SlicedRead's slices: 512 to 1,536 bytes, with no delay between them.
// A delay of 100 us took about 0.85 ms here (the hop's timers), and
// held each reader to 1.2 MiB/s, not 2: sync's write took 11.6 s, not
// 6.6 (3 runs, reports/measurements.md, stop 69).
const (
	SliceBytes     = 1024
	SliceVariation = 512
)

// SlowCloseDelay is how long SlowClose holds back each end's close: 2 s,
// Gunicorn's keepalive, so a gthread worker's connection would time out
// in its poller before the close reached it.
const SlowCloseDelay = 2 * time.Second

// Faults are the faults a condition may name, by id.
var Faults = []Fault{ResetDownload, ResetUpload, SlowLink, SlicedRead, SlowClose, Latency50, Latency150}

// FaultByID is the fault named id.
func FaultByID(id string) (Fault, bool) {
	i := slices.IndexFunc(Faults, func(f Fault) bool { return f.ID == id })
	if i < 0 {
		return Fault{}, false
	}
	return Faults[i], true
}

// faultIDs are the faults' ids, for an error.
func faultIDs() string {
	var ids []string
	for _, f := range Faults {
		ids = append(ids, f.ID)
	}
	return strings.Join(ids, ", ")
}

// validateFault names what is wrong with c's Fault, if anything.
func (c Condition) validateFault() error {
	if c.Fault == "" {
		return nil
	}
	f, ok := FaultByID(c.Fault)
	switch {
	case !ok:
		return fmt.Errorf("engine: condition %s: Fault %q: want empty (no fault) or one of %s", c.ID, c.Fault, faultIDs())
	case c.Pacer != "":
		return fmt.Errorf("engine: condition %s: Fault %s with Pacer %s: want one hop's work at a time (the pacer cross-check, or a fault)", c.ID, c.Fault, c.Pacer)
	case !(c.Downloads == 0 && f.Fast) && // /fast's own baseline on the fault's hop (IdleColumn) has none
		(c.Downloads == 0 || load.Holds(c.SlowKind) || (f.Kind == load.KindRead) != c.reads() || f.Kind == load.KindUpload && c.SlowKind != load.KindUpload):
		return fmt.Errorf("engine: condition %s: Fault %s with SlowKind %q, %d slow clients: want %q, 1 or more, the clients it acts on", c.ID, c.Fault, c.SlowKind, c.Downloads, f.Kind)
	case c.HangS > 0:
		return fmt.Errorf("engine: condition %s: Fault %s with HangS %d: want a download the app answers at once", c.ID, c.Fault, c.HangS)
	case f.Cut() && c.BodyBytes <= f.CutBytes:
		return fmt.Errorf("engine: condition %s: Fault %s cuts at %d bytes, BodyBytes %d: want a body larger than the cut", c.ID, c.Fault, f.CutBytes, c.BodyBytes)
	case f.Cut() && c.Target != nil && c.reads() && c.Target.LargeBytes <= f.CutBytes+CutSlackBytes:
		return fmt.Errorf("engine: condition %s: Fault %s cuts at %d bytes, Target.LargeBytes %d: want more than %d, the cut and its slack, or a download would end whole", c.ID, c.Fault, f.CutBytes, c.Target.LargeBytes, f.CutBytes+CutSlackBytes)
	case f.Cut() && (c.Path.TLS || c.Path.HTTP2):
		return fmt.Errorf("engine: condition %s: Fault %s on path %s, which speaks TLS or HTTP/2: want a plain HTTP/1.1 path, where the cut counts the body's own bytes", c.ID, c.Fault, c.Path.ID)
	case f.Cut() && slices.Contains(c.Server.Env, "LAB_LARGE_BODY=file"):
		return fmt.Errorf("engine: condition %s: Fault %s with server %s, whose /large is a file (LAB_LARGE_BODY=file): want a generator's body, whose record says where the cut came (a file's says only that the server closed it)", c.ID, c.Fault, c.Server.ID)
	case f.Fast && (c.Path.TLS || c.Path.HTTP2):
		return fmt.Errorf("engine: condition %s: Fault %s sends /fast through its hop, on path %s, which speaks TLS or HTTP/2: want a plain HTTP/1.1 path", c.ID, c.Fault, c.Path.ID)
	case f.Paces && math.Abs(toxiproxyRateError(c.ReadRate)) > MaxToxiproxyRateError:
		return fmt.Errorf("engine: condition %s: Fault %s paces the downloads on its hop at ReadRate %g: want a rate within %g %% of whole KB/s, Toxiproxy's unit", c.ID, c.Fault, c.ReadRate, 100*MaxToxiproxyRateError)
	case f.App != nil && c.Path.Proxy == nil:
		return fmt.Errorf("engine: condition %s: Fault %s puts a hop between the front door and the app, on path %s with none: want a front door's path", c.ID, c.Fault, c.Path.ID)
	}
	return nil
}

// faultHops are the hops that carry c's fault, nil for none.
func (c Condition) faultHops() *podspec.Hops {
	f, ok := FaultByID(c.Fault)
	if !ok {
		return nil
	}
	clone := func(h *toxic.Hop) *toxic.Hop {
		if h == nil {
			return nil
		}
		x := *h
		x.Toxics = slices.Clone(h.Toxics)
		return &x
	}
	h := &podspec.Hops{Client: clone(f.Client), App: clone(f.App)}
	if f.Paces && h.Client != nil { // ahead of the fault's own toxics downstream
		h.Client.Toxics = append(c.pacingHop().Toxics, h.Client.Toxics...)
	}
	return h
}

// FaultRows are the rows the fault columns run, on article A's three
// paths: Gunicorn's three worker classes of article B (sync, gthread,
// gevent) and an ASGI server (Uvicorn), whose ways of holding a client
// differ: a process, a thread, a greenlet, a task.
var FaultRows = []string{podspec.GunicornSync(2).ID, podspec.GunicornGthread(1, 4).ID, podspec.GunicornGevent(2).ID, podspec.Uvicorn(2).ID}

// faultColumn is fault f's matrix column, over FaultRows on article A's
// paths; base sets its slow clients (SlowRead's or SlowUpload's).
func faultColumn(f Fault, base Column) Column {
	return Column{ID: f.ID, Clients: base.Clients, Text: f.Text, Paths: MatrixPaths,
		Server: func(r Row) (podspec.Server, bool) { return r.Server, slices.Contains(FaultRows, r.ID) },
		Apply: func(c *Condition, n int) {
			base.Apply(c, n)
			c.Fault = f.ID
		}}
}

// The fault columns: ResetMidDownload, ResetMidUpload, SlowUpstream,
// SlicedReads, SlowCloses, and Latency50ms and Latency150ms each with
// its idle twin (IdleColumn).
var (
	ResetMidDownload = faultColumn(ResetDownload, SlowRead)
	// ResetMidUpload runs where a body may reach the app as it is sent
	// (directly, and NGINX with proxy_request_buffering off), and where
	// NGINX reads it whole first (buffering on).
	ResetMidUpload = func() Column {
		c := faultColumn(ResetUpload, SlowUpload)
		c.Paths = []Path{Direct, NginxOn, NginxOnStreamedBody}
		return c
	}()
	// SlowUpstream runs behind NGINX, whose link to the app is the
	// hop's: buffering on, which the fault asks about, and off.
	SlowUpstream = func() Column {
		c := faultColumn(SlowLink, SlowRead)
		c.Paths = []Path{NginxOff, NginxOn}
		return c
	}()
	// SlicedReads and SlowCloses: slow readers through a hop that
	// slices their responses, or holds back their connections' close,
	// on article A's paths.
	SlicedReads = faultColumn(SlicedRead, SlowRead)
	SlowCloses  = faultColumn(SlowClose, SlowRead)
	// Latency50ms and Latency150ms: slow readers paced by the hop, and
	// /fast, through the hop's delay; each beside its idle twin, /fast
	// alone through the same hop (IdleColumn), which its verdicts read.
	Latency50ms, Latency150ms = faultColumn(Latency50, SlowRead), faultColumn(Latency150, SlowRead)
	FaultColumns              = []Column{ResetMidDownload, ResetMidUpload, SlowUpstream, SlicedReads, SlowCloses,
		Latency50ms, IdleColumn(Latency50), Latency150ms, IdleColumn(Latency150)}
)

// IdleColumn is fault f's column with no slow client: /fast alone
// through f's hop (Fault.Fast), the baseline its cells are judged
// against. Its hop is the cell's, pace included.
func IdleColumn(f Fault) Column {
	c := faultColumn(f, SlowRead)
	c.ID, c.Clients, c.Text = f.ID+"-idle", 0, "/fast alone through the hop of "+f.ID+", no slow client"
	c.Apply = func(c *Condition, _ int) { c.ReadRate, c.Fault = load.DefaultDownloadRate, f.ID }
	return c
}

// IsFaultColumn reports whether col is a fault column's id.
func IsFaultColumn(col string) bool {
	return slices.ContainsFunc(FaultColumns, func(c Column) bool { return c.ID == col })
}
