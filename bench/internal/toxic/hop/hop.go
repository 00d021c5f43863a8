// Package hop runs one Toxiproxy hop (toxic.Hop) on a pod's path:
// Toxiproxy (github.com/Shopify/toxiproxy/v2, used as a library, not
// re-implemented) listening on one loopback address of the pod and
// dialing another, its toxics on the links between them. Toxiproxy works
// in user space, so the pod keeps its hardening: no NET_ADMIN, as netem
// would need.
//
// The hop accepts and dials itself and hands each pair of connections to
// Toxiproxy's links (ToxicCollection.StartLink), as Toxiproxy's own proxy
// does, for one reason: the socket it dials upstream takes the receive
// buffer toxic.Hop.UpstreamReceiveBuffer asks for, as the lab's own slow
// reader does (load.DefaultReceiveBuffer, 8 KiB, doubled by the kernel),
// with the same dialer (load.BufferDialer). Toxiproxy's proxy dials with
// the kernel's default, which autotunes, so more of a paced download
// would wait in the hop than in the lab's reader, and its writer would be
// freed earlier. Measured here (TestUpstreamReceiveBufferHoldsTheWorker,
// 256 KB/s, a 16 KiB SO_SNDBUF writer): after a second the writer led
// what the reader had read by 44 to 56 KiB through 8 KiB and by 171 to
// 232 KiB through the default. At article A's 2 MiB/s, with the kernel's
// own send buffer, it led the rate's nominal bytes by 2.4 to 3.2 MiB
// through 8 KiB (the writer's send queue, as under the lab's reader) and
// by up to 0.9 MiB more through the default.
package hop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"syscall"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/toxic"
)

// Serve runs h until ctx ends, then closes its listener and every
// connection it opened and returns nil. ready, when not nil, is called
// with the listener's address once it accepts.
//
// It holds every connection until then (a run's few hundred):
// Toxiproxy's links type-assert *net.TCPConn (for reset_peer's
// SetLinger), so a wrapper that would drop a closed pair cannot stand in.
// A link that reset_peer, timeout or limit_data closes leaves the
// goroutines before that toxic in its chain blocked until Serve closes
// the sockets: Toxiproxy's own behaviour, bounded by the run.
func Serve(ctx context.Context, h toxic.Hop, ready func(net.Addr)) error {
	if err := h.Validate(); err != nil {
		return err
	}
	// Toxiproxy's toxics log through zerolog's global logger; the hop's
	// own errors are returned, and a pod's logs keep only warnings.
	zerolog.SetGlobalLevel(zerolog.WarnLevel)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "hop", h.Listen, h.Upstream)
	for _, t := range h.Toxics {
		// A toxicity of 0 is left out of the JSON (omitempty), and
		// Toxiproxy reads a missing one as 1: every connection.
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if _, err := proxy.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("hop: Toxiproxy refused %s on %s: %w", t.Type, t.Stream, err)
		}
	}
	ln, err := net.Listen("tcp", h.Listen)
	if err != nil {
		return fmt.Errorf("hop: listen %s: %w", h.Listen, err)
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
			return fmt.Errorf("hop: accept: %w", err)
		}
		if n := h.DownstreamSendBuffer; n > 0 {
			if err := client.(*net.TCPConn).SetWriteBuffer(n); err != nil {
				client.Close()
				return fmt.Errorf("hop: downstream_send_buffer %d: %w", n, err)
			}
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
