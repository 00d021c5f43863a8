// Package toxic describes Toxiproxy hops as data: the toxics
// (Toxiproxy's latency, bandwidth, slow_close, timeout, reset_peer,
// limit_data and slicer) and the hop that carries them, each checked
// before anything starts. Package hop runs one; this package links no
// Toxiproxy, so a pod's description and a stack file can name a hop
// without it. A hop is the lab's second instrument and its faults on the
// path (issue 34).
package toxic

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
)

// Streams a toxic may act on: Downstream is what flows from the upstream
// to the client (a download's body), Upstream what the client sends.
const (
	Downstream = "downstream"
	Upstream   = "upstream"
)

// attributes are Toxiproxy 2.5.0's toxics and the attributes each takes
// (its README, "Toxics"), all integers: the units are Toxiproxy's own.
var attributes = map[string][]string{
	"latency":    {"latency", "jitter"},                       // ms
	"bandwidth":  {"rate"},                                    // KB/s
	"slow_close": {"delay"},                                   // ms
	"timeout":    {"timeout"},                                 // ms, 0: never
	"reset_peer": {"timeout"},                                 // ms
	"slicer":     {"average_size", "size_variation", "delay"}, // bytes, bytes, us
	"limit_data": {"bytes"},                                   // bytes
}

// Toxic is one of Toxiproxy's toxics, as its API takes it.
type Toxic struct {
	// Name tells the toxics of a hop apart; "" is Toxiproxy's
	// <type>_<stream>.
	Name string `json:"name,omitempty"`
	// Type is one of Toxiproxy's toxic types (Types).
	Type string `json:"type"`
	// Stream is Downstream or Upstream.
	Stream string `json:"stream"`
	// Toxicity is the share of connections the toxic acts on, 0 to 1; 0
	// is read as 1, every connection.
	Toxicity float32 `json:"toxicity,omitempty"`
	// Attributes are the type's attributes (Types), in Toxiproxy's units.
	Attributes map[string]int64 `json:"attributes"`
}

// Types are the toxic types a Toxic may name, sorted.
func Types() []string { return slices.Sorted(maps.Keys(attributes)) }

// Validate names the first field of t that Toxiproxy would refuse, that
// would crash it, or that the lab cannot read, with what is accepted.
func (t Toxic) Validate() error {
	want, ok := attributes[t.Type]
	switch {
	case !ok:
		return fmt.Errorf("toxic: type %q: want one of %s", t.Type, strings.Join(Types(), ", "))
	case t.Stream != Downstream && t.Stream != Upstream:
		return fmt.Errorf("toxic: %s stream %q: want %q or %q", cmp.Or(t.Name, t.Type), t.Stream, Downstream, Upstream)
	case t.Toxicity < 0 || t.Toxicity > 1:
		return fmt.Errorf("toxic: %s toxicity %g: want 0 to 1 (0 is read as 1, every connection)", t.label(), t.Toxicity)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Attributes)) {
		v := t.Attributes[k]
		if !slices.Contains(want, k) {
			return fmt.Errorf("toxic: %s attribute %q: want %s", t.label(), k, strings.Join(want, ", "))
		}
		if v < 0 {
			return fmt.Errorf("toxic: %s attribute %s %d: want 0 or more", t.label(), k, v)
		}
	}
	a := t.Attributes
	switch t.Type {
	case "bandwidth":
		// Toxiproxy passes a rate of 0 through unthrottled.
		if a["rate"] <= 0 {
			return fmt.Errorf("toxic: %s rate %d: want a rate above 0 KB/s (Toxiproxy passes 0 through unpaced)", t.label(), a["rate"])
		}
	case "slicer":
		// Toxiproxy's slicer recurses forever on an average size of 0,
		// and slices out of range when the variation reaches the average:
		// either ends the process.
		if a["average_size"] <= 0 || a["size_variation"] >= a["average_size"] {
			return fmt.Errorf("toxic: %s average_size %d, size_variation %d: want average_size above 0 and size_variation below it",
				t.label(), a["average_size"], a["size_variation"])
		}
	}
	return nil
}

// id is t's name on its hop: Name, else Toxiproxy's <type>_<stream>.
func (t Toxic) id() string { return cmp.Or(t.Name, t.Type+"_"+t.Stream) }

// label names t in an error: its name and type, else its id.
func (t Toxic) label() string {
	if t.Name != "" {
		return fmt.Sprintf("%s (%s)", t.Name, t.Type)
	}
	return t.id()
}

// HopsEnv is the environment variable that gives a hop container
// (labagent hop) its hops: a JSON array of Hop.
const HopsEnv = "LAB_HOPS"

// Hop is one Toxiproxy hop: it listens on Listen, and for each
// connection it accepts dials Upstream, the toxics on the pair's links.
type Hop struct {
	// Listen is the hop's own address, host:port.
	Listen string `json:"listen"`
	// Upstream is what the hop dials for each connection, host:port.
	Upstream string `json:"upstream"`
	// UpstreamReceiveBuffer is SO_RCVBUF asked for on each upstream
	// socket, in bytes (the kernel grants double); 0 leaves the kernel's
	// default, autotuned.
	UpstreamReceiveBuffer int `json:"upstream_receive_buffer,omitempty"`
	// DownstreamSendBuffer is SO_SNDBUF set on each socket the hop
	// accepts, in bytes (the kernel grants double); 0 leaves the
	// kernel's default, autotuned up to tcp_wmem's largest. The bytes in
	// it have passed the toxics: a limit_data downstream counts them as
	// relayed, so with the default a limit closes the upstream while a
	// slow client has yet to read most of it, and with a small buffer
	// where the client stops (hop's TestDownstreamSendBufferCutsWhereTheClientStops).
	DownstreamSendBuffer int `json:"downstream_send_buffer,omitempty"`
	// Toxics are applied in order, each on its stream.
	Toxics []Toxic `json:"toxics,omitempty"`
}

// Validate names the first setting of h that cannot run.
func (h Hop) Validate() error {
	for _, a := range [][2]string{{"listen", h.Listen}, {"upstream", h.Upstream}} {
		if _, _, err := net.SplitHostPort(a[1]); err != nil {
			return fmt.Errorf("toxic: hop %s %q: want host:port (%v)", a[0], a[1], err)
		}
	}
	if h.UpstreamReceiveBuffer < 0 {
		return fmt.Errorf("toxic: hop upstream_receive_buffer %d: want 0 (the kernel's) or a size in bytes", h.UpstreamReceiveBuffer)
	}
	if h.DownstreamSendBuffer < 0 {
		return fmt.Errorf("toxic: hop downstream_send_buffer %d: want 0 (the kernel's) or a size in bytes", h.DownstreamSendBuffer)
	}
	names := map[string]bool{}
	for i, t := range h.Toxics {
		if err := t.Validate(); err != nil {
			return fmt.Errorf("toxic: hop toxic %d: %s", i+1, strings.TrimPrefix(err.Error(), "toxic: "))
		}
		n := t.id()
		if names[n] {
			return fmt.Errorf("toxic: hop toxic %d: a second toxic named %q on one hop: name them apart", i+1, n)
		}
		names[n] = true
	}
	return nil
}
