// Package toxic is one Toxiproxy hop on a pod's path: Toxiproxy
// (github.com/Shopify/toxiproxy/v2, used as a library, not re-implemented)
// listening on one loopback address of the pod and dialing another, its
// toxics (latency, bandwidth, slow_close, timeout, reset_peer, limit_data,
// slicer) on the links between them. It is the lab's second instrument
// and its faults on the path (issue 34). Toxiproxy works in user space,
// so the pod keeps its hardening: no NET_ADMIN, as netem would need.
//
// The hop accepts and dials itself and hands each pair of connections to
// Toxiproxy's links (ToxicCollection.StartLink), as Toxiproxy's own proxy
// does, for one reason: the socket it dials upstream takes the receive
// buffer Hop.UpstreamReceiveBuffer asks for, as the lab's own slow reader
// does (load.DefaultReceiveBuffer, 8 KiB, doubled by the kernel), with
// the same dialer (load.BufferDialer).
// Toxiproxy's proxy dials with the kernel's default, which autotunes, so
// more of a paced download would wait in the hop than in the lab's
// reader, and its writer would be freed earlier. Measured here
// (TestUpstreamReceiveBufferHoldsTheWorker, 256 KB/s, a 16 KiB SO_SNDBUF
// writer): the writer led the paced reader by 49 KiB through 8 KiB and by
// 173 KiB through the default after a second; at article A's 2 MiB/s,
// with the kernel's own send buffer, by 2.4 to 3.2 MiB through 8 KiB (the
// writer's send queue, as under the lab's reader) and by up to 0.9 MiB
// more through the default.
package toxic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"wsgilab/bench/internal/load"
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
func Types() []string {
	out := make([]string, 0, len(attributes))
	for t := range attributes {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Validate names the first field of t that Toxiproxy would refuse or the
// lab cannot read, with what is accepted.
func (t Toxic) Validate() error {
	want, ok := attributes[t.Type]
	switch {
	case !ok:
		return fmt.Errorf("toxic: type %q: want one of %s", t.Type, strings.Join(Types(), ", "))
	case t.Stream != Downstream && t.Stream != Upstream:
		return fmt.Errorf("toxic: %s stream %q: want %q or %q", t.Type, t.Stream, Downstream, Upstream)
	case t.Toxicity < 0 || t.Toxicity > 1:
		return fmt.Errorf("toxic: %s toxicity %g: want 0 to 1", t.Type, t.Toxicity)
	}
	for k, v := range t.Attributes {
		if !slices.Contains(want, k) {
			return fmt.Errorf("toxic: %s attribute %q: want %s", t.Type, k, strings.Join(want, ", "))
		}
		if v < 0 {
			return fmt.Errorf("toxic: %s attribute %s %d: want 0 or more", t.Type, k, v)
		}
	}
	return nil
}

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
	// Toxics are applied in order, each on its stream.
	Toxics []Toxic `json:"toxics,omitempty"`
}

// Validate names the first setting of h that cannot run.
func (h Hop) Validate() error {
	for name, addr := range map[string]string{"listen": h.Listen, "upstream": h.Upstream} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("toxic: hop %s %q: want host:port (%v)", name, addr, err)
		}
	}
	if h.UpstreamReceiveBuffer < 0 {
		return fmt.Errorf("toxic: hop upstream_receive_buffer %d: want 0 (the kernel's) or a size in bytes", h.UpstreamReceiveBuffer)
	}
	names := map[string]bool{}
	for _, t := range h.Toxics {
		if err := t.Validate(); err != nil {
			return err
		}
		n := t.Name
		if n == "" {
			n = t.Type + "_" + t.Stream
		}
		if names[n] {
			return fmt.Errorf("toxic: two toxics named %q on one hop: name them apart", n)
		}
		names[n] = true
	}
	return nil
}

// Serve runs h until ctx ends, then closes its listener and every
// connection it opened (it holds them all until then: a run's few
// hundred) and returns nil. ready, when not nil, is called
// with the listener's address once it accepts.
func Serve(ctx context.Context, h Hop, ready func(net.Addr)) error {
	if err := h.Validate(); err != nil {
		return err
	}
	// Toxiproxy's toxics log through zerolog's global logger; the hop's
	// own errors are returned, and a pod's logs keep only warnings.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "hop", h.Listen, h.Upstream)
	for _, t := range h.Toxics {
		if t.Toxicity == 0 {
			t.Toxicity = 1
		}
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := proxy.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("toxic: Toxiproxy refused %s on %s: %w", t.Type, t.Stream, err)
		}
	}
	ln, err := net.Listen("tcp", h.Listen)
	if err != nil {
		return fmt.Errorf("toxic: hop listen %s: %w", h.Listen, err)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		done  = make(chan struct{})
	)
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	}()
	defer close(done)
	if ready != nil {
		ready(ln.Addr())
	}
	dialer := &net.Dialer{KeepAlive: -1}
	if h.UpstreamReceiveBuffer > 0 {
		dialer = load.BufferDialer(syscall.SO_RCVBUF, h.UpstreamReceiveBuffer)
	}
	for {
		client, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("toxic: hop accept: %w", err)
		}
		up, err := dialer.DialContext(ctx, "tcp", h.Upstream)
		if err != nil {
			// As Toxiproxy's own proxy does: the client sees its
			// connection closed, the hop goes on.
			client.Close()
			continue
		}
		mu.Lock()
		conns[client], conns[up] = true, true
		mu.Unlock()
		if ctx.Err() != nil { // the closer may have run before the pair was held
			client.Close()
			up.Close()
			return nil
		}
		name := client.RemoteAddr().String()
		proxy.Toxics.StartLink(server, name+"upstream", client, up, stream.Upstream)
		proxy.Toxics.StartLink(server, name+"downstream", up, client, stream.Downstream)
	}
}
