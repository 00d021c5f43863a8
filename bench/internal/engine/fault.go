package engine

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/toxic"
)

// Faults on the path (issue 34): Toxiproxy's toxics on a hop between the
// client and the pod's entry point, which the slow clients go through
// while /fast keeps to the entry point itself. The lab's reader and
// uploader pace as they do in every other cell; the hop only adds the
// fault. A fault is data: one entry in Faults, and the matrix column
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

// ResetSendBuffer is SO_SNDBUF on the hop's socket to a reader that is
// cut (toxic.Hop.DownstreamSendBuffer): limit_data counts a byte as
// relayed once that buffer takes it, and with the kernel's autotuned
// default the hop cut the app off while the reader had 8 to 28 KiB of a
// 1 MiB limit; with 16 KiB, at 988 to 1,004 KiB (hop's
// TestDownstreamSendBufferCutsWhereTheClientStops, 20 runs). So the app
// is cut where the reader stops, not seconds earlier.
const ResetSendBuffer = 16 << 10

// The faults.
var (
	// ResetDownload cuts each slow reader's download after ResetCutBytes:
	// the reader gets EOF, and the hop closes its socket to the entry
	// point with bytes unread, which resets it. The hop reads the entry
	// point through the lab reader's own 8 KiB receive buffer, so the
	// server sees the reader it sees in the slow-read cell.
	ResetDownload = Fault{ID: "reset-mid-download", Kind: load.KindRead, CutBytes: ResetCutBytes,
		Text: "slow readers (16 MiB read at 2 MiB/s through an 8 KiB receive buffer) whose connection Toxiproxy's limit_data ends after 4 MiB, both sides closed",
		Client: &toxic.Hop{UpstreamReceiveBuffer: load.DefaultReceiveBuffer, DownstreamSendBuffer: ResetSendBuffer,
			Toxics: []toxic.Toxic{{Name: "cut", Type: "limit_data", Stream: toxic.Downstream, Attributes: map[string]int64{"bytes": ResetCutBytes}}}}}
	// ResetUpload cuts each slow upload after ResetCutBytes of its
	// request: the server reads 4 MiB of a 16 MiB body and then the end
	// of the connection.
	ResetUpload = Fault{ID: "reset-mid-upload", Kind: load.KindUpload, CutBytes: ResetCutBytes,
		Text:   "slow uploads (16 MiB POST bodies sent at 2 MiB/s through an 8 KiB send buffer) whose connection Toxiproxy's limit_data ends after 4 MiB, both sides closed",
		Client: &toxic.Hop{Toxics: []toxic.Toxic{{Name: "cut", Type: "limit_data", Stream: toxic.Upstream, Attributes: map[string]int64{"bytes": ResetCutBytes}}}}}
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

// Faults are the faults a condition may name, by id.
var Faults = []Fault{ResetDownload, ResetUpload, SlowLink}

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
	case c.Downloads == 0 || load.Holds(c.SlowKind) || (f.Kind == load.KindRead) != c.reads() || f.Kind == load.KindUpload && c.SlowKind != load.KindUpload:
		return fmt.Errorf("engine: condition %s: Fault %s with SlowKind %q, %d slow clients: want %q, 1 or more, the clients it acts on", c.ID, c.Fault, c.SlowKind, c.Downloads, f.Kind)
	case c.HangS > 0:
		return fmt.Errorf("engine: condition %s: Fault %s with HangS %d: want a download the app answers at once", c.ID, c.Fault, c.HangS)
	case f.Cut() && c.BodyBytes <= f.CutBytes:
		return fmt.Errorf("engine: condition %s: Fault %s cuts at %d bytes, BodyBytes %d: want a body larger than the cut", c.ID, c.Fault, f.CutBytes, c.BodyBytes)
	case f.Cut() && (c.Path.TLS || c.Path.HTTP2):
		return fmt.Errorf("engine: condition %s: Fault %s on path %s, which speaks TLS or HTTP/2: want a plain HTTP/1.1 path, where the cut counts the body's own bytes", c.ID, c.Fault, c.Path.ID)
	case f.Cut() && slices.Contains(c.Server.Env, "LAB_LARGE_BODY=file"):
		return fmt.Errorf("engine: condition %s: Fault %s with server %s, whose /large is a file (LAB_LARGE_BODY=file): want a generator's body, whose record says where the cut came (a file's says only that the server closed it)", c.ID, c.Fault, c.Server.ID)
	case f.App != nil && c.Path.Proxy == nil:
		return fmt.Errorf("engine: condition %s: Fault %s puts a hop between the front door and the app, on path %s with none: want a front door's path", c.ID, c.Fault, c.Path.ID)
	case f.Cut() && c.Target != nil:
		return fmt.Errorf("engine: condition %s: Fault %s with a team's app (Target): want the lab app, whose records say whether the server saw the cut", c.ID, c.Fault)
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
	return &podspec.Hops{Client: clone(f.Client), App: clone(f.App)}
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

// The fault columns: ResetMidDownload, ResetMidUpload and SlowUpstream.
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
	FaultColumns = []Column{ResetMidDownload, ResetMidUpload, SlowUpstream}
)

// IsFaultColumn reports whether col is a fault column's id.
func IsFaultColumn(col string) bool {
	return slices.ContainsFunc(FaultColumns, func(c Column) bool { return c.ID == col })
}
