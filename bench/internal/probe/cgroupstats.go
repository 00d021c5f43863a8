package probe

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Usage is a cgroup's cumulative CPU and throttling counters and its memory
// at one instant.
type Usage struct {
	// CgroupVersion is 1 or 2.
	CgroupVersion int `json:"cgroup_version"`
	// CPUUsage is the CPU time used since the cgroup was created.
	CPUUsage time.Duration `json:"cpu_usage_ns"`
	// NrPeriods counts CFS periods in which the cgroup ran, NrThrottled
	// those in which it hit its quota.
	NrPeriods     int64         `json:"nr_periods"`
	NrThrottled   int64         `json:"nr_throttled"`
	ThrottledTime time.Duration `json:"throttled_time_ns"`
	MemoryBytes   int64         `json:"memory_bytes"`
	// MemoryPeakBytes is the high-water mark since the cgroup was created,
	// 0 on v2 kernels without memory.peak (before 5.19).
	MemoryPeakBytes int64 `json:"memory_peak_bytes"`
}

// ReadUsage reads the usage of the cgroup mounted at root (in a container,
// /sys/fs/cgroup), v2 when root has cgroup.controllers, v1 otherwise.
func ReadUsage(root string) (Usage, error) {
	return (*files)(nil).usage(root)
}

// usage reads the usage of the cgroup mounted at root through f.
func (f *files) usage(root string) (Usage, error) {
	v2, err := f.exists(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return Usage{}, fmt.Errorf("probe: %w", err)
	}
	if v2 {
		return f.usageV2(root)
	}
	return f.usageV1(root)
}

func (f *files) usageV2(root string) (Usage, error) {
	u := Usage{CgroupVersion: 2}
	stat, err := f.readKeyed(root, "cpu.stat")
	if err != nil {
		return u, err
	}
	usage, ok := stat["usage_usec"]
	if !ok {
		return u, fmt.Errorf("probe: %s has no usage_usec", filepath.Join(root, "cpu.stat"))
	}
	u.CPUUsage = time.Duration(usage) * time.Microsecond
	// The nr_* and throttled_usec keys exist only with the cpu controller
	// enabled; without it nothing is throttled, so 0 is right.
	u.NrPeriods = stat["nr_periods"]
	u.NrThrottled = stat["nr_throttled"]
	u.ThrottledTime = time.Duration(stat["throttled_usec"]) * time.Microsecond
	if u.MemoryBytes, err = f.readInt(root, "memory.current"); err != nil {
		return u, err
	}
	if peak, _ := f.exists(filepath.Join(root, "memory.peak")); peak {
		if u.MemoryPeakBytes, err = f.readInt(root, "memory.peak"); err != nil {
			return u, err
		}
	}
	return u, nil
}

func (f *files) usageV1(root string) (Usage, error) {
	u := Usage{CgroupVersion: 1}
	// cpu and cpuacct are often one hierarchy: Docker mounts it as
	// "cpu,cpuacct" and links cpu and cpuacct to it, other setups mount
	// only the joint folder.
	acct, err := f.firstExisting(root, "cpuacct/cpuacct.usage", "cpu/cpuacct.usage", "cpu,cpuacct/cpuacct.usage")
	if err != nil {
		return u, err
	}
	ns, err := f.readInt(root, acct)
	if err != nil {
		return u, err
	}
	u.CPUUsage = time.Duration(ns)
	cpuStat, err := f.firstExisting(root, "cpu/cpu.stat", "cpu,cpuacct/cpu.stat")
	if err != nil {
		return u, err
	}
	stat, err := f.readKeyed(root, cpuStat)
	if err != nil {
		return u, err
	}
	for _, k := range []string{"nr_periods", "nr_throttled", "throttled_time"} {
		if _, ok := stat[k]; !ok {
			return u, fmt.Errorf("probe: %s has no %s", filepath.Join(root, cpuStat), k)
		}
	}
	u.NrPeriods = stat["nr_periods"]
	u.NrThrottled = stat["nr_throttled"]
	u.ThrottledTime = time.Duration(stat["throttled_time"])
	if u.MemoryBytes, err = f.readInt(root, "memory/memory.usage_in_bytes"); err != nil {
		return u, err
	}
	if u.MemoryPeakBytes, err = f.readInt(root, "memory/memory.max_usage_in_bytes"); err != nil {
		return u, err
	}
	return u, nil
}

// firstExisting is the first of names that exists under root.
func (f *files) firstExisting(root string, names ...string) (string, error) {
	for _, n := range names {
		if ok, err := f.exists(filepath.Join(root, n)); err != nil {
			return "", fmt.Errorf("probe: %w", err)
		} else if ok {
			return n, nil
		}
	}
	return "", fmt.Errorf("probe: none of %s under %s: not a cgroup v1 or v2 mount", strings.Join(names, ", "), root)
}

