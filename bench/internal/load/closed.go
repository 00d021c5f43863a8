package load

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/stats"
)

// DefaultClosedTimeout is ab's default per-request timeout (-s 30).
const DefaultClosedTimeout = 30 * time.Second

// ClosedSpec is a closed-loop load with Apache Bench's semantics: N
// requests in all, C at a time, each on a new connection (HTTP/1.0, no
// keep-alive), and a failed request does not stop the run (ab -r).
type ClosedSpec struct {
	URL     string        `json:"url"`
	N       int           `json:"n"`
	C       int           `json:"c"`
	Timeout time.Duration `json:"timeout_ns"`
	// Burn is a test knob of our generator alone: it spins this long on
	// the CPU per request, so the generator, not the server, becomes the
	// bottleneck. It exists to show that the cross-check against ab
	// catches a slowed generator; no measurement sets it. At most MaxBurn.
	Burn time.Duration `json:"burn_ns,omitempty"`
}

// MaxBurn bounds ClosedSpec.Burn.
const MaxBurn = 100 * time.Millisecond

// Validate names the first malformed field.
func (s ClosedSpec) Validate() error {
	if p, err := url.Parse(s.URL); err != nil || p.Scheme != "http" || p.Host == "" {
		return fmt.Errorf("load: %q is not an http:// URL", s.URL)
	}
	if s.N < 1 || s.C < 1 || s.C > s.N {
		return fmt.Errorf("load: want 1 <= C <= N, have N=%d C=%d", s.N, s.C)
	}
	if s.Timeout <= 0 {
		return errors.New("load: Timeout must be positive")
	}
	if s.Burn < 0 || s.Burn > MaxBurn {
		return fmt.Errorf("load: Burn %v: want 0 to %v", s.Burn, MaxBurn)
	}
	return nil
}

// Failure kinds, as ab counts them.
const (
	FailConnect = "connect"
	FailReceive = "receive"
	// FailLength is a body whose length differs from the first good
	// response's, ab's "Length" failure.
	FailLength = "length"
	FailNon2xx = "non-2xx"
)

// ClosedResult is what a closed-loop run measured.
type ClosedResult struct {
	Spec      ClosedSpec     `json:"spec"`
	Total     time.Duration  `json:"total_ns"`
	Completed int            `json:"completed"`
	Failed    int            `json:"failed"`
	FailedBy  map[string]int `json:"failed_by"`
	// ReqPerS is completed requests per second of Total, ab's figure.
	ReqPerS   float64         `json:"req_per_s"`
	Latencies stats.Latencies `json:"latencies"`
	// CPU is the generator's own CPU time, user plus system, from the
	// start of its loop.
	CPU time.Duration `json:"cpu_ns"`
}

// Closed runs spec as ab does: one goroutine and one epoll set, C
// connections in flight, each slot starting the next of the N requests as
// soon as its last one ended. Sockets are raw non-blocking descriptors:
// socket, connect, write, read until the server's close, close, and one
// edge-triggered epoll registration each (a close removes it). Go's net
// package, which the loop used before, adds a goroutine switch per wait,
// getsockname and getpeername per connection, and a timer and a context
// per request: 87-92 us of CPU a request against ab's 62-65 us, measured
// against NGINX on one core.
func Closed(ctx context.Context, spec ClosedSpec) (ClosedResult, error) {
	if err := spec.Validate(); err != nil {
		return ClosedResult{}, err
	}
	u, _ := url.Parse(spec.URL)
	port := u.Port()
	if port == "" {
		port = "80"
	}
	addr, err := net.ResolveTCPAddr("tcp4", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return ClosedResult{}, fmt.Errorf("load: %w", err)
	}
	sa, err := sockaddr4(addr)
	if err != nil {
		return ClosedResult{}, err
	}
	req := []byte("GET " + u.RequestURI() + " HTTP/1.0\r\nHost: " + u.Host + "\r\nUser-Agent: labagent\r\nAccept: */*\r\n\r\n")

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return ClosedResult{}, fmt.Errorf("load: epoll_create1: %w", err)
	}
	// The epoll set is itself a pollable descriptor: when nothing is
	// ready, the loop parks on it in the runtime's poller (see wait).
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return ClosedResult{}, fmt.Errorf("load: epoll set: %w", err)
	}
	epf := os.NewFile(uintptr(ep), "epoll")
	defer epf.Close()
	epc, err := epf.SyscallConn()
	if err != nil {
		return ClosedResult{}, fmt.Errorf("load: epoll set: %w", err)
	}

	// The generator's CPU is counted from here. The process's rusage
	// also holds what ran as this PID before it: under docker exec,
	// runc's own setup, 15-23 ms measured here (5 ms for the same run
	// started by nsenter), which is not the generator's work; ab's CPU is
	// its own process's, started by labagent.
	cpu0 := probe.SelfCPU()
	l := closedLoop{spec: spec, req: req, sa: sa, ep: ep, epf: epf, epc: epc, wantLen: -1,
		res: ClosedResult{Spec: spec, FailedBy: map[string]int{}}, byFD: map[int]*closedConn{}}
	start := time.Now()
	for range spec.C {
		l.startNext()
	}
	events := make([]unix.EpollEvent, spec.C)
	l.nextCheck = start
	for len(l.byFD) > 0 {
		// Deadlines and the context are looked at when the nearest
		// deadline comes, and at least every maxWait, not at each wake-up:
		// a walk of the C requests at each wake-up took 4 % of the loop's
		// CPU. The wait lasts until then, so an idle loop (a server taking
		// 100 ms a request) wakes 10 times a second, not 100.
		now := time.Now()
		if !now.Before(l.nextCheck) {
			if err := ctx.Err(); err != nil {
				l.closeAll()
				return ClosedResult{}, err
			}
			l.nextCheck = now.Add(maxWait)
			if nearest := l.expire(now); !nearest.IsZero() && nearest.Before(l.nextCheck) {
				l.nextCheck = nearest
			}
			if len(l.byFD) == 0 {
				break
			}
		}
		n, err := l.wait(events, l.nextCheck.Sub(now))
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.closeAll()
			return ClosedResult{}, fmt.Errorf("load: epoll_wait: %w", err)
		}
		for _, ev := range events[:max(n, 0)] {
			if c := l.byFD[int(ev.Fd)]; c != nil {
				l.step(c, ev.Events)
			}
		}
	}
	l.res.Total = time.Since(start)
	l.res.CPU = probe.SelfCPU() - cpu0
	l.lat.Close()
	l.res.Latencies = l.lat
	l.res.ReqPerS = float64(l.res.Completed) / l.res.Total.Seconds()
	return l.res, nil
}

