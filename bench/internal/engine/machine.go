package engine

import (
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"wsgilab/bench/internal/report"
)

// Defaults of the machine check.
const (
	// DefaultMachineWindow is how long ReadMachine watches the host's CPU.
	DefaultMachineWindow = time.Second
	// BusyShare is the share of the host's CPU, outside the lab, above
	// which a series is marked as run on a busy machine: a series uses
	// nothing while it is checked, so anything this large is another
	// program's.
	BusyShare = 0.10
	// StealShare is the hypervisor's share above which the same holds.
	StealShare = 0.02
	// calibrationBytes is what the calibration hashes, on one core.
	calibrationBytes = 64 << 20
)

// Sleep waits between ReadMachine's two snapshots; tests replace it.
type Sleep func(time.Duration)

// ReadMachine records what can disturb a series, before it starts: the
// CPU model, the host's busy and stolen shares of CPU time over window,
// and the load average. It reads procRoot's stat, sleeps window, then
// reads procRootAfter's: both are /proc on a real host, and two fixture
// trees in a test (with sleep nil). Busy says why the machine is not
// quiet, when it is not.
func ReadMachine(procRoot, procRootAfter string, window time.Duration, sleep Sleep) (report.Machine, error) {
	var m report.Machine
	before, err := procfs.NewFS(procRoot)
	if err != nil {
		return m, err
	}
	after, err := procfs.NewFS(procRootAfter)
	if err != nil {
		return m, err
	}
	info, err := before.CPUInfo()
	if err != nil {
		return m, fmt.Errorf("engine: cpuinfo: %w", err)
	}
	if len(info) > 0 {
		m.CPUModel, m.CPUs = info[0].ModelName, len(info)
	}
	s0, err := before.Stat()
	if err != nil {
		return m, fmt.Errorf("engine: stat: %w", err)
	}
	if sleep != nil {
		sleep(window)
	}
	s1, err := after.Stat()
	if err != nil {
		return m, fmt.Errorf("engine: stat: %w", err)
	}
	a, b := s0.CPUTotal, s1.CPUTotal
	busy := (b.User - a.User) + (b.Nice - a.Nice) + (b.System - a.System) + (b.IRQ - a.IRQ) + (b.SoftIRQ - a.SoftIRQ)
	steal := b.Steal - a.Steal
	total := busy + steal + (b.Idle - a.Idle) + (b.Iowait - a.Iowait)
	if total <= 0 {
		return m, fmt.Errorf("engine: no CPU time passed between the two reads of %s/stat", procRoot)
	}
	m.WindowS = window.Seconds()
	m.BusyShare, m.StealShare = busy/total, steal/total
	if la, err := after.LoadAvg(); err == nil {
		m.LoadAvg1 = la.Load1
	}
	switch {
	case m.BusyShare > BusyShare:
		m.Busy = fmt.Sprintf("other programs used %.0f %% of the CPU before the series (threshold %.0f %%)", 100*m.BusyShare, 100*BusyShare)
	case m.StealShare > StealShare:
		m.Busy = fmt.Sprintf("the hypervisor stole %.1f %% of the CPU before the series (threshold %.0f %%)", 100*m.StealShare, 100*StealShare)
	}
	return m, nil
}

// Calibrate times SHA-256 over 64 MiB on one core: the machine's
// single-core speed in MB/s, to tell a slower machine from a slower lab.
func Calibrate() float64 {
	buf := make([]byte, 1<<20)
	h := sha256.New()
	start := time.Now()
	for range calibrationBytes / len(buf) {
		h.Write(buf)
	}
	return float64(calibrationBytes) / 1e6 / time.Since(start).Seconds()
}
