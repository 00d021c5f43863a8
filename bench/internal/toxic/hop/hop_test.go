package hop

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

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/toxic"
)

// pusher is an upstream that writes size bytes to each connection as fast
// as its socket takes them, through a sndbuf-byte SO_SNDBUF, and counts
// what the kernel took.
type pusher struct {
	ln      net.Listener
	written atomic.Int64
	// failedAt is when a write first failed (Unix ns), 0 until then.
	failedAt atomic.Int64
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
				if sndbuf > 0 && !assert.NoError(t, c.(*net.TCPConn).SetWriteBuffer(sndbuf)) {
					return
				}
				chunk := make([]byte, 4<<10)
				for left := size; left > 0; left -= len(chunk) {
					n, err := c.Write(chunk[:min(len(chunk), left)])
					p.written.Add(int64(n))
					if err != nil {
						p.failedAt.CompareAndSwap(0, time.Now().UnixNano())
						return
					}
				}
			}()
		}
	}()
	return p
}

// serve starts h on a free loopback port and returns its address.
func serve(t *testing.T, h toxic.Hop) string {
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
	addr := serve(t, toxic.Hop{Upstream: up.ln.Addr().String(),
		Toxics: []toxic.Toxic{{Type: "bandwidth", Stream: toxic.Downstream, Attributes: map[string]int64{"rate": rate}}}})
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
		addr := serve(t, toxic.Hop{Upstream: up.ln.Addr().String(), UpstreamReceiveBuffer: rcvbuf,
			Toxics: []toxic.Toxic{{Type: "bandwidth", Stream: toxic.Downstream, Attributes: map[string]int64{"rate": rate}}}})
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		var read atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				read.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
		time.Sleep(time.Second)
		lead := up.written.Load() - read.Load()
		c.Close()
		<-done
		return lead
	}
	small, dflt := ahead(8<<10), ahead(0)
	t.Logf("the writer's lead on the paced reader after 1 s: %d KiB through an 8 KiB SO_RCVBUF, %d KiB through the kernel's default", small>>10, dflt>>10)
	// The lead through 8 KiB: the writer's 32 KiB send buffer, the hop's
	// 16 KiB receive buffer and what Toxiproxy's chain holds. Measured
	// here in 20 runs, 10 of them beside two CPU burners: 44 to 56 KiB
	// through 8 KiB, 171 to 232 KiB through the default (at least 3.05
	// times the first in the same run). The bounds: 4.6 times over the
	// first's most, and half the least ratio.
	assert.Less(t, small, int64(256<<10), "lead through an 8 KiB SO_RCVBUF")
	assert.Greater(t, dflt, 2*small, "the kernel's default buffer lets the writer further ahead")
}

// TestResetPeer: reset_peer resets the client's connection its timeout
// after the first bytes reach it in the chain (which it drops, and all
// after them: the client reads nothing), as a path that breaks does.
// Without the toxic the read would run into its 10 s deadline instead.
func TestResetPeer(t *testing.T) {
	up := newPusher(t, 64<<20, 0)
	addr := serve(t, toxic.Hop{Upstream: up.ln.Addr().String(), Toxics: []toxic.Toxic{
		{Type: "bandwidth", Stream: toxic.Downstream, Attributes: map[string]int64{"rate": 1024}},
		{Type: "reset_peer", Stream: toxic.Downstream, Attributes: map[string]int64{"timeout": 200}}}})
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	n, err := io.Copy(io.Discard, c)
	assert.Zero(t, n, "reset_peer drops what reaches it")
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "the client's read ends in a reset, got %v", err)
}

// TestServeRefusesBeforeListening: a bad hop is refused with its
// setting named, and nothing listens.
func TestServeRefusesBeforeListening(t *testing.T) {
	err := Serve(context.Background(), toxic.Hop{Listen: "127.0.0.1:0", Upstream: "127.0.0.1:1",
		Toxics: []toxic.Toxic{{Type: "bandwidth", Stream: toxic.Downstream}}}, func(net.Addr) { t.Error("the hop listened") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bandwidth_downstream rate 0")
}

// TestDownstreamSendBufferCutsWhereTheClientStops: limit_data downstream
// counts what passes into the hop's socket to the client. Through the
// kernel's autotuned send buffer a 1 MiB limit is passed at once, and
// the upstream's writer fails while a client reading 2 MiB/s has read
// little of it; through a 16 KiB DownstreamSendBuffer it fails once the
// client has read nearly all of it, where a client that goes away there
// would stop. The measure is what the client had read when the writer
// first failed: measured here in 20 runs, 10 of them beside two CPU
// burners, 988 to 1,004 KiB through 16 KiB and 8 to 28 KiB through the
// default (the writer failing 483 to 487 ms and 4 to 5 ms in, the client
// reading its 1 MiB in 500 ms and then EOF in both). The bounds: 768 KiB
// and 512 KiB. The client
// sets its 8 KiB SO_RCVBUF before connecting, as the lab's reader does:
// set after, the window it had offered shrinks and the transfer stalls.
func TestDownstreamSendBufferCutsWhereTheClientStops(t *testing.T) {
	const limit, rate = 1 << 20, 2 << 20 // the client reads 1 MiB in 0.5 s
	readAtCut := func(sndbuf int) int64 {
		up := newPusher(t, 8<<20, 16<<10)
		addr := serve(t, toxic.Hop{Upstream: up.ln.Addr().String(), DownstreamSendBuffer: sndbuf,
			Toxics: []toxic.Toxic{{Type: "limit_data", Stream: toxic.Downstream, Attributes: map[string]int64{"bytes": limit}}}})
		c, err := load.BufferDialer(syscall.SO_RCVBUF, 8<<10).Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		type mark struct{ at, read int64 }
		var marks []mark
		var total int64
		buf := make([]byte, 16<<10)
		start := time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(10*time.Second)))
		for {
			time.Sleep(time.Until(start.Add(time.Duration(total) * time.Second / rate)))
			n, err := c.Read(buf)
			total += int64(n)
			marks = append(marks, mark{time.Now().UnixNano(), total})
			if err != nil {
				require.ErrorIs(t, err, io.EOF, "the hop closes the client's connection at the limit (read %d bytes in %v)", total, time.Since(start))
				break
			}
		}
		assert.EqualValues(t, limit, total, "the client gets the limit, no byte more")
		cut := up.failedAt.Load()
		require.NotZero(t, cut, "the upstream's writer saw its connection closed")
		var read int64
		for _, m := range marks {
			if m.at <= cut {
				read = m.read
			}
		}
		return read
	}
	small, dflt := readAtCut(16<<10), readAtCut(0)
	t.Logf("read by the client when the upstream's writer failed: %d KiB through a 16 KiB SO_SNDBUF, %d KiB through the kernel's default (limit %d KiB)", small>>10, dflt>>10, limit>>10)
	assert.GreaterOrEqual(t, small, int64(limit*3/4), "through a small send buffer the cut comes where the client stops")
	assert.Less(t, dflt, int64(limit/2), "the kernel's default buffer passes the limit at once: the check the setting exists for")
}
