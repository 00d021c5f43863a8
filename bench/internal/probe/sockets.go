package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/prometheus/procfs"
)

// TCPState is the kernel's TCP state number (include/net/tcp_states.h).
type TCPState uint8

// The states /proc/net/tcp shows.
const (
	StateEstablished TCPState = 1
	StateSynSent     TCPState = 2
	StateSynRecv     TCPState = 3
	StateFinWait1    TCPState = 4
	StateFinWait2    TCPState = 5
	StateTimeWait    TCPState = 6
	StateClose       TCPState = 7
	StateCloseWait   TCPState = 8
	StateLastAck     TCPState = 9
	StateListen      TCPState = 10
	StateClosing     TCPState = 11
	StateNewSynRecv  TCPState = 12
)

var tcpStateNames = [...]string{
	StateEstablished: "ESTABLISHED",
	StateSynSent:     "SYN_SENT",
	StateSynRecv:     "SYN_RECV",
	StateFinWait1:    "FIN_WAIT1",
	StateFinWait2:    "FIN_WAIT2",
	StateTimeWait:    "TIME_WAIT",
	StateClose:       "CLOSE",
	StateCloseWait:   "CLOSE_WAIT",
	StateLastAck:     "LAST_ACK",
	StateListen:      "LISTEN",
	StateClosing:     "CLOSING",
	StateNewSynRecv:  "NEW_SYN_RECV",
}

func (s TCPState) String() string {
	if int(s) < len(tcpStateNames) && tcpStateNames[s] != "" {
		return tcpStateNames[s]
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint8(s))
}

// Socket is one line of /proc/net/tcp or tcp6.
type Socket struct {
	LocalIP    string   `json:"local_ip"`
	LocalPort  int      `json:"local_port"`
	RemoteIP   string   `json:"remote_ip"`
	RemotePort int      `json:"remote_port"`
	State      TCPState `json:"state"`
	StateName  string   `json:"state_name"`
	// TxQueueBytes is Send-Q: bytes written but not yet acknowledged.
	TxQueueBytes int64 `json:"tx_queue_bytes"`
	// RxQueueBytes is Recv-Q: bytes received but not yet read. Zero on a
	// LISTEN socket, whose rx_queue column is AcceptQueue instead.
	RxQueueBytes int64 `json:"rx_queue_bytes"`
	// AcceptQueue is, on a LISTEN socket, the connections waiting for
	// accept(): the kernel reports them in the rx_queue column.
	AcceptQueue int    `json:"accept_queue"`
	Inode       uint64 `json:"inode"`
}

// Sockets reads the TCP sockets of the network namespace procRoot belongs
// to: <procRoot>/net/tcp, and tcp6 (when present) if ipv6. Each file costs
// the kernel a walk of the whole established-socket hash at every read(),
// whatever the namespace holds (about 3.5 ms with 262,144 buckets here);
// the sampler dumps through sock_diag instead (Diag) and keeps this one for a kernel
// without sock_diag and for fixture trees.
func Sockets(procRoot string, ipv6 bool) ([]Socket, error) {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	v4, err := pfs.NetTCP()
	if err != nil {
		return nil, fileErr(filepath.Join(procRoot, "net/tcp"), err)
	}
	var v6 procfs.NetTCP
	if ipv6 {
		// A kernel without IPv6 has no tcp6.
		v6, err = pfs.NetTCP6()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fileErr(filepath.Join(procRoot, "net/tcp6"), err)
		}
	}
	out := make([]Socket, 0, len(v4)+len(v6))
	// The kernel walks its socket hash while sockets come and go, and can
	// list one twice (seen: an established socket twice in one read, which
	// doubled a download's queued bytes); a socket's inode names it once.
	// TIME_WAIT sockets have no inode, and no queues.
	seen := map[uint64]bool{}
	for _, l := range append(v4, v6...) {
		if l.Inode != 0 {
			if seen[l.Inode] {
				continue
			}
			seen[l.Inode] = true
		}
		s := Socket{
			LocalIP:      l.LocalAddr.String(),
			LocalPort:    int(l.LocalPort),
			RemoteIP:     l.RemAddr.String(),
			RemotePort:   int(l.RemPort),
			State:        TCPState(l.St),
			StateName:    TCPState(l.St).String(),
			TxQueueBytes: int64(l.TxQueue),
			RxQueueBytes: int64(l.RxQueue),
			Inode:        l.Inode,
		}
		if s.State == StateListen {
			s.AcceptQueue, s.RxQueueBytes = int(l.RxQueue), 0
		}
		out = append(out, s)
	}
	return out, nil
}

// Hop names which end of which connection on the request path a socket is:
// "x->y" is x's end of its connection to y, "client<-x" the client's end of
// its connection to x.
type Hop string

// The hops of the lab's paths: client -> app, or client -> NGINX -> app.
const (
	HopAppToClient     Hop = "app->client"
	HopAppToNginx      Hop = "app->nginx"
	HopNginxToApp      Hop = "nginx->app"
	HopNginxToClient   Hop = "nginx->client"
	HopClientFromApp   Hop = "client<-app"
	HopClientFromNginx Hop = "client<-nginx"
	HopListen          Hop = "listen"
)

// ClassifyHop names the hop s is an end of, from its ports: the app listens
// on appPort, NGINX (when proxyPort is not 0) on proxyPort. "" for other
// sockets and for TIME_WAIT ones, which hold no buffers and would count
// finished requests as connections.
func ClassifyHop(s Socket, appPort, proxyPort int) Hop {
	proxied := proxyPort != 0
	switch {
	case s.State == StateListen:
		return HopListen
	case s.State == StateTimeWait:
		return ""
	case appPort != 0 && s.LocalPort == appPort:
		if proxied {
			return HopAppToNginx
		}
		return HopAppToClient
	case appPort != 0 && s.RemotePort == appPort:
		if proxied {
			return HopNginxToApp
		}
		return HopClientFromApp
	case proxied && s.LocalPort == proxyPort:
		return HopNginxToClient
	case proxied && s.RemotePort == proxyPort:
		return HopClientFromNginx
	}
	return ""
}

// QueueBytes sums the queues of a hop's sockets.
type QueueBytes struct {
	SendQ int64 `json:"send_q_bytes"`
	RecvQ int64 `json:"recv_q_bytes"`
	Conns int   `json:"conns"`
	// AcceptQueue sums LISTEN sockets' waiting connections.
	AcceptQueue int `json:"accept_queue"`
}

// SumByHop sums the queues of sockets per hop (see ClassifyHop); sockets of
// no hop are left out.
func SumByHop(sockets []Socket, appPort, proxyPort int) map[Hop]QueueBytes {
	out := map[Hop]QueueBytes{}
	for _, s := range sockets {
		h := ClassifyHop(s, appPort, proxyPort)
		if h == "" {
			continue
		}
		q := out[h]
		q.SendQ += s.TxQueueBytes
		q.RecvQ += s.RxQueueBytes
		q.Conns++
		q.AcceptQueue += s.AcceptQueue
		out[h] = q
	}
	return out
}
