package probe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const probeProc = "../../../fixtures/probe/proc"

func TestSockets(t *testing.T) {
	// The fixture has no tcp6, as on a kernel without IPv6.
	got, err := Sockets(probeProc, true)
	require.NoError(t, err)
	assert.Equal(t, []Socket{
		{LocalIP: "127.0.0.1", LocalPort: 8000, RemoteIP: "0.0.0.0", RemotePort: 0,
			State: StateListen, StateName: "LISTEN", AcceptQueue: 2, Inode: 223456},
		{LocalIP: "127.0.0.1", LocalPort: 8000, RemoteIP: "127.0.0.1", RemotePort: 41668,
			State: StateEstablished, StateName: "ESTABLISHED", TxQueueBytes: 0x4A000, Inode: 223457},
		{LocalIP: "127.0.0.1", LocalPort: 41668, RemoteIP: "127.0.0.1", RemotePort: 8000,
			State: StateEstablished, StateName: "ESTABLISHED", RxQueueBytes: 7500, Inode: 223458},
		{LocalIP: "127.0.0.1", LocalPort: 8000, RemoteIP: "127.0.0.1", RemotePort: 41650,
			State: StateTimeWait, StateName: "TIME_WAIT"},
	}, got)
}

func TestSocketsReadsTCP6(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "net"), 0o755))
	tcp, err := os.ReadFile(filepath.Join(probeProc, "net/tcp"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "net/tcp"), tcp, 0o644))
	tcp6 := "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:B3A2 01 00000100:00000000 00:00000000 00000000   101        0 31337 1 0000000000000000 20 4 30 10 -1\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "net/tcp6"), []byte(tcp6), 0o644))

	got, err := Sockets(root, true)
	require.NoError(t, err)
	require.Len(t, got, 5)
	assert.Equal(t, Socket{LocalIP: "::1", LocalPort: 8080, RemoteIP: "::1", RemotePort: 0xB3A2,
		State: StateEstablished, StateName: "ESTABLISHED", TxQueueBytes: 256, Inode: 31337}, got[4])
}

func TestSocketsNamesMissingFile(t *testing.T) {
	_, err := Sockets(t.TempDir(), true)
	assert.ErrorContains(t, err, "net/tcp")
}

func TestClassifyHop(t *testing.T) {
	const app, proxy = 8000, 8080
	est := func(local, remote int) Socket {
		return Socket{LocalPort: local, RemotePort: remote, State: StateEstablished}
	}
	cases := []struct {
		s         Socket
		proxyPort int
		want      Hop
	}{
		{est(app, 41668), 0, HopAppToClient},
		{est(41668, app), 0, HopClientFromApp},
		{est(app, 41668), proxy, HopAppToNginx},
		{est(41668, app), proxy, HopNginxToApp},
		{est(proxy, 50000), proxy, HopNginxToClient},
		{est(50000, proxy), proxy, HopClientFromNginx},
		{est(proxy, 50000), 0, ""}, // no proxy on the path: 8080 means nothing
		{est(22, 50000), proxy, ""},
		{Socket{LocalPort: app, State: StateListen}, proxy, HopListen},
		{Socket{LocalPort: app, RemotePort: 41650, State: StateTimeWait}, 0, ""},
		// A closing socket still holds what the app wrote before close().
		{Socket{LocalPort: app, RemotePort: 41668, State: StateFinWait1}, 0, HopAppToClient},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ClassifyHop(c.s, app, c.proxyPort), "%+v proxy %d", c.s, c.proxyPort)
	}
}

func TestSumByHop(t *testing.T) {
	socks, err := Sockets(probeProc, true)
	require.NoError(t, err)
	extra := Socket{LocalPort: 8000, RemotePort: 41700, State: StateEstablished, TxQueueBytes: 1000}
	got := SumByHop(append(socks, extra), 8000, 0)
	assert.Equal(t, map[Hop]QueueBytes{
		HopListen:        {Conns: 1, AcceptQueue: 2},
		HopAppToClient:   {SendQ: 0x4A000 + 1000, Conns: 2},
		HopClientFromApp: {RecvQ: 7500, Conns: 1},
	}, got)
}

func TestTCPStateString(t *testing.T) {
	assert.Equal(t, "CLOSE_WAIT", StateCloseWait.String())
	assert.Equal(t, "UNKNOWN(0)", TCPState(0).String())
	assert.Equal(t, "UNKNOWN(99)", TCPState(99).String())
}

// A socket the kernel lists twice in one read (its hash walk raced a
// change) is counted once: the inode names it.
func TestSocketsListedTwiceCountOnce(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "net"), 0o755))
	tcp, err := os.ReadFile(filepath.Join(probeProc, "net/tcp"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(tcp), "\n")
	dup := strings.Replace(lines[2], lines[2][:strings.Index(lines[2], ":")], "  99", 1) // the established app socket again
	require.NoError(t, os.WriteFile(filepath.Join(root, "net/tcp"), []byte(string(tcp)+dup), 0o644))
	got, err := Sockets(root, false)
	require.NoError(t, err)
	want, err := Sockets(probeProc, false)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
