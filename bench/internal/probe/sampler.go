package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Defaults of SamplerSpec.
const (
	DefaultInterval = 50 * time.Millisecond
	// SocketsPerTick is the socket table a tick reads at every tick; a
	// larger one is read less often (Series.SocketSkips). Article A's
	// loads and the scale column's 1,024 readers stay under it.
	SocketsPerTick = 5000
	// MaxConns bounds the queued sockets a socket sample keeps one by
	// one: the scale column's 1,024 readers behind a proxy queue on at
	// most 4,096 sockets.
	MaxConns = 4608
	// ConnsPerSample and MaxConnRecords bound what a series keeps one
	// by one over a run: a sample with n queued sockets keeps them only
	// every 1 + n/ConnsPerSample socket samples (the hops' sums every
	// time), and none once the series holds MaxConnRecords (600,000
	// records: about 30 MiB held, 55 MiB encoded). 1,024 readers behind
	// lighttpd or Varnish queue on about 4,000 sockets for 24 s: kept at
	// every read of the table, over a million records, and the sampler
	// was OOM-killed at 256 MiB (scale-read-...-lighttpd-1024 and
	// -varnish-1024, scale-idle-gunicorn-sync-2-caddy-buffered-4096,
	// 2026-12-03). Article A's loads, the matrix's 16 clients and make
	// test's 256 readers (512 queued sockets) keep every sample whole.
	ConnsPerSample     = 1024
	MaxConnRecords     = 600_000
	DefaultMaxDuration = 120 * time.Second
	// DefaultRefreshEvery is how many ticks pass between process listings:
	// workers live for the whole run, so listing /proc every tick would
	// only add the probe's own cost.
	DefaultRefreshEvery = 20
)

// SamplerSpec is what the probe container samples. The harness sends it
// to `labagent probe` as JSON.
type SamplerSpec struct {
	// Interval is the sampling period for every series.
	Interval time.Duration `json:"interval_ns"`
	// ProcRoot is the proc tree of the shared PID namespace.
	ProcRoot string `json:"proc_root"`
	// Containers maps a role (app, proxy, client) to its container ID; a
	// process belongs to the role whose ID its /proc/PID/cgroup names.
	Containers map[string]string `json:"containers"`
	// RoleRoots, when set, maps the PID of each role's first process to
	// the role (one of Containers' keys, whose IDs are then not read): a
	// process belongs to the role of its nearest ancestor, or itself, in
	// it. A Kubernetes pod's sampler knows no container IDs, but each role
	// leaves its PID in the pod's shared volume before it starts its
	// server. (Not the environment: NGINX writes its process title over
	// its environ.)
	RoleRoots map[int]string `json:"role_roots,omitempty"`
	// AppPort and ProxyPort classify sockets into hops; ProxyPort 0 means
	// no proxy.
	AppPort   int `json:"app_port"`
	ProxyPort int `json:"proxy_port"`
	// IPv6 adds the tcp6 table; the lab's pods talk IPv4 on 127.0.0.1.
	IPv6 bool `json:"ipv6"`
	// SocketSource is how the socket table is read: SourceNetlink (the
	// default, "") or SourceProc. A netlink dump that fails falls back to
	// /proc for the rest of the series, and Series.SocketSource says so.
	SocketSource SocketSource `json:"socket_source,omitempty"`
	// TempDir is where the proxy spills responses (NGINX's
	// proxy_temp_path, lighttpd's upload dir); empty when it never does.
	TempDir string `json:"temp_dir"`
	// ReadyAddr, when set, is a unix socket address (a leading @: the
	// abstract namespace, shared by a pod's containers with its network)
	// on which the sampler listens once it has taken its first sample
	// (and, with QuietFor, once the descriptors are quiet), until it
	// ends: a load given it as load.Spec.After starts then. The sampler
	// accepts nothing; a connection that completes is the signal.
	ReadyAddr string `json:"ready_addr,omitempty"`
	// QuietFor, when set, holds ReadyAddr back until the app's and the
	// proxy's descriptors reaching a socket or a path (FDSample.Held) have
	// stayed the same for QuietFor, at most MaxQuietWait after the first
	// sample; Series.QuietFDs then holds them. Until then every tick
	// lists the processes, so a worker forked during the wait is
	// counted. From a process listing's period (Interval times
	// RefreshEvery) to half of MaxQuietWait; 0: ready after the first
	// sample. Needs ReadyAddr.
	QuietFor time.Duration `json:"quiet_for_ns,omitempty"`
	// StopFile ends sampling once it exists; MaxDuration bounds it anyway.
	StopFile     string        `json:"stop_file"`
	MaxDuration  time.Duration `json:"max_duration_ns"`
	RefreshEvery int           `json:"refresh_every"`
}

