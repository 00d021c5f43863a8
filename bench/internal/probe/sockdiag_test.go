package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSocketsNetlinkAgreesWithProc reads the same real sockets both ways:
// a listener with one connection waiting for accept(), an accepted one
// with 1,000 bytes unread on the server's side and 3,000 on the client's,
// and a TIME_WAIT socket, which only /proc lists.
func TestSocketsNetlinkAgreesWithProc(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	// A closed connection first: the client closes, then the server, so
	// the client's end waits in TIME_WAIT.
	c0, err := net.Dial("tcp4", ln.Addr().String())
	require.NoError(t, err)
	s0, err := ln.Accept()
	require.NoError(t, err)
	require.NoError(t, c0.Close())
	_, err = s0.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.NoError(t, s0.Close())

	c1, err := net.Dial("tcp4", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c1.Close() })
	s1, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { s1.Close() })
	_, err = c1.Write(make([]byte, 1000))
	require.NoError(t, err)
	_, err = s1.Write(make([]byte, 3000))
	require.NoError(t, err)
	c2, err := net.Dial("tcp4", ln.Addr().String()) // never accepted
	require.NoError(t, err)
	t.Cleanup(func() { c2.Close() })

	ours := func(all []Socket) []Socket {
		var out []Socket
		for _, s := range all {
			if s.LocalPort == port || s.RemotePort == port {
				out = append(out, s)
			}
		}
		slices.SortFunc(out, func(a, b Socket) int { return int(a.Inode) - int(b.Inode) })
		return out
	}
	var proc, diag []Socket
	// Loopback delivers at once, but give the queues a moment to settle.
	require.Eventually(t, func() bool {
		p, err := Sockets("/proc", false)
		require.NoError(t, err)
		d, err := SocketsNetlink(false)
		require.NoError(t, err)
		proc, diag = ours(p), ours(d)
		return slices.ContainsFunc(diag, func(s Socket) bool { return s.RxQueueBytes == 3000 })
	}, 2*time.Second, 20*time.Millisecond)

	var timeWait int
	proc = slices.DeleteFunc(proc, func(s Socket) bool {
		if s.State == StateTimeWait {
			timeWait++
			return true
		}
		return false
	})
	assert.Equal(t, 1, timeWait, "the closed connection's TIME_WAIT end, in /proc only")
	assert.Equal(t, proc, diag)

	find := func(pred func(Socket) bool) Socket {
		i := slices.IndexFunc(diag, pred)
		require.GreaterOrEqual(t, i, 0, "%v", diag)
		return diag[i]
	}
	assert.Equal(t, 1, find(func(s Socket) bool { return s.State == StateListen }).AcceptQueue)
	assert.EqualValues(t, 1000, find(func(s Socket) bool {
		return s.LocalPort == port && s.RemotePort == c1.LocalAddr().(*net.TCPAddr).Port
	}).RxQueueBytes)
	assert.EqualValues(t, 3000, find(func(s Socket) bool { return s.LocalPort == c1.LocalAddr().(*net.TCPAddr).Port }).RxQueueBytes)
}

// TestParseDiagMsg decodes struct inet_diag_msg as include/uapi/linux/
// inet_diag.h lays it out: ports and addresses in network order.
func TestParseDiagMsg(t *testing.T) {
	msg := func(fam, state uint8, sport, dport uint16, src, dst []byte, rq, wq, inode uint32) []byte {
		b := make([]byte, sizeofDiagMsg)
		b[0], b[1] = fam, state
		binary.BigEndian.PutUint16(b[4:], sport)
		binary.BigEndian.PutUint16(b[6:], dport)
		copy(b[8:], src)
		copy(b[24:], dst)
		binary.NativeEndian.PutUint32(b[56:], rq)
		binary.NativeEndian.PutUint32(b[60:], wq)
		binary.NativeEndian.PutUint32(b[68:], inode)
		return b
	}
	lo4 := []byte{127, 0, 0, 1}
	got, err := parseDiagMsg(msg(unix.AF_INET, uint8(StateEstablished), 8000, 41668, lo4, lo4, 7, 0x4A000, 223457), map[addrKey]string{})
	require.NoError(t, err)
	assert.Equal(t, Socket{LocalIP: "127.0.0.1", LocalPort: 8000, RemoteIP: "127.0.0.1", RemotePort: 41668,
		State: StateEstablished, StateName: "ESTABLISHED", RxQueueBytes: 7, TxQueueBytes: 0x4A000, Inode: 223457}, got)

	got, err = parseDiagMsg(msg(unix.AF_INET, uint8(StateListen), 8000, 0, lo4, make([]byte, 4), 2, 2048, 223456), map[addrKey]string{})
	require.NoError(t, err)
	assert.Equal(t, Socket{LocalIP: "127.0.0.1", LocalPort: 8000, RemoteIP: "0.0.0.0",
		State: StateListen, StateName: "LISTEN", AcceptQueue: 2, Inode: 223456}, got, "a listener's wqueue is its backlog limit, not bytes")

	lo6 := net.IPv6loopback
	got, err = parseDiagMsg(msg(unix.AF_INET6, uint8(StateEstablished), 8080, 0xB3A2, lo6, lo6, 0, 256, 31337), map[addrKey]string{})
	require.NoError(t, err)
	assert.Equal(t, "::1", got.LocalIP)
	assert.EqualValues(t, 256, got.TxQueueBytes)

	_, err = parseDiagMsg(make([]byte, 40), map[addrKey]string{})
	assert.ErrorContains(t, err, "40 bytes")
}

