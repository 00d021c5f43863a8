package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// SocketSource names how a probe reads the socket table.
type SocketSource string

// The two socket sources. Netlink is the default: /proc/net/tcp costs the
// kernel a walk of the whole established-socket hash at every read() of
// the file, whatever the namespace holds (3.5 ms a read with 262,144
// buckets here), where one sock_diag dump walks it once and formats only
// the states asked for (0.26 ms). Proc stays for a kernel without
// inet_diag and for fixture trees.
const (
	SourceNetlink SocketSource = "netlink"
	SourceProc    SocketSource = "proc"
)

// diagStates is every TCP state but TIME_WAIT: a TIME_WAIT socket holds no
// buffers, ClassifyHop leaves it out, and article B's load leaves
// thousands of them, which the kernel would otherwise format into a
// message each (2.1 ms a dump with 3,000 of them against 0.26 ms).
const diagStates = 0xfff &^ (1 << uint(StateTimeWait))

// Sizes from include/uapi/linux/inet_diag.h.
const (
	sizeofDiagReq = 56 // struct inet_diag_req_v2
	sizeofDiagMsg = 72 // struct inet_diag_msg
)

// diagRequest is a struct inet_diag_req_v2 for a dump: no socket id, no
// extensions (the queues are in the fixed message; tcp_info is not asked
// for), only the states in States.
type diagRequest struct {
	Family uint8
	States uint32
}

func (r diagRequest) Len() int { return sizeofDiagReq }

func (r diagRequest) Serialize() []byte {
	b := make([]byte, sizeofDiagReq)
	b[0], b[1] = r.Family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(b[4:], r.States)
	return b
}

// SocketsNetlink reads the TCP sockets of the caller's network namespace
// through NETLINK_SOCK_DIAG (the interface ss uses), IPv4 and, if ipv6,
// IPv6, leaving TIME_WAIT sockets out in the kernel. It opens a netlink
// socket for the one read; a sampler keeps one (Diag).
func SocketsNetlink(ipv6 bool) ([]Socket, error) {
	return (*Diag)(nil).Sockets(ipv6)
}

// Diag is a NETLINK_SOCK_DIAG socket kept open between dumps. Opening,
// binding and closing one for each dump was half of a sampler tick's
// dump: 230-270 us a dump against 120-130 us with the socket kept, in a
// fresh network namespace, 20 ms between dumps (so with cold caches, as
// at a 50 ms tick).
type Diag struct {
	sh *nl.SocketHandle
	// seen and addrs are kept between dumps: a dump of 20,000 sockets
	// that built its own set and formatted two addresses a socket made
	// megabytes of garbage a tick, which a sampler with its collector
	// held back cannot afford.
	seen  map[uint64]bool
	addrs map[addrKey]string
}

// addrKey is an address as a dump gives it, with its family.
type addrKey struct {
	family uint8
	a      [16]byte
}

// NewDiag opens the socket; Close closes it.
func NewDiag() (*Diag, error) {
	s, err := nl.Subscribe(unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("probe: opening a sock_diag netlink socket: %w", err)
	}
	// What the library sets on the sockets it opens for one request: no
	// read waits forever on a kernel that does not answer.
	if err := s.SetReceiveTimeout(&nl.SocketTimeoutTv); err != nil {
		s.Close()
		return nil, fmt.Errorf("probe: sock_diag netlink socket: %w", err)
	}
	return &Diag{sh: &nl.SocketHandle{Socket: s}}, nil
}

// Close closes the socket; a nil Diag has none.
func (d *Diag) Close() {
	if d != nil {
		d.sh.Close()
	}
}

// Sockets dumps the TCP sockets as SocketsNetlink does, on d's socket; a
// nil Diag opens one for the dump.
func (d *Diag) Sockets(ipv6 bool) ([]Socket, error) {
	families := []uint8{unix.AF_INET}
	if ipv6 {
		families = append(families, unix.AF_INET6)
	}
	var out []Socket
	seen, addrs := map[uint64]bool{}, map[addrKey]string{}
	if d != nil {
		if d.seen == nil {
			d.seen, d.addrs = map[uint64]bool{}, map[addrKey]string{}
		}
		clear(d.seen)
		seen, addrs = d.seen, d.addrs
	}
	for _, fam := range families {
		req := nl.NewNetlinkRequest(nl.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP)
		req.AddData(diagRequest{Family: fam, States: diagStates})
		if d != nil {
			// The library sends on a request's socket and numbers the
			// request from it.
			req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_INET_DIAG: d.sh}
		}
		var perr error
		err := req.ExecuteIter(unix.NETLINK_INET_DIAG, nl.SOCK_DIAG_BY_FAMILY, func(msg []byte) bool {
			s, err := parseDiagMsg(msg, addrs)
			if err != nil {
				perr = err
				return false
			}
			// A dump walks the hash while sockets come and go and can
			// list one twice, as /proc/net/tcp can: the inode names it.
			if s.Inode != 0 {
				if seen[s.Inode] {
					return true
				}
				seen[s.Inode] = true
			}
			out = append(out, s)
			return true
		})
		// An interrupted dump is what a /proc read is anyway: a walk of a
		// table that changes under it.
		if err != nil && !errors.Is(err, nl.ErrDumpInterrupted) {
			if fam == unix.AF_INET6 && errors.Is(err, unix.ENOENT) {
				continue // a kernel without IPv6
			}
			return nil, fmt.Errorf("probe: sock_diag dump of %s TCP sockets: %w", map[uint8]string{unix.AF_INET: "IPv4", unix.AF_INET6: "IPv6"}[fam], err)
		}
		if perr != nil {
			return nil, perr
		}
	}
	return out, nil
}

// parseDiagMsg decodes a struct inet_diag_msg: ports and addresses in
// network order, the rest in the host's. addrs caches the addresses'
// text (a pod's sockets share a handful of addresses).
func parseDiagMsg(b []byte, addrs map[addrKey]string) (Socket, error) {
	if len(b) < sizeofDiagMsg {
		return Socket{}, fmt.Errorf("probe: sock_diag message of %d bytes, want at least %d", len(b), sizeofDiagMsg)
	}
	addr := func(a []byte) string {
		k := addrKey{family: b[0], a: [16]byte(a)}
		if t, ok := addrs[k]; ok {
			return t
		}
		t := netip.AddrFrom4([4]byte(a[:4])).String()
		if b[0] == unix.AF_INET6 {
			t = netip.AddrFrom16([16]byte(a)).String()
		}
		addrs[k] = t
		return t
	}
	st := TCPState(b[1])
	s := Socket{
		LocalPort:  int(binary.BigEndian.Uint16(b[4:])),
		RemotePort: int(binary.BigEndian.Uint16(b[6:])),
		LocalIP:    addr(b[8:24]),
		RemoteIP:   addr(b[24:40]),
		State:      st,
		StateName:  st.String(),
		Inode:      uint64(binary.NativeEndian.Uint32(b[68:])),
	}
	rq, wq := binary.NativeEndian.Uint32(b[56:]), binary.NativeEndian.Uint32(b[60:])
	if st == StateListen {
		// On a LISTEN socket the kernel gives the accept queue and its
		// limit (sk_max_ack_backlog), as /proc/net/tcp gives the first.
		s.AcceptQueue = int(rq)
	} else {
		s.RxQueueBytes, s.TxQueueBytes = int64(rq), int64(wq)
	}
	return s, nil
}