// ProcessInfo is a sampled process and the container role it runs in.
type ProcessInfo struct {
	Process
	Role string `json:"role"`
	// Worker is true for a server's process (the app's or the proxy's)
	// that serves requests: one that never had a child in its role, so a
	// Gunicorn or NGINX worker but not its master, and the one process of
	// a single-process server (Uvicorn without --workers, waitress); but
	// never a helper that serves no request (multiprocessing's resource
	// tracker).
	Worker bool `json:"worker"`
	// Master is true for a process that had a child in its role, in this
	// listing or an earlier one: a master stays one when its workers are
	// replaced.
	Master bool `json:"master,omitempty"`
	gone   bool
}

// ResourceSample is one container's cgroup usage at one instant.
type ResourceSample struct {
	UnixNano int64  `json:"unix_ns"`
	Role     string `json:"role"`
	Usage    Usage  `json:"usage"`
}

// Conn is one socket of a hop at one instant.
type Conn struct {
	Hop        Hop   `json:"hop"`
	LocalPort  int   `json:"local_port"`
	RemotePort int   `json:"remote_port"`
	SendQ      int64 `json:"send_q_bytes"`
	RecvQ      int64 `json:"recv_q_bytes"`
}

// SocketSample is the namespace's TCP queues at one instant: the socket
// table's read began at UnixNano and ended at DoneUnixNano, and each
// socket's line was read somewhere in between.
type SocketSample struct {
	UnixNano     int64              `json:"unix_ns"`
	DoneUnixNano int64              `json:"done_unix_ns"`
	Hops         map[Hop]QueueBytes `json:"hops"`
	// Conns are the hops' sockets with bytes queued: one with none adds
	// nothing to any sum (Hops counts every socket).
	Conns []Conn `json:"conns"`
}

// WaitSample is where every sampled thread was at one instant.
type WaitSample struct {
	UnixNano int64  `json:"unix_ns"`
	Waits    []Wait `json:"waits"`
}

// FDSample is one role's open file descriptors at one instant: every
// process of the app's or the proxy's container. FDs counts them all;
// Sockets and Files those that reach a socket or a path (a leak holds
// one), the rest pipes and anonymous inodes an event loop makes for
// itself (FDKinds). Past MaxSortedFDs, and in a record from before the
// kinds, FDs stands alone (Classified).
type FDSample struct {
	UnixNano int64  `json:"unix_ns"`
	Role     string `json:"role"`
	FDs      int    `json:"fds"`
	Sockets  int    `json:"sockets,omitempty"`
	Files    int    `json:"files,omitempty"`
}

// Held is the descriptors that reach a socket or a path.
func (f FDSample) Held() int { return f.Sockets + f.Files }

// Classified is whether the sampler sorted f's descriptors: a server's
// role always holds a socket, its listener, so a sorted sample has one.
func (f FDSample) Classified() bool { return f.Sockets > 0 }

// TempSample is NGINX's open temp files at one instant.
type TempSample struct {
	UnixNano   int64 `json:"unix_ns"`
	TotalBytes int64 `json:"total_bytes"`
	Files      int   `json:"files"`
}

// Overhead is what sampling cost the probe itself (its own container's
// CPU, never the measured ones').
type Overhead struct {
	Ticks int `json:"ticks"`
	// Missed counts ticks skipped because a sample took over an interval.
	Missed int `json:"missed"`
	// CPUTime is the sampling loop's own CPU, all threads, user and
	// system: the process's start and the encoding of the series are not in it.
	CPUTime   time.Duration `json:"cpu_time_ns"`
	Wall      time.Duration `json:"wall_ns"`
	SampleP50 time.Duration `json:"sample_p50_ns"`
	SampleMax time.Duration `json:"sample_max_ns"`
}