// closedConn is one slot's request in flight.
type closedConn struct {
	fd               int
	began, deadline  time.Time
	connected        bool
	total, headerEnd int64
	status           int
	buf              []byte
}

// closedLoop is Closed's state: the requests started so far and those in
// flight by descriptor.
type closedLoop struct {
	spec    ClosedSpec
	req     []byte
	sa      *unix.RawSockaddrInet4
	ep      int
	started int
	wantLen int64
	byFD    map[int]*closedConn
	free    []*closedConn
	res     ClosedResult
	lat     stats.Latencies
	// nextCheck is when deadlines and the context are next looked at.
	nextCheck time.Time
	// epf and epc are the epoll set ep as a file of the runtime's poller.
	epf *os.File
	epc syscall.RawConn
}

// startNext starts the next request, if any is left; one that cannot
// even start is counted as a failed connect, as ab counts it, and the
// slot takes the one after.
func (l *closedLoop) startNext() {
	for l.started < l.spec.N {
		l.started++
		began := time.Now()
		for l.spec.Burn > 0 && time.Since(began) < l.spec.Burn {
		}
		fd, err := rawSocket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == nil {
			err = rawConnect(fd, l.sa)
			if errors.Is(err, unix.EINPROGRESS) {
				err = nil
			}
			if err == nil {
				err = rawEpollAdd(l.ep, fd, unix.EPOLLIN|unix.EPOLLOUT|unix.EPOLLRDHUP|unix.EPOLLET)
			}
			if err != nil {
				rawClose(fd)
			}
		}
		if err != nil {
			l.finish(nil, FailConnect, began)
			continue
		}
		var c *closedConn
		if k := len(l.free); k > 0 {
			c, l.free = l.free[k-1], l.free[:k-1]
			*c = closedConn{buf: c.buf}
		} else {
			c = &closedConn{buf: make([]byte, 32<<10)}
		}
		c.fd, c.began, c.deadline, c.headerEnd = fd, began, began.Add(l.spec.Timeout), -1
		l.byFD[fd] = c
		if c.deadline.Before(l.nextCheck) {
			l.nextCheck = c.deadline
		}
		return
	}
}

// step moves c on after an event: the connect's outcome and the write
// once writable, then reads until the socket has nothing more.
func (l *closedLoop) step(c *closedConn, ev uint32) {
	if !c.connected {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		if soErr, err := rawSoError(c.fd); err != nil || soErr != 0 {
			l.end(c, FailConnect)
			return
		}
		c.connected = true
		// The request is a few hundred bytes: an empty socket buffer
		// takes it whole, so a short write never happens here; if it
		// did, it would count as a receive failure (ab would write the
		// rest).
		if n, err := rawWrite(c.fd, l.req); err != nil || n != len(l.req) {
			l.end(c, FailReceive)
			return
		}
		if ev&unix.EPOLLIN == 0 {
			return // the answer's first bytes will come as an edge
		}
	}
	for {
		off := min(c.total, int64(len(c.buf)/2))
		space := c.buf[off:]
		n, err := rawRead(c.fd, space)
		if errors.Is(err, unix.EAGAIN) {
			return // edge-triggered: the next event says when there is more
		}
		if err != nil {
			l.end(c, FailReceive)
			return
		}
		if n == 0 {
			l.end(c, c.verdict(&l.wantLen))
			return
		}
		if c.headerEnd < 0 {
			// The header fits in the buffer's first half, so it is parsed in
			// place; a body beyond it is only counted.
			head := c.buf[:min(c.total+int64(n), int64(len(c.buf)))]
			if i := bytes.Index(head, []byte("\r\n\r\n")); i >= 0 {
				c.headerEnd = int64(i) + 4
				c.status = parseStatus(head)
			}
		}
		c.total += int64(n)
		if n < len(space) {
			// A short read emptied the queue. If the peer had closed (a
			// FIN, no error) when the event came, that was all of it: no
			// read for the EOF. A reset (EPOLLERR) is read to its error,
			// a receive failure, as ab counts it. Else the next edge
			// comes with more data or the close: no read for EAGAIN.
			if ev&unix.EPOLLERR != 0 {
				continue
			}
			if ev&unix.EPOLLRDHUP != 0 {
				l.end(c, c.verdict(&l.wantLen))
			}
			return
		}
	}
}

