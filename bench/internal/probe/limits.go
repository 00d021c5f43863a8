// Package probe reads kernel state from inside a pod's namespaces, and is
// the /proc sampler: rooted readers of cgroup limits and usage, the network
// namespace's sysctls, NGINX's temp files, TCP queues per socket hop and
// each worker thread's wait, and Sample, which reads them all every
// interval (labagent probe, in the pod's sampler container). Every reader
// takes a root path, so unit tests read fixture trees under fixtures/ where
// the real code reads / inside a container.
package probe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// Limits are a cgroup's CPU quota and memory limit.
type Limits struct {
	// CgroupVersion is 1 or 2.
	CgroupVersion int `json:"cgroup_version"`
	// CPUQuotaMicros is the CFS quota per period, -1 when unlimited.
	CPUQuotaMicros int64 `json:"cpu_quota_us"`
	// CPUPeriodMicros is the CFS period.
	CPUPeriodMicros int64 `json:"cpu_period_us"`
	// MemoryBytes is the memory limit, -1 when unlimited.
	MemoryBytes int64 `json:"memory_bytes"`
}

// CPUs is the quota as a share of one core, 0 when unlimited.
func (l Limits) CPUs() float64 {
	if l.CPUQuotaMicros < 0 || l.CPUPeriodMicros <= 0 {
		return 0
	}
	return float64(l.CPUQuotaMicros) / float64(l.CPUPeriodMicros)
}

// ReadLimits reads the limits of the cgroup mounted at root (in a container,
// /sys/fs/cgroup), v2 when root has cgroup.controllers, v1 otherwise.
func ReadLimits(root string) (Limits, error) {
	if isV2(root) {
		return readV2(root)
	}
	return readV1(root)
}

// isV2 tells a cgroup v2 mount (one tree with cgroup.controllers at its
// root) from v1's per-controller trees.
func isV2(root string) bool {
	ok, _ := (*files)(nil).exists(filepath.Join(root, "cgroup.controllers"))
	return ok
}

func readV2(root string) (Limits, error) {
	l := Limits{CgroupVersion: 2}
	cpu, err := readLine(root, "cpu.max")
	if err != nil {
		return l, err
	}
	f := strings.Fields(cpu)
	if len(f) != 2 {
		return l, fmt.Errorf("probe: cpu.max %q is not 'QUOTA PERIOD'", cpu)
	}
	if l.CPUQuotaMicros, err = maxOrInt(f[0]); err != nil {
		return l, fmt.Errorf("probe: cpu.max quota: %w", err)
	}
	if l.CPUPeriodMicros, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return l, fmt.Errorf("probe: cpu.max period: %w", err)
	}
	mem, err := readLine(root, "memory.max")
	if err != nil {
		return l, err
	}
	if l.MemoryBytes, err = maxOrInt(mem); err != nil {
		return l, fmt.Errorf("probe: memory.max: %w", err)
	}
	return l, nil
}

func readV1(root string) (Limits, error) {
	l := Limits{CgroupVersion: 1}
	ints := []struct {
		file string
		dst  *int64
	}{
		{"cpu/cpu.cfs_quota_us", &l.CPUQuotaMicros},
		{"cpu/cpu.cfs_period_us", &l.CPUPeriodMicros},
		{"memory/memory.limit_in_bytes", &l.MemoryBytes},
	}
	for _, f := range ints {
		s, err := readLine(root, f.file)
		if err != nil {
			return l, err
		}
		if *f.dst, err = strconv.ParseInt(s, 10, 64); err != nil {
			return l, fmt.Errorf("probe: %s: %w", f.file, err)
		}
	}
	// v1 reports "no limit" as a huge page-aligned number.
	if l.MemoryBytes >= 1<<62 {
		l.MemoryBytes = -1
	}
	return l, nil
}