// Series is everything one probe run sampled.
type Series struct {
	Spec          SamplerSpec      `json:"spec"`
	StartUnixNano int64            `json:"start_unix_ns"`
	Processes     []ProcessInfo    `json:"processes"`
	Resources     []ResourceSample `json:"resources"`
	Sockets       []SocketSample   `json:"sockets"`
	Waits         []WaitSample     `json:"waits"`
	TempFiles     []TempSample     `json:"temp_files"`
	// FDs are the app's and the proxy's open descriptors, read with the
	// socket table (every tick, or every few past SocketsPerTick).
	FDs []FDSample `json:"fds,omitempty"`
	// QuietFDs are the held descriptors of each of the app and the proxy
	// once they had stayed the same for Spec.QuietFor before the sampler
	// said it was ready; nil when QuietFor is 0 or the wait ran out
	// (Errors says so).
	QuietFDs map[string]int `json:"quiet_fds,omitempty"`
	// Limits are each role's CFS period and quota and memory limit, read
	// from its own cgroup mount at the first tick that saw the role: what
	// the run got, not what it asked for.
	Limits   map[string]Limits `json:"limits,omitempty"`
	Overhead Overhead          `json:"overhead"`
	// SocketSource is the socket source the series ended on, and
	// SocketFallback why it is not the spec's: the netlink dump's error
	// when the series went on from /proc. A fallback is not a sampling
	// failure: the queues read from /proc are the same figures, at a
	// higher cost (Overhead says how much).
	SocketSource   SocketSource `json:"socket_source"`
	SocketFallback string       `json:"socket_fallback,omitempty"`
	// SocketSkips counts the ticks that did not read the socket table:
	// past SocketsPerTick sockets it is read every 1 + size /
	// SocketsPerTick ticks, its size being the last read's.
	SocketSkips int `json:"socket_skips,omitempty"`
	// ConnsOmitted counts the socket samples whose Conns were left out
	// (addSockets), their Hops kept.
	ConnsOmitted int `json:"conns_omitted,omitempty"`
	// connRecords counts the Conns the series kept.
	connRecords int
	// Errors are sampling failures that did not stop the series (e.g. a
	// cgroup file unreadable on this engine), each once.
	Errors []string `json:"errors,omitempty"`
}