// verdict is a finished answer's failure kind, "" when good: ab's
// counting (a non-2xx status; a body whose length differs from the first
// good one's).
func (c *closedConn) verdict(wantLen *int64) string {
	if c.headerEnd < 0 || c.status == 0 {
		return FailReceive
	}
	if c.status < 200 || c.status > 299 {
		return FailNon2xx
	}
	body := c.total - c.headerEnd
	if *wantLen == -1 {
		*wantLen = body
	}
	if *wantLen != body {
		return FailLength
	}
	return ""
}

// end closes c, counts its request and starts the slot's next one.
func (l *closedLoop) end(c *closedConn, kind string) {
	rawClose(c.fd)
	delete(l.byFD, c.fd)
	l.free = append(l.free, c)
	l.finish(c, kind, c.began)
	l.startNext()
}

// finish counts one request, c nil when it never got a socket.
func (l *closedLoop) finish(c *closedConn, kind string, began time.Time) {
	l.res.Completed++
	if kind != "" {
		l.res.Failed++
		l.res.FailedBy[kind]++
		return
	}
	l.lat.Add(time.Since(began))
}

// wait waits up to timeout for events. It first takes those ready now,
// without blocking (a raw epoll_pwait with no timeout); only when none is
// does it park the goroutine on the epoll set in the runtime's poller
// until the set is readable or the timeout passes. A blocking epoll_pwait
// through the runtime's syscall path would instead hand the P to another
// thread and back around each wait: about 20 futex and nanosleep calls a
// wait, 9 ms of CPU a second for a loop waiting on a server that answers
// 10 times a second (920 us a request, against ab's 250 us).
func (l *closedLoop) wait(events []unix.EpollEvent, timeout time.Duration) (int, error) {
	if n, err := rawEpollPoll(l.ep, events); err != nil || n > 0 {
		return n, err
	}
	if err := l.epf.SetReadDeadline(time.Now().Add(max(timeout, 0))); err != nil {
		return 0, err
	}
	var n int
	var perr error
	err := l.epc.Read(func(uintptr) bool {
		n, perr = rawEpollPoll(l.ep, events)
		return perr != nil || n > 0
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err == nil {
		err = perr
	}
	return n, err
}

// maxWait bounds a wait for events, and so how late a cancelled context
// is seen.
const maxWait = 100 * time.Millisecond

// expire fails the requests past their deadline, a receive failure (a
// connect failure if it never connected), and returns the nearest
// deadline of those left (zero if none is). ab's -s is a timeout too, but
// ab ends the whole run when it expires; here the run goes on, as -r
// would want.
func (l *closedLoop) expire(now time.Time) time.Time {
	var nearest time.Time
	for _, c := range l.byFD {
		switch {
		case now.After(c.deadline) && c.connected:
			l.end(c, FailReceive)
		case now.After(c.deadline):
			l.end(c, FailConnect)
		case nearest.IsZero() || c.deadline.Before(nearest):
			nearest = c.deadline
		}
	}
	return nearest
}

func (l *closedLoop) closeAll() {
	for fd := range l.byFD {
		unix.Close(fd)
	}
	clear(l.byFD)
}

// sockaddr4 is addr as a raw IPv4 socket address: the lab's pods talk
// IPv4 on 127.0.0.1.
func sockaddr4(addr *net.TCPAddr) (*unix.RawSockaddrInet4, error) {
	ip4 := addr.IP.To4()
	if ip4 == nil {
		return nil, fmt.Errorf("load: %v: the closed loop dials IPv4 addresses only", addr)
	}
	sa := &unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: [4]byte(ip4)}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], uint16(addr.Port))
	return sa, nil
}

// parseStatus reads the code of an "HTTP/1.x NNN ..." status line, 0 if
// there is none.
func parseStatus(b []byte) int {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 || len(b) < sp+4 || !bytes.HasPrefix(b, []byte("HTTP/")) {
		return 0
	}
	code, err := strconv.Atoi(string(b[sp+1 : sp+4]))
	if err != nil {
		return 0
	}
	return code
}