func maxOrInt(s string) (int64, error) {
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func readLine(root, name string) (string, error) {
	return (*files)(nil).readLine(root, name)
}

func (f *files) readLine(root, name string) (string, error) {
	b, err := f.read(filepath.Join(root, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("probe: no %s under %s: not a cgroup v1 or v2 mount", name, root)
	}
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Sysctls the lab records for every run: they bound what the sockets on
// the path can hold. An optional one a kernel lacks is left out of the
// record.
var Sysctls = []string{
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
	"net.ipv4.tcp_max_tw_buckets",
	"net.ipv4.tcp_max_syn_backlog",
	// The namespace's own TCP hash size, negative when it shares the
	// host's (what the sampler's socket dump walks).
	"net.ipv4.tcp_ehash_entries",
	"net.core.rmem_max",
	"net.core.wmem_max",
	"net.core.somaxconn",
}

// optionalSysctls are in Sysctls but not in every kernel the lab runs on.
var optionalSysctls = map[string]bool{"net.ipv4.tcp_ehash_entries": true} // from 6.1

// ReadSysctls reads names from the proc tree at procRoot (normally /proc),
// each value's fields joined by one space.
func ReadSysctls(procRoot string, names []string) (map[string]string, error) {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, err := pfs.SysctlStrings(n)
		if errors.Is(err, fs.ErrNotExist) && optionalSysctls[n] {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("probe: sysctl %s: %w", n, err)
		}
		out[n] = strings.Join(v, " ")
	}
	return out, nil
}

// Inspection is what `labagent inspect` reports from inside a container.
type Inspection struct {
	Limits  Limits            `json:"limits"`
	Sysctls map[string]string `json:"sysctls"`
	// OOMKills counts the container's processes the OOM killer ended.
	OOMKills int64 `json:"oom_kills"`
	// Node is the host as the container sees it.
	Node Node `json:"node"`
}

// Node is what a container reads of its host: the same on every
// container of a node, and what tells two shards' nodes apart. (Not
// engine.ReadMachine's record, which is how busy a host is.)
type Node struct {
	CPUModel string `json:"cpu_model"`
	// OnlineCPUs counts the processors /proc/cpuinfo lists: the online ones.
	OnlineCPUs int    `json:"online_cpus"`
	Kernel     string `json:"kernel"`
	// Name is the node's name where a scheduler placed the pod (a
	// Kubernetes Job's pod: podrun.EnvNode); empty under Docker. It does
	// not tell machines apart: Same ignores it.
	Name string `json:"name,omitempty"`
}

// Same is whether n and o are the same kind of machine: their names
// aside.
func (n Node) Same(o Node) bool {
	n.Name, o.Name = "", ""
	return n == o
}

// Inspect reads the limits under cgroupRoot, and the Sysctls and the
// node under procRoot.
func Inspect(cgroupRoot, procRoot string) (Inspection, error) {
	var in Inspection
	var err error
	if in.Limits, err = ReadLimits(cgroupRoot); err != nil {
		return in, err
	}
	if in.OOMKills, err = ReadOOMKills(cgroupRoot); err != nil {
		return in, err
	}
	if in.Node, err = ReadNode(procRoot); err != nil {
		return in, err
	}
	in.Sysctls, err = ReadSysctls(procRoot, Sysctls)
	return in, err
}

// ReadNode reads the CPU model, the online processors and the kernel
// release from the proc tree at procRoot.
func ReadNode(procRoot string) (Node, error) {
	var m Node
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return m, fmt.Errorf("probe: %w", err)
	}
	info, err := pfs.CPUInfo()
	if err != nil || len(info) == 0 {
		return m, fmt.Errorf("probe: no processor in %s/cpuinfo (%v)", procRoot, err)
	}
	m.CPUModel, m.OnlineCPUs = info[0].ModelName, len(info)
	rel, err := pfs.SysctlStrings("kernel.osrelease")
	if err != nil || len(rel) == 0 {
		return m, fmt.Errorf("probe: kernel release under %s: %v", procRoot, err)
	}
	m.Kernel = rel[0]
	return m, nil
}

// ReadOOMKills counts the processes the kernel's OOM killer ended in the
// cgroup mounted at root because it hit its memory limit: oom_kill of
// memory.events (v2) or memory.oom_control (v1, kernels from 4.13).
func ReadOOMKills(root string) (int64, error) {
	name := "memory/memory.oom_control"
	if isV2(root) {
		name = "memory.events"
	}
	kv, err := readKeyed(root, name)
	if err != nil {
		return 0, err
	}
	n, ok := kv["oom_kill"]
	if !ok {
		return 0, fmt.Errorf("probe: %s has no oom_kill counter (kernel older than 4.13?)", filepath.Join(root, name))
	}
	return n, nil
}