// Sample runs the probe until spec.StopFile appears, ctx ends or
// spec.MaxDuration passes, one sample of every series per tick.
func Sample(ctx context.Context, spec SamplerSpec) (Series, error) {
	if spec.Interval <= 0 || spec.ProcRoot == "" || len(spec.Containers) == 0 {
		return Series{}, errors.New("probe: SamplerSpec needs Interval, ProcRoot and Containers")
	}
	if spec.RefreshEvery <= 0 {
		spec.RefreshEvery = DefaultRefreshEvery
	}
	if spec.MaxDuration <= 0 {
		spec.MaxDuration = DefaultMaxDuration
	}
	if spec.SocketSource == "" {
		spec.SocketSource = SourceNetlink
	}
	if spec.QuietFor != 0 && spec.ReadyAddr == "" {
		return Series{}, fmt.Errorf("probe: SamplerSpec.QuietFor %v with no ReadyAddr: want a ready signal to hold back, or QuietFor 0", spec.QuietFor)
	}
	if spec.QuietFor != 0 && (spec.QuietFor < spec.Interval*time.Duration(spec.RefreshEvery) || spec.QuietFor > MaxQuietWait/2) {
		return Series{}, fmt.Errorf("probe: SamplerSpec.QuietFor %v: want 0 or from a process listing's period (%v) to half of MaxQuietWait (%v)",
			spec.QuietFor, spec.Interval*time.Duration(spec.RefreshEvery), MaxQuietWait/2)
	}
	if spec.SocketSource != SourceNetlink && spec.SocketSource != SourceProc {
		return Series{}, fmt.Errorf("probe: SamplerSpec.SocketSource %q: want %q or %q", spec.SocketSource, SourceNetlink, SourceProc)
	}
	s := Series{Spec: spec, StartUnixNano: time.Now().UnixNano(), SocketSource: spec.SocketSource}
	seenErr := map[string]bool{}
	note := func(err error) {
		if err != nil && !seenErr[err.Error()] {
			seenErr[err.Error()] = true
			s.Errors = append(s.Errors, err.Error())
		}
	}
	var durations []time.Duration
	fr := newFiles()
	defer fr.Close()
	var diag *Diag
	if s.SocketSource == SourceNetlink {
		var err error
		if diag, err = NewDiag(); err != nil {
			s.SocketFallback = fmt.Sprintf("%v; reading /proc/net/tcp from here on", err)
			s.SocketSource = SourceProc
		}
		defer diag.Close()
	}
	// The cost is the loop's own: the process's start and the spec's
	// decoding are left out, as the series' encoding after it is.
	cpu0 := SelfCPU()
	start := time.Now()
	ticker := time.NewTicker(spec.Interval)
	defer ticker.Stop()
	tableSize := 0
	announced := false
	var quiet *quietWatch // nil once done with
	if spec.QuietFor > 0 {
		quiet = newQuietWatch(spec)
	}
	for tick := 0; ; tick++ {
		// Until the quiet count is taken, every tick lists the processes:
		// a worker forked during the wait is counted in it.
		if tick%spec.RefreshEvery == 0 || quiet != nil {
			procs, err := rolesOf(spec)
			if err != nil {
				return s, err
			}
			s.Processes = mergeProcesses(s.Processes, procs)
			fr.forget()
		}
		t0 := time.Now()
		fds := len(s.FDs)
		// A table of thousands of sockets is read every few ticks: a
		// dump costs about 1.2 us a socket here (20,000: 25 ms of a 50 ms
		// tick), and held connections queue nothing worth the cost.
		stride := 1 + tableSize/SocketsPerTick
		if tick%stride == 0 {
			tableSize = sampleOnce(&s, spec, fr, diag, note, true)
		} else {
			sampleOnce(&s, spec, fr, diag, note, false)
			s.SocketSkips++
		}
		fr.sweep()
		durations = append(durations, time.Since(t0))
		if !announced && spec.ReadyAddr != "" {
			if quiet != nil {
				if counts := quiet.observe(s.FDs[fds:], t0.UnixNano()); counts != nil {
					s.QuietFDs, quiet = counts, nil
				} else if time.Since(start) > MaxQuietWait {
					note(fmt.Errorf("probe: descriptors not the same for %v within %v of the first sample (last: %v)", spec.QuietFor, MaxQuietWait, quiet))
					quiet = nil
				}
			}
			if quiet == nil {
				ready, err := net.Listen("unix", spec.ReadyAddr)
				if err != nil {
					return s, fmt.Errorf("probe: ReadyAddr: %w", err)
				}
				defer ready.Close()
				announced = true
			}
		}
		if _, err := os.Stat(spec.StopFile); err == nil || time.Since(start) > spec.MaxDuration {
			break
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-ticker.C:
		}
		// A tick that came while sampling is dropped by the ticker.
		if d := durations[len(durations)-1]; d > spec.Interval {
			s.Overhead.Missed += int(d / spec.Interval)
		}
	}
	s.Overhead.CPUTime = SelfCPU() - cpu0
	s.Overhead.Ticks = len(durations)
	s.Overhead.Wall = time.Since(start)
	slices.Sort(durations)
	s.Overhead.SampleP50 = durations[len(durations)/2]
	s.Overhead.SampleMax = durations[len(durations)-1]
	return s, nil
}

// SelfCPU is this process's CPU time so far, user and system, all
// threads.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleOnce takes a tick's samples, the socket table's only if
// sockets; it returns the table's size (0 when unread).
func sampleOnce(s *Series, spec SamplerSpec, fr *files, diag *Diag, note func(error), sockets bool) int {
	size := 0
	now := time.Now().UnixNano()
	rolePID, workers, nginx := sampled(s.Processes)
	for _, role := range sortedKeys(rolePID) {
		// A container's cgroup is visible through any of its processes'
		// root: /proc/PID/root/sys/fs/cgroup is its own cgroup mount.
		root := filepath.Join(spec.ProcRoot, strconv.Itoa(rolePID[role]), "root/sys/fs/cgroup")
		if _, ok := s.Limits[role]; !ok {
			if l, err := ReadLimits(root); err != nil {
				note(fmt.Errorf("%s limits: %w", role, err))
			} else {
				if s.Limits == nil {
					s.Limits = map[string]Limits{}
				}
				s.Limits[role] = l
			}
		}
		u, err := fr.usage(root)
		if err != nil {
			note(fmt.Errorf("%s cgroup: %w", role, err))
			continue
		}
		s.Resources = append(s.Resources, ResourceSample{UnixNano: now, Role: role, Usage: u})
	}
	if sockets {
		size = sampleSockets(s, spec, diag, note)
		sampleFDs(s, spec, fr, now, note)
	}
	if w, err := fr.waits(spec.ProcRoot, workers, syscallNames[runtime.GOARCH]); err != nil {
		note(err)
	} else {
		s.Waits = append(s.Waits, WaitSample{UnixNano: now, Waits: w})
	}
	if spec.TempDir != "" && len(nginx) > 0 {
		if t, err := fr.tempFiles(spec.ProcRoot, nginx, spec.TempDir); err != nil {
			note(err)
		} else {
			s.TempFiles = append(s.TempFiles, TempSample{UnixNano: now, TotalBytes: t.TotalBytes, Files: t.FileCount})
		}
	}
	return size
}

