package toxic

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pusher is an upstream that writes size bytes to each connection as fast
// as its socket takes them, through a sndbuf-byte SO_SNDBUF, and counts
// what the kernel took.
type pusher struct {
	ln      net.Listener
	written atomic.Int64
}

func newPusher(t *testing.T, size, sndbuf int) *pusher {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &pusher{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if sndbuf > 0 {
					require.NoError(t, c.(*net.TCPConn).SetWriteBuffer(sndbuf))
				}
				chunk := make([]byte, 4<<10)
				for left := size; left > 0; left -= len(chunk) {
					n, err := c.Write(chunk[:min(len(chunk), left)])
					p.written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// serve starts h on a free loopback port and returns its address.
func serve(t *testing.T, h Hop) string {
	t.Helper()
	h.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, h, func(a net.Addr) { addr <- a.String() }) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-errc, "the hop's Serve after its context ended")
	})
	select {
	case a := <-addr:
		return a
	case err := <-errc:
		t.Fatalf("hop did not start: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("hop did not start in 5 s")
	}
	return ""
}

// TestBandwidthPaces: a download through the hop's bandwidth toxic takes
// at least its bytes over the rate (Toxiproxy's KB is 1,000 bytes). Only
// the lower bound is the toxic's: a busy machine can make it slower,
// never faster.
func TestBandwidthPaces(t *testing.T) {
	const size, rate = 1 << 20, 2048 // 1 MiB at 2,048 KB/s: 512 ms
	up := newPusher(t, size, 0)
	addr := serve(t, Hop{Upstream: up.ln.Addr().String(),
		Toxics: []Toxic{{Type: "bandwidth", Stream: Downstream, Attributes: map[string]int64{"rate": rate}}}})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	n, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	require.NoError(t, err)
	require.EqualValues(t, size, n, "every byte through the hop")
	want := time.Duration(size) * time.Millisecond / rate
	assert.GreaterOrEqual(t, took, want*95/100, "1 MiB at %d KB/s took %v, want at least %v", rate, took, want)
	t.Logf("1 MiB at %d KB/s: %v (the rate's own: %v)", rate, took, want)
}

// TestUpstreamReceiveBufferHoldsTheWorker: the socket the hop dials takes
// the receive buffer asked for, so a paced download holds its upstream's
// writer as the lab's slow reader does. Against the kernel's default
// (autotuned) buffer, the writer gets further ahead: the check the
// setting exists for.
func TestUpstreamReceiveBufferHoldsTheWorker(t *testing.T) {
	const size, rate, sndbuf = 8 << 20, 256, 16 << 10 // 256 KB/s
	ahead := func(rcvbuf int) int64 {
		up := newPusher(t, size, sndbuf)
		addr := serve(t, Hop{Upstream: up.ln.Addr().String(), UpstreamReceiveBuffer: rcvbuf,
			Toxics: []Toxic{{Type: "bandwidth", Stream: Downstream, Attributes: map[string]int64{"rate": rate}}}})
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		start := time.Now()
		done := make(chan int64)
		go func() { n, _ := io.Copy(io.Discard, c); done <- n }()
		time.Sleep(time.Second)
		read := int64(time.Since(start)) * rate * 1000 / int64(time.Second)
		w := up.written.Load()
		c.Close()
		<-done
		return w - read
	}
	small, dflt := ahead(8<<10), ahead(0)
	t.Logf("the writer's lead on the paced reader after 1 s: %d KiB through an 8 KiB SO_RCVBUF, %d KiB through the kernel's default", small>>10, dflt>>10)
	// The lead through 8 KiB: the writer's 32 KiB send buffer, the hop's
	// 16 KiB receive buffer and what Toxiproxy's chain holds. Measured
	// here in 20 runs, 10 of them beside two CPU burners: 37 to 49 KiB
	// through 8 KiB, 157 to 205 KiB through the default; the bounds sit
	// 5 times over the first and 1.6 times under the second's least.
	assert.Less(t, small, int64(256<<10), "lead through an 8 KiB SO_RCVBUF")
	assert.Greater(t, dflt, 2*small, "the kernel's default buffer lets the writer further ahead")
}

// TestResetPeer: reset_peer ends the client's connection with a reset
// its timeout after the first bytes reach it, as a path that breaks
// mid-download does.
func TestResetPeer(t *testing.T) {
	up := newPusher(t, 64<<20, 0)
	addr := serve(t, Hop{Upstream: up.ln.Addr().String(), Toxics: []Toxic{
		{Type: "bandwidth", Stream: Downstream, Attributes: map[string]int64{"rate": 1024}},
		{Type: "reset_peer", Stream: Downstream, Attributes: map[string]int64{"timeout": 200}}}})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	n, err := io.Copy(io.Discard, c)
	assert.Less(t, n, int64(64<<20), "the download was cut")
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "the client's read ends in a reset, got %v", err)
}

// TestHopRefusesBadSettings: each bad setting is named with what is
// accepted, before anything listens.
func TestHopRefusesBadSettings(t *testing.T) {
	ok := Hop{Listen: "127.0.0.1:0", Upstream: "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		hop  Hop
		want string
	}{
		{"listen", Hop{Listen: "nowhere", Upstream: ok.Upstream}, `hop listen "nowhere": want host:port`},
		{"buffer", Hop{Listen: ok.Listen, Upstream: ok.Upstream, UpstreamReceiveBuffer: -1}, "upstream_receive_buffer -1"},
		{"type", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "jitter", Stream: Downstream}}}, `type "jitter": want one of bandwidth, latency, limit_data, reset_peer, slicer, slow_close, timeout`},
		{"stream", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: "both"}}}, `latency stream "both"`},
		{"attribute", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: Downstream, Attributes: map[string]int64{"rate": 1}}}}, `latency attribute "rate": want latency, jitter`},
		{"negative", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "limit_data", Stream: Downstream, Attributes: map[string]int64{"bytes": -1}}}}, "limit_data attribute bytes -1"},
		{"twice", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: Downstream}, {Type: "latency", Stream: Downstream}}}, `two toxics named "latency_downstream"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Serve(context.Background(), tc.hop, func(net.Addr) { t.Error("the hop listened") })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.NoError(t, ok.Validate())
}
