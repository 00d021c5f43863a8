package safety

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Host is the Source of a real host: /proc/stat under ProcRoot for the
// host's busy time, the lab's containers' cgroups under CgroupRoot, and
// the harness' own process (procfs' self), which is the lab's too.
//
// A container that goes away between two reads keeps its last counter in
// the lab's total, so the total never drops; what it used in its final
// interval counts as outside for that one interval, which a window of
// several intervals absorbs. A container whose cgroup is not found adds
// nothing, and the read says so (ErrPartial): on an engine on another
// host its CPU is not on this one anyway, but under rootless Docker or a
// private cgroup namespace the lab's own CPU would count as outside.
type Host struct {
	ProcRoot, CgroupRoot string
	// Containers lists the ids of the lab's containers now.
	Containers func() []string

	mu    sync.Mutex
	files map[string]string        // id → its CPU counter file
	last  map[string]time.Duration // id → its last counter
	gone  time.Duration            // the counters of containers no longer listed
}

// Read implements Source.
func (h *Host) Read() (busy, lab time.Duration, cores int, err error) {
	pfs, err := procfs.NewFS(h.ProcRoot)
	if err != nil {
		return 0, 0, 0, err
	}
	st, err := pfs.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	c := st.CPUTotal
	// Steal is the hypervisor's, idle and iowait are no one's.
	busy = seconds(c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ)
	cores = len(st.CPU)
	self, err := pfs.Self()
	if err != nil {
		return 0, 0, 0, err
	}
	ps, err := self.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	lab, err = h.containers()
	return busy, lab + seconds(ps.CPUTime()), cores, err
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

func (h *Host) containers() (time.Duration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files, h.last = map[string]string{}, map[string]time.Duration{}
	}
	now := map[string]bool{}
	var errs []error
	for _, id := range h.Containers() {
		now[id] = true
		f, ok := h.files[id]
		if !ok {
			if f = cgroupCPUFile(h.CgroupRoot, id); f == "" {
				errs = append(errs, fmt.Errorf("%w: no CPU counter of container %.12s under %s; its CPU counts as outside the lab", ErrPartial, id, h.CgroupRoot))
				continue
			}
			h.files[id] = f
		}
		u, err := readCPUFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since it was listed: gone, below, next time
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.last[id] = u
	}
	var total time.Duration
	for id, u := range h.last {
		if !now[id] {
			h.gone += u
			delete(h.last, id)
			delete(h.files, id)
			continue
		}
		total += u
	}
	return h.gone + total, errors.Join(errs...)
}

// cgroupCPUFile finds container id's CPU counter under root, for cgroup
// v1 (cpuacct.usage, nanoseconds) or v2 (cpu.stat's usage_usec), with
// Docker's cgroupfs or systemd driver; "" when there is none.
func cgroupCPUFile(root, id string) string {
	for _, f := range []string{
		"cpuacct/docker/" + id + "/cpuacct.usage",
		"cpu,cpuacct/docker/" + id + "/cpuacct.usage",
		"cpuacct/system.slice/docker-" + id + ".scope/cpuacct.usage",
		"docker/" + id + "/cpu.stat",
		"system.slice/docker-" + id + ".scope/cpu.stat",
	} {
		p := filepath.Join(root, f)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func readCPUFile(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if filepath.Base(path) == "cpuacct.usage" {
		ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("safety: %s: %w", path, err)
		}
		return time.Duration(ns), nil
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("safety: %s: %w", path, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("safety: %s has no usage_usec", path)
}