// TestSampleSocketSource runs the sampler for one tick on the fixture proc
// tree: from /proc it reads the fixture's table, from netlink the real
// namespace's; an unknown source is refused before sampling.
func TestSampleSocketSource(t *testing.T) {
	stop := filepath.Join(t.TempDir(), "stop")
	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	spec := SamplerSpec{Interval: time.Millisecond, ProcRoot: probeProc, AppPort: 8000, StopFile: stop,
		Containers: map[string]string{"app": "none"}}

	spec.SocketSource = SourceProc
	s, err := Sample(context.Background(), spec)
	require.NoError(t, err)
	require.Len(t, s.Sockets, 1)
	assert.Equal(t, SourceProc, s.SocketSource)
	assert.EqualValues(t, 0x4A000, s.Sockets[0].Hops[HopAppToClient].SendQ, "the fixture's table")

	spec.SocketSource = ""
	s, err = Sample(context.Background(), spec)
	require.NoError(t, err)
	assert.Equal(t, SourceNetlink, s.SocketSource)
	assert.Empty(t, s.Errors)

	spec.SocketSource = "ss"
	_, err = Sample(context.Background(), spec)
	assert.ErrorContains(t, err, `SocketSource "ss": want "netlink" or "proc"`)
}

// A failed dump is tried once, recorded as the series' fallback (not as a
// sampling error, which would make the run unsound), and the series goes
// on from /proc.
func TestReadSocketsFallsBackToProc(t *testing.T) {
	spec := SamplerSpec{ProcRoot: probeProc}
	s := &Series{SocketSource: SourceNetlink}
	dumps := 0
	broken := func(bool) ([]Socket, error) {
		dumps++
		return nil, errors.New("probe: sock_diag dump of IPv4 TCP sockets: protocol not supported")
	}
	for range 2 {
		socks, err := readSockets(s, spec, broken)
		require.NoError(t, err)
		assert.Len(t, socks, 4, "the fixture's table")
	}
	assert.Equal(t, SourceProc, s.SocketSource)
	assert.Equal(t, 1, dumps, "the dump is tried once")
	assert.Equal(t, "probe: sock_diag dump of IPv4 TCP sockets: protocol not supported; reading /proc/net/tcp from here on", s.SocketFallback)
	assert.Empty(t, s.Errors)
}

// A sampler given ReadyAddr answers on it once it has sampled, and only
// until it ends.
func TestSampleAnswersOnReadyAddr(t *testing.T) {
	stop := filepath.Join(t.TempDir(), "stop")
	spec := SamplerSpec{Interval: 10 * time.Millisecond, ProcRoot: probeProc, AppPort: 8000, StopFile: stop,
		Containers: map[string]string{"app": "none"}, SocketSource: SourceProc,
		ReadyAddr: fmt.Sprintf("@wsgilab-probe-test-%d", time.Now().UnixNano())}
	done := make(chan Series, 1)
	go func() {
		s, err := Sample(context.Background(), spec)
		assert.NoError(t, err)
		done <- s
	}()
	var c net.Conn
	var answered int64
	require.Eventually(t, func() bool {
		var err error
		c, err = net.Dial("unix", spec.ReadyAddr)
		answered = time.Now().UnixNano()
		return err == nil
	}, 5*time.Second, time.Millisecond, "the sampler never answered on its ReadyAddr")
	c.Close()
	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	s := <-done
	require.NotEmpty(t, s.Sockets)
	assert.LessOrEqual(t, s.Sockets[0].DoneUnixNano, answered, "it answers only once its first sample is taken")
	_, err := net.Dial("unix", spec.ReadyAddr)
	assert.Error(t, err, "the address closes with the series")
}

// A Diag dumps on its own socket, again and again, what a fresh socket
// dumps; closed, it dumps nothing.
func TestDiagKeepsItsSocket(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	listens := func(socks []Socket) bool {
		return slices.ContainsFunc(socks, func(k Socket) bool { return k.LocalPort == port && k.State == StateListen })
	}
	d, err := NewDiag()
	require.NoError(t, err)
	for range 5 {
		socks, err := d.Sockets(false)
		require.NoError(t, err)
		assert.True(t, listens(socks), "the kept socket's dump lists the listener")
	}
	fresh, err := SocketsNetlink(false)
	require.NoError(t, err)
	assert.True(t, listens(fresh))
	d.Close()
	_, err = d.Sockets(false)
	assert.Error(t, err, "a closed Diag has no socket to dump on")
}