// sampleFDs counts the app's and the proxy's open descriptors into s.
func sampleFDs(s *Series, spec SamplerSpec, fr *files, now int64, note func(error)) {
	pids := map[string][]int{}
	for _, p := range s.Processes {
		if !p.gone && (p.Role == "app" || p.Role == "proxy") {
			pids[p.Role] = append(pids[p.Role], p.PID)
		}
	}
	for _, role := range sortedKeys(pids) {
		k, err := fr.fdCount(spec.ProcRoot, pids[role])
		if err != nil {
			note(fmt.Errorf("%s fds: %w", role, err))
			continue
		}
		s.FDs = append(s.FDs, FDSample{UnixNano: now, Role: role, FDs: k.Total(), Sockets: k.Sockets, Files: k.Files})
	}
}

// addSockets appends socket sample ss to s, its queued sockets one by
// one only when the bounds allow: none past MaxConns or past the series'
// MaxConnRecords, and past ConnsPerSample only every 1 + n/ConnsPerSample
// samples. Thousands of held connections that each queue a byte (a
// client's FIN a stalled server has not read), or of slow readers: the
// hops' sums say it, and a record of them all would be hundreds of MiB a
// run.
func (s *Series) addSockets(ss SocketSample) {
	n := len(ss.Conns)
	if n <= MaxConns && s.connRecords+n <= MaxConnRecords && len(s.Sockets)%(1+n/ConnsPerSample) == 0 {
		s.connRecords += n
	} else {
		ss.Conns = nil
		s.ConnsOmitted++
	}
	s.Sockets = append(s.Sockets, ss)
}

// sampleSockets reads the socket table into s and returns its size.
func sampleSockets(s *Series, spec SamplerSpec, diag *Diag, note func(error)) int {
	// The socket read keeps its own times: the reads before it may have
	// been delayed, and the read itself takes milliseconds.
	readAt := time.Now().UnixNano()
	socks, err := readSockets(s, spec, diag.Sockets)
	if err != nil {
		note(err)
		return 0
	}
	ss := SocketSample{UnixNano: readAt, DoneUnixNano: time.Now().UnixNano(), Hops: SumByHop(socks, spec.AppPort, spec.ProxyPort), Conns: []Conn{}}
	defer func() { s.addSockets(ss) }()
	for _, k := range socks {
		// A socket with nothing queued adds nothing to a hop's bytes,
		// and a series of ten thousand held connections would keep
		// ten thousand of them a tick: the hop's sums count it.
		if k.TxQueueBytes == 0 && k.RxQueueBytes == 0 {
			continue
		}
		if h := ClassifyHop(k, spec.AppPort, spec.ProxyPort); h != "" && h != HopListen {
			ss.Conns = append(ss.Conns, Conn{Hop: h, LocalPort: k.LocalPort, RemotePort: k.RemotePort,
				SendQ: k.TxQueueBytes, RecvQ: k.RxQueueBytes})
		}
	}
	return len(socks)
}

// sampled picks what a tick reads from the processes listed: a process
// of each role (its cgroup is the role's), the app's and NGINX's
// processes (their threads' wait sites), and NGINX's workers (their temp
// files: the master serves no request and opens none).
func sampled(procs []ProcessInfo) (rolePID map[string]int, workers, nginx []int) {
	rolePID = map[string]int{}
	for _, p := range procs {
		if p.gone {
			continue
		}
		if _, ok := rolePID[p.Role]; !ok {
			rolePID[p.Role] = p.PID
		}
		switch p.Role {
		case "app", "proxy":
			workers = append(workers, p.PID)
			if p.Role == "proxy" && p.Worker {
				nginx = append(nginx, p.PID)
			}
		}
	}
	return rolePID, workers, nginx
}