func (f *files) readInt(root, name string) (int64, error) {
	s, err := f.readLine(root, name)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("probe: %s: %w", filepath.Join(root, name), err)
	}
	return n, nil
}

// readKeyed reads a cgroup flat-keyed file: "key value" lines.
func readKeyed(root, name string) (map[string]int64, error) {
	return (*files)(nil).readKeyed(root, name)
}

func (f *files) readKeyed(root, name string) (map[string]int64, error) {
	s, err := f.readLine(root, name)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("probe: %s: line %q is not 'KEY VALUE'", filepath.Join(root, name), line)
		}
		if out[f[0]], err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("probe: %s: %s: %w", filepath.Join(root, name), f[0], err)
		}
	}
	return out, nil
}

// UsageSeries aggregates Usage samples of one cgroup over a run: Add each,
// then Close to compute. Rates come from the first and last samples.
type UsageSeries struct {
	count       int
	first, last usageSample
	maxMemory   int64
	maxUsage    int64
	throttled   []throttledAt
	sorted      bool // throttled is in time order

	// Filled by Close.
	Samples int `json:"samples"`
	// Window is the time between the first and last samples.
	Window time.Duration `json:"window_ns"`
	// CPUPercent is the average CPU use over Window, 100 for one full core.
	CPUPercent float64 `json:"cpu_percent"`
	// ThrottledShare is the fraction of CFS periods in Window that hit the
	// quota, 0 to 1.
	ThrottledShare float64       `json:"throttled_share"`
	ThrottledTime  time.Duration `json:"throttled_time_ns"`
	// MaxMemoryBytes is the largest usage or peak seen.
	MaxMemoryBytes int64 `json:"max_memory_bytes"`
	// MemoryGrowthBytes is the largest usage seen less the first
	// sample's: what the window added to the container's memory (the
	// peak since its creation, which start-up may have set, left out).
	MemoryGrowthBytes int64 `json:"memory_growth_bytes"`
}

type usageSample struct {
	t time.Duration
	u Usage
}

// throttledAt is a sample's throttled time so far.
type throttledAt struct{ t, throttled time.Duration }

// Add records u, sampled t into the run.
func (s *UsageSeries) Add(t time.Duration, u Usage) {
	if s.count == 0 || t < s.first.t {
		s.first = usageSample{t, u}
	}
	if s.count == 0 || t >= s.last.t {
		s.last = usageSample{t, u}
	}
	s.maxMemory = max(s.maxMemory, u.MemoryBytes, u.MemoryPeakBytes)
	s.maxUsage = max(s.maxUsage, u.MemoryBytes)
	s.throttled = append(s.throttled, throttledAt{t, u.ThrottledTime})
	s.sorted = false
	s.count++
}

// ThrottledOver is the throttled time (cpu.stat's, summed over the CPUs
// the cgroup's threads waited on) between the last sample at or before
// from and the first at or after to: all the throttling that may have
// fallen within [from, to], read at the sampler's ticks, so a span shorter
// than a tick is charged its tick's whole throttling. A span past either
// end of the series is cut to it; 0 with fewer than two samples.
func (s *UsageSeries) ThrottledOver(from, to time.Duration) time.Duration {
	if len(s.throttled) < 2 {
		return 0
	}
	if !s.sorted {
		slices.SortStableFunc(s.throttled, func(a, b throttledAt) int { return cmp.Compare(a.t, b.t) })
		s.sorted = true
	}
	ts := s.throttled
	i, _ := slices.BinarySearchFunc(ts, from, func(x throttledAt, t time.Duration) int { return cmp.Compare(x.t, t) })
	if i == len(ts) || ts[i].t > from { // the last sample before from
		i = max(i-1, 0)
	}
	j, _ := slices.BinarySearchFunc(ts, to, func(x throttledAt, t time.Duration) int { return cmp.Compare(x.t, t) })
	j = min(j, len(ts)-1) // the first sample at or after to
	if j <= i {
		return 0
	}
	return ts[j].throttled - ts[i].throttled
}

// Close computes the aggregates; rates stay 0 with fewer than two samples.
func (s *UsageSeries) Close() {
	s.Samples = s.count
	s.MaxMemoryBytes = s.maxMemory
	s.MemoryGrowthBytes = max(0, s.maxUsage-s.first.u.MemoryBytes)
	s.Window = s.last.t - s.first.t
	if s.count < 2 || s.Window <= 0 {
		return
	}
	first, last := s.first.u, s.last.u
	s.CPUPercent = 100 * float64(last.CPUUsage-first.CPUUsage) / float64(s.Window)
	if periods := last.NrPeriods - first.NrPeriods; periods > 0 {
		s.ThrottledShare = float64(last.NrThrottled-first.NrThrottled) / float64(periods)
	}
	s.ThrottledTime = last.ThrottledTime - first.ThrottledTime
}
