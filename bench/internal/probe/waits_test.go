package probe

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture's syscall numbers are x86_64's.
var amd64Syscalls = syscallNames["amd64"]

func TestWaits(t *testing.T) {
	got, err := readWaits(probeProc, []int{100, 101, 102, 201, 999}, amd64Syscalls)
	require.NoError(t, err, "pid 999 does not exist and is skipped")
	assert.Equal(t, []Wait{
		{PID: 100, TID: 100, Comm: "gunicorn", Wchan: "do_select", Syscall: 23, SyscallName: "select", State: WaitIdle},
		{PID: 101, TID: 101, Comm: "gunicorn", Wchan: "wait_woken", Syscall: 44, SyscallName: "sendto", State: WaitSend},
		{PID: 102, TID: 102, Comm: "gunicorn", Wchan: "wait_woken", Syscall: 44, SyscallName: "sendto", State: WaitSend},
		{PID: 201, TID: 201, Comm: "nginx", Wchan: "ep_poll", Syscall: 232, SyscallName: "epoll_wait", State: WaitIdle},
		{PID: 201, TID: 205, Comm: "nginx", Syscall: -1, State: WaitRunning},
		{PID: 201, TID: 206, Comm: "nginx", Wchan: "futex_wait_queue", Syscall: 202, SyscallName: "futex", State: WaitOther},
	}, got)
}

// On the real /proc, a thread reading its own syscall file sees itself
// in read().
func TestWaitsRealProc(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := syscall.Gettid()

	got, err := Waits("/proc", []int{os.Getpid()})
	require.NoError(t, err)
	i := slices.IndexFunc(got, func(w Wait) bool { return w.TID == self })
	require.GreaterOrEqual(t, i, 0, "no sample of this thread in %+v", got)
	assert.Equal(t, os.Getpid(), got[i].PID)
	assert.Equal(t, "read", got[i].SyscallName)
	assert.Equal(t, WaitOther, got[i].State)
}

func TestWaitsNamesBadSyscallFile(t *testing.T) {
	root := t.TempDir()
	task := filepath.Join(root, "7", "task", "7")
	require.NoError(t, os.MkdirAll(task, 0o755))
	for name, body := range map[string]string{"comm": "x\n", "wchan": "0", "syscall": "garbage\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(task, name), []byte(body), 0o644))
	}
	_, err := readWaits(root, []int{7}, amd64Syscalls)
	assert.ErrorContains(t, err, filepath.Join(task, "syscall"))
	assert.ErrorContains(t, err, "garbage")
}

func TestParseSyscall(t *testing.T) {
	nr, running, err := parseSyscall("44 0x9 0x7f3c2a1b0010 0x10000 0x0 0x0 0x0 0x7ffd3b2a1e58 0x7f3c2c91e2ad\n")
	require.NoError(t, err)
	assert.Equal(t, 44, nr)
	assert.False(t, running)

	nr, running, err = parseSyscall("-1 0x7ffd3b2a1e58 0x7f3c2c91e2ad\n")
	require.NoError(t, err)
	assert.Equal(t, -1, nr)
	assert.False(t, running)

	nr, running, err = parseSyscall("running\n")
	require.NoError(t, err)
	assert.Equal(t, -1, nr)
	assert.True(t, running)

	for _, bad := range []string{"", "\n", "x 0x1", "-2 0x0 0x0"} {
		_, _, err := parseSyscall(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestClassifyWait(t *testing.T) {
	arm := syscallNames["arm64"]
	cases := []struct {
		syscall string
		running bool
		wchan   string
		want    WaitState
	}{
		{amd64Syscalls[44], false, "wait_woken", WaitSend},
		{amd64Syscalls[20], false, "sk_stream_wait_memory", WaitSend},
		{amd64Syscalls[40], false, "wait_woken", WaitSend},
		{arm[206], false, "wait_woken", WaitSend},
		{arm[211], false, "sock_alloc_send_pskb", WaitSend},
		{amd64Syscalls[1], false, "pipe_write", WaitOther}, // a write, not to a socket
		{amd64Syscalls[44], false, "", WaitOther},
		{amd64Syscalls[288], false, "inet_csk_accept", WaitIdle},
		{amd64Syscalls[7], false, "do_sys_poll", WaitIdle},
		{arm[22], false, "ep_poll", WaitIdle},
		{arm[73], false, "do_sys_poll", WaitIdle},
		{"", true, "", WaitRunning},
		{amd64Syscalls[202], false, "futex_wait_queue", WaitOther},
		{"", false, "", WaitOther},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, classifyWait(c.syscall, c.running, c.wchan), "%+v", c)
	}
}

func TestSyscallTablesAgree(t *testing.T) {
	// Every classified name exists on x86_64; arm64 lacks only the
	// pre-p* waits.
	for _, name := range append(append([]string{}, sendSyscalls...), idleSyscalls...) {
		assert.Contains(t, values(amd64Syscalls), name)
		if name != "poll" && name != "select" && name != "epoll_wait" {
			assert.Contains(t, values(syscallNames["arm64"]), name)
		}
	}
	assert.Equal(t, "write", syscallNames["arm64"][64])
	assert.Equal(t, "sendmsg", syscallNames["amd64"][46])
}

func values(m map[int]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestProcesses(t *testing.T) {
	gunicorn := func(comm, cmdline string) bool {
		return strings.Contains(cmdline, "gunicorn")
	}
	got, err := Processes(probeProc, gunicorn)
	require.NoError(t, err)
	args := "/usr/bin/python3 /usr/bin/gunicorn --workers 2 --bind 127.0.0.1:8000 app:application"
	assert.Equal(t, []Process{
		{PID: 100, PPID: 1, Comm: "gunicorn", Cmdline: args},
		{PID: 101, PPID: 100, Comm: "gunicorn", Cmdline: args},
		{PID: 102, PPID: 100, Comm: "gunicorn", Cmdline: args},
	}, got)

	nginx, err := Processes(probeProc, func(comm, _ string) bool { return comm == "nginx" })
	require.NoError(t, err)
	assert.Equal(t, []Process{{PID: 201, PPID: 200, Comm: "nginx", Cmdline: "nginx: worker process"}}, nginx)

	all, err := Processes(probeProc, nil)
	require.NoError(t, err)
	var pids []int
	for _, p := range all {
		pids = append(pids, p.PID)
	}
	assert.Equal(t, []int{1, 100, 101, 102, 201}, pids)
}

// Uvicorn's master starts multiprocessing's resource tracker beside its
// workers (the command lines as a Uvicorn pod shows them): it serves no
// request, so it is no worker.
func TestHelpersAreNoWorkers(t *testing.T) {
	assert.True(t, isHelper("/usr/bin/python3 -c from multiprocessing.resource_tracker import main;main(4)"))
	assert.False(t, isHelper("/usr/bin/python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7)"))
	assert.False(t, isHelper("python3 -m gunicorn --bind 127.0.0.1:8000 app:application"))
}