// readSockets reads the socket table from the series' source; on a
// netlink failure the series records why in SocketFallback and goes on
// from /proc.
func readSockets(s *Series, spec SamplerSpec, dump func(ipv6 bool) ([]Socket, error)) ([]Socket, error) {
	if s.SocketSource == SourceNetlink {
		socks, err := dump(spec.IPv6)
		if err == nil {
			return socks, nil
		}
		s.SocketFallback = fmt.Sprintf("%v; reading /proc/net/tcp from here on", err)
		s.SocketSource = SourceProc
	}
	return Sockets(spec.ProcRoot, spec.IPv6)
}

// rootRole is the role of pid's nearest ancestor, or pid itself, among
// spec.RoleRoots, when it is one of spec's roles.
func rootRole(pid int, parent map[int]int, spec SamplerSpec) (string, bool) {
	for range maxDepth {
		if role, ok := spec.RoleRoots[pid]; ok {
			_, known := spec.Containers[role]
			return role, known
		}
		next, ok := parent[pid]
		if !ok || next == pid || next == 0 {
			return "", false
		}
		pid = next
	}
	return "", false
}

// maxDepth bounds rootRole's walk up a process tree.
const maxDepth = 64

// rolesOf lists the processes of the spec's containers, with their roles.
func rolesOf(spec SamplerSpec) ([]ProcessInfo, error) {
	pfs, err := procfs.NewFS(spec.ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	procs, err := Processes(spec.ProcRoot, nil)
	if err != nil {
		return nil, err
	}
	var out []ProcessInfo
	roleOf := map[int]string{}
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.PPID
	}
	for _, p := range procs {
		pr, err := pfs.Proc(p.PID)
		if err != nil {
			continue
		}
		if len(spec.RoleRoots) > 0 {
			if role, ok := rootRole(p.PID, parent, spec); ok {
				roleOf[p.PID] = role
				out = append(out, ProcessInfo{Process: p, Role: role})
			}
			continue
		}
		cgs, err := pr.Cgroups()
		if err != nil {
			continue // exited, or not ours to read
		}
		for role, id := range spec.Containers {
			if id != "" && slices.ContainsFunc(cgs, func(c procfs.Cgroup) bool { return strings.Contains(c.Path, id) }) {
				roleOf[p.PID] = role
				out = append(out, ProcessInfo{Process: p, Role: role})
				break
			}
		}
	}
	parents := map[int]bool{}
	for _, p := range out {
		if roleOf[p.PPID] == p.Role {
			parents[p.PPID] = true
		}
	}
	for i := range out {
		out[i].Master = parents[out[i].PID]
		out[i].Worker = serves(out[i])
	}
	return out, nil
}

// serves is whether p is one of a server's processes that serve requests
// (ProcessInfo.Worker).
func serves(p ProcessInfo) bool {
	return (p.Role == "app" || p.Role == "proxy") && !p.Master && !isHelper(p.Cmdline)
}

// helperCmdlines mark children of a server's master that serve no
// request: Python's multiprocessing starts a resource tracker beside
// Uvicorn's spawned workers, which waits on its pipe all along.
var helperCmdlines = []string{"multiprocessing.resource_tracker", "multiprocessing.forkserver", "multiprocessing.semaphore_tracker"}

func isHelper(cmdline string) bool {
	return slices.ContainsFunc(helperCmdlines, func(h string) bool { return strings.Contains(cmdline, h) })
}

// mergeProcesses keeps every process ever seen (a report needs the ones
// that exited too) and marks those no longer listed as gone.
func mergeProcesses(old, now []ProcessInfo) []ProcessInfo {
	byPID := map[int]bool{}
	for _, p := range now {
		byPID[p.PID] = true
	}
	master := map[int]bool{}
	for _, p := range old {
		master[p.PID] = p.Master
		if !byPID[p.PID] {
			p.gone = true
			now = append(now, p)
		}
	}
	for i := range now {
		if master[now[i].PID] && !now[i].Master {
			now[i].Master = true
			now[i].Worker = serves(now[i])
		}
	}
	slices.SortFunc(now, func(a, b ProcessInfo) int { return a.PID - b.PID })
	return now
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
