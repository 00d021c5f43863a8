package probe

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// WaitState is what a thread is doing, as far as the lab cares.
type WaitState string

const (
	// WaitSend is blocked sending on a socket whose send buffer is full:
	// a worker held by a slow client.
	WaitSend WaitState = "send"
	// WaitIdle is waiting for work: accept or a poll/select/epoll loop.
	WaitIdle    WaitState = "idle"
	WaitRunning WaitState = "running"
	WaitOther   WaitState = "other"
)

// Wait is one thread's sample.
type Wait struct {
	PID  int    `json:"pid"`
	TID  int    `json:"tid"`
	Comm string `json:"comm"`
	// Wchan is the kernel function the thread sleeps in, "" when running
	// or unknown.
	Wchan string `json:"wchan"`
	// Syscall is the number of the syscall the thread is in, -1 when it is
	// running or blocked outside a syscall.
	Syscall     int       `json:"syscall"`
	SyscallName string    `json:"syscall_name,omitempty"`
	State       WaitState `json:"state"`
}

// syscallNames are the numbers the lab names, per GOARCH: the sends and
// waits it classifies, plus common blockers worth a name in reports.
var syscallNames = map[string]map[int]string{
	"amd64": {
		0: "read", 1: "write", 7: "poll", 20: "writev", 23: "select",
		35: "nanosleep", 40: "sendfile", 43: "accept", 44: "sendto",
		45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4",
		202: "futex", 230: "clock_nanosleep", 232: "epoll_wait",
		270: "pselect6", 271: "ppoll", 281: "epoll_pwait", 288: "accept4",
		441: "epoll_pwait2",
	},
	// arm64 has no poll, select, epoll_wait: libc uses the p* variants.
	"arm64": {
		22: "epoll_pwait", 63: "read", 64: "write", 66: "writev",
		71: "sendfile", 72: "pselect6", 73: "ppoll", 98: "futex",
		101: "nanosleep", 115: "clock_nanosleep", 202: "accept",
		206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg",
		242: "accept4", 260: "wait4", 441: "epoll_pwait2",
	},
}

var (
	sendSyscalls = []string{"write", "writev", "sendto", "sendmsg", "sendfile"}
	idleSyscalls = []string{
		"accept", "accept4", "poll", "ppoll", "select", "pselect6",
		"epoll_wait", "epoll_pwait", "epoll_pwait2",
	}
	// socketWchans are where a send sleeps for send-buffer space: TCP waits
	// in sk_stream_wait_memory via wait_woken, Unix sockets in
	// sock_alloc_send_pskb.
	socketWchans = []string{
		"wait_woken", "sk_stream_wait_memory", "sock_alloc_send_pskb", "sock_wait_for_wmem",
	}
)

// Waits samples every thread of pids: its wait channel and current syscall.
// A pid or thread that exits meanwhile is skipped. Reading another
// process's syscall file needs ptrace access (CAP_SYS_PTRACE).
func Waits(procRoot string, pids []int) ([]Wait, error) {
	return readWaits(procRoot, pids, syscallNames[runtime.GOARCH])
}

// readWaits takes the syscall table so tests read x86_64 fixtures anywhere.
func readWaits(procRoot string, pids []int, names map[int]string) ([]Wait, error) {
	return (*files)(nil).waits(procRoot, pids, names)
}

// waits reads where pids' threads wait through f.
func (f *files) waits(procRoot string, pids []int, names map[int]string) ([]Wait, error) {
	out := []Wait{}
	for _, pid := range pids {
		task := filepath.Join(procRoot, strconv.Itoa(pid), "task")
		tids, err := f.threads(task)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, fileErr(task, err)
		}
		for _, tid := range tids {
			w, err := f.wait(procRoot, pid, tid, names)
			if gone(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *files) wait(procRoot string, pid, tid int, names map[int]string) (Wait, error) {
	w := Wait{PID: pid, TID: tid}
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "task", strconv.Itoa(tid))
	var err error
	if w.Comm, err = f.threadName(dir); err != nil {
		return w, err
	}
	b, err := f.read(filepath.Join(dir, "wchan"))
	if err != nil {
		return w, fileErr(filepath.Join(dir, "wchan"), err)
	}
	// The kernel writes no newline and "0" for no wait channel; tolerate
	// both in hand-made trees.
	if w.Wchan = strings.TrimSpace(string(b)); w.Wchan == "0" {
		w.Wchan = ""
	}
	// procfs has no reader for syscall.
	b, err = f.read(filepath.Join(dir, "syscall"))
	if err != nil {
		return w, fileErr(filepath.Join(dir, "syscall"), err)
	}
	nr, running, err := parseSyscall(string(b))
	if err != nil {
		return w, fileErr(filepath.Join(dir, "syscall"), err)
	}
	w.Syscall, w.SyscallName = nr, names[nr]
	w.State = classifyWait(w.SyscallName, running, w.Wchan)
	return w, nil
}

// parseSyscall reads /proc/<pid>/task/<tid>/syscall: "running", or the
// syscall number then its arguments, stack and program counter, or "-1"
// then stack and program counter when blocked outside a syscall.
func parseSyscall(s string) (nr int, running bool, err error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, false, fmt.Errorf("empty syscall file")
	}
	if f[0] == "running" {
		return -1, true, nil
	}
	nr, err = strconv.Atoi(f[0])
	if err != nil || nr < -1 {
		return 0, false, fmt.Errorf("syscall %q is not a number, -1 or running", f[0])
	}
	return nr, false, nil
}

func classifyWait(syscallName string, running bool, wchan string) WaitState {
	switch {
	case running:
		return WaitRunning
	case slices.Contains(sendSyscalls, syscallName) && slices.Contains(socketWchans, wchan):
		return WaitSend
	case slices.Contains(idleSyscalls, syscallName):
		return WaitIdle
	}
	return WaitOther
}

// Process is one process of the PID namespace.
type Process struct {
	PID int `json:"pid"`
	// PPID tells a Gunicorn or NGINX master from its workers.
	PPID    int    `json:"ppid"`
	Comm    string `json:"comm"`
	Cmdline string `json:"cmdline"`
}

// Processes lists the processes under procRoot whose comm and cmdline
// (arguments joined by spaces) match, by pid; nil matches all. A process
// that exits meanwhile is skipped.
func Processes(procRoot string, match func(comm, cmdline string) bool) ([]Process, error) {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil, fileErr(procRoot, err)
	}
	out := []Process{}
	for _, p := range procs {
		pr, err := readProcess(procRoot, p, match)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if pr != nil {
			out = append(out, *pr)
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out, nil
}

// readProcess returns nil when p does not match.
func readProcess(procRoot string, p procfs.Proc, match func(comm, cmdline string) bool) (*Process, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(p.PID))
	comm, err := p.Comm()
	if err != nil {
		return nil, fileErr(filepath.Join(dir, "comm"), err)
	}
	args, err := p.CmdLine()
	if err != nil {
		return nil, fileErr(filepath.Join(dir, "cmdline"), err)
	}
	cmdline := strings.Join(args, " ")
	if match != nil && !match(comm, cmdline) {
		return nil, nil
	}
	st, err := p.Stat()
	if err != nil {
		return nil, fileErr(filepath.Join(dir, "stat"), err)
	}
	return &Process{PID: p.PID, PPID: st.PPID, Comm: comm, Cmdline: cmdline}, nil
}
