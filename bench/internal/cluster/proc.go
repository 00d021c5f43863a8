package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one of the cluster's long-running parts.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// pidFile lists the cluster's processes (pid and executable, one per
// line), so that Start can reap an earlier run that was killed before it
// could stop them.
func (c Config) pidFile() string { return c.path("pids") }

// start runs path args as part name, its output in state/logs/name.log.
// The process dies with this one (PR_SET_PDEATHSIG) and is listed in the
// pid file.
func (cl *Cluster) start(name, path string, args ...string) (*proc, error) {
	if err := os.MkdirAll(cl.cfg.path("logs"), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(cl.cfg.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("cluster: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); log.Close(); close(p.done) }()
	cl.procs = append(cl.procs, p)
	f, err := os.OpenFile(cl.cfg.pidFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		fmt.Fprintf(f, "%d %s\n", cmd.Process.Pid, path)
		err = f.Close()
	}
	fmt.Fprintf(cl.cfg.Log, "cluster: %s started (pid %d)\n", name, cmd.Process.Pid)
	return p, err
}

// exited is nil while p runs, else how it ended.
func (p *proc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %v", p.name, p.err)
	default:
		return nil
	}
}

// stop ends p: TERM, then KILL after grace.
func (p *proc) stop(grace time.Duration) error {
	if p.exited() != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("cluster: %s (pid %d) did not end after KILL", p.name, p.cmd.Process.Pid)
	}
}

// waitFor polls ready every 250 ms until it is nil, p exits, or wait
// passes; the error says which and ready's last word.
func (cl *Cluster) waitFor(p *proc, what string, ready func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.ReadyWait)
	defer cancel()
	var last error
	for {
		// An answer from a process of another's on the same port is not
		// ours: the part must still run when it answers.
		if p != nil {
			if err := p.exited(); err != nil {
				return fmt.Errorf("cluster: waiting until %s: %v (its log: %s)", what, err, cl.cfg.path("logs", p.name+".log"))
			}
		}
		if last = ready(); last == nil && (p == nil || p.exited() == nil) {
			fmt.Fprintf(cl.cfg.Log, "cluster: %s\n", what)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: not %s within %v: %v", what, cl.cfg.ReadyWait, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// reapPids kills what an earlier run's pid file lists, where the pid
// still runs the same executable with the state directory state on its
// command line (every part has it there: a reused pid is left alone).
func reapPids(file, state string, grace time.Duration) error {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pidS, exe, ok := strings.Cut(sc.Text(), " ")
		pid, err := strconv.Atoi(pidS)
		if !ok || err != nil || pid <= 1 {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pidS, "cmdline"))
		if cur, err := os.Readlink(filepath.Join("/proc", pidS, "exe")); err == nil && cur == exe && strings.Contains(string(cmdline), state+"/") {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(grace)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return sc.Err()
}
