package stackfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A server command's counts (processes, threads, async cores) are bounded
// by what the app container can boot: its memory limit and its pids
// limit. A value outside them is refused before anything starts, naming
// the flag; the container's own limits hold whatever gets past.

// The app container's limits the counts must fit: podspec's
// DefaultAppMemory and the app role's pids limit in
// podspec.DefaultHardening (package engine's tests hold them equal).
const (
	DefaultAppMemoryMiB = 128
	AppPidsLimit        = 256
	// BootMiB and ProcessMiB are the least a server takes to boot: an
	// interpreter with its server, a master and one worker of the
	// smallest app (BootMiB), and each worker beyond (ProcessMiB).
	// Measured in the lab's image (cgroup v1 memory.usage_in_bytes,
	// 2026-12-02): Gunicorn with one sync worker of fixtures/stacks/shop
	// 35.1 MiB, with 8 workers 56.3 MiB (3.0 MiB a worker). A real app
	// takes more (Django or FastAPI about 22 MiB a process), so a count
	// within these bounds may still not boot; the container's limit then
	// stops it, and the check says so (an OOM kill, or a pod that never
	// got ready). A count beyond them boots on no app.
	BootMiB    = 36
	ProcessMiB = 3
	// pidsReserve is left for a master, its helpers and a docker exec's
	// runc threads (an exec peaks at 10 pids); pidsPerProcess is a
	// worker's least: its main thread and one more (a heartbeat, a
	// loop's), which a thread pool's threads come on top of.
	pidsReserve    = 16
	pidsPerProcess = 2
	// MaxAsyncCores bounds async cores and connection limits per process
	// (uWSGI --async and --gevent, Gunicorn --worker-connections,
	// Uvicorn --limit-concurrency).
	MaxAsyncCores = 10_000
)

// What a counted flag counts.
const (
	countProcesses = "processes"
	countThreads   = "threads"
	countAsync     = "async"
)

// countFlags are each program's counted flags.
var countFlags = map[string][]struct {
	names []string
	what  string
}{
	"gunicorn": {
		{[]string{"--workers", "-w"}, countProcesses},
		{[]string{"--threads"}, countThreads},
		{[]string{"--worker-connections"}, countAsync},
	},
	"uwsgi": {
		{[]string{"--processes", "-p", "--workers"}, countProcesses},
		{[]string{"--threads", "--offload-threads"}, countThreads},
		{[]string{"--async", "--gevent"}, countAsync},
	},
	"uvicorn": {
		{[]string{"--workers"}, countProcesses},
		{[]string{"--limit-concurrency"}, countAsync},
	},
}

// serverEnv are the variables through which the servers take settings
// that the lab reads from the command (its concurrency, its bind): they
// would change what the command says behind the lab's back.
var serverEnv = []string{"GUNICORN_CMD_ARGS", "WEB_CONCURRENCY", "UVICORN_*", "UWSGI_*"}

func isServerEnv(k string) bool {
	return slices.ContainsFunc(serverEnv, func(p string) bool {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			return strings.HasPrefix(k, pre)
		}
		return k == p
	})
}

// Counts is the most processes a memory limit of memMiB and the pids
// limit boot, and the most threads each of n processes gets within the
// pids limit.
func Counts(memMiB, n int) (maxProcesses, maxThreads int) {
	pids := AppPidsLimit - pidsReserve
	maxProcesses = max(min((memMiB-BootMiB)/ProcessMiB+1, pids/pidsPerProcess), 1)
	maxThreads = max(pids/max(n, 1)-pidsPerProcess, 1)
	return maxProcesses, maxThreads
}

// validCounts names every counted flag of cmd whose value is not a whole
// number within the bounds for a memory limit of memMiB; field is the
// command's field ("app.server", "image.command").
func validCounts(field string, cmd []string, memMiB int, bad func(string, any, string)) {
	prog, args := program(cmd)
	fs := flags(args)
	procs := 1
	for _, n := range []string{"--workers", "-w", "--processes", "-p"} {
		if v, err := strconv.Atoi(fs[n]); err == nil && v > 0 {
			procs = v
		}
	}
	maxProcs, maxThreads := Counts(memMiB, procs)
	for _, cf := range countFlags[prog] {
		for _, name := range cf.names {
			v, ok := fs[name]
			if !ok {
				continue
			}
			lo, hi, why := 1, maxProcs, fmt.Sprintf("processes: %d MiB of memory and %d pids boot at most %d, the first in %d MiB with its master, each more in %d MiB and %d pids",
				memMiB, AppPidsLimit, maxProcs, BootMiB, ProcessMiB, pidsPerProcess)
			switch cf.what {
			case countThreads:
				hi, why = maxThreads, fmt.Sprintf("threads per process: %d process(es) within the app's limit of %d pids", procs, AppPidsLimit)
				if name == "--offload-threads" {
					lo = 0
				}
			case countAsync:
				hi, why = MaxAsyncCores, "per process"
			}
			if n, err := strconv.Atoi(v); err != nil || n < lo || n > hi {
				bad(field, name+" "+v, fmt.Sprintf("a whole number from %d to %d (%s)", lo, hi, why))
			}
		}
	}
}

// program is cmd's server program and its arguments, past "python3 -m".
func program(cmd []string) (string, []string) {
	if len(cmd) >= 3 && strings.HasPrefix(cmd[0], "python") && cmd[1] == "-m" {
		cmd = cmd[2:]
	}
	if len(cmd) == 0 {
		return "", nil
	}
	return cmd[0][strings.LastIndex(cmd[0], "/")+1:], cmd[1:]
}
