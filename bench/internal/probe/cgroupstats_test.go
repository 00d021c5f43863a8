package probe

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadUsage(t *testing.T) {
	cases := map[string]Usage{
		"v1": {CgroupVersion: 1, CPUUsage: 5123456789, NrPeriods: 4200, NrThrottled: 1300,
			ThrottledTime: 9876543210, MemoryBytes: 48234496, MemoryPeakBytes: 61865984},
		// cpu and cpuacct joint: cpuacct.usage found under cpu/.
		"v1-joint": {CgroupVersion: 1, CPUUsage: 123 * time.Millisecond, NrPeriods: 10,
			MemoryBytes: 2000000, MemoryPeakBytes: 3000000},
		"v2": {CgroupVersion: 2, CPUUsage: 5123456 * time.Microsecond, NrPeriods: 4200, NrThrottled: 1300,
			ThrottledTime: 9876543 * time.Microsecond, MemoryBytes: 48234496, MemoryPeakBytes: 61865984},
		"v2-no-peak": {CgroupVersion: 2, CPUUsage: 777 * time.Microsecond, NrPeriods: 3, NrThrottled: 1,
			ThrottledTime: 50 * time.Microsecond, MemoryBytes: 1 << 20},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadUsage("../../../fixtures/probe/cgroup/" + name)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestReadUsageJointFolderOnly(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"cpu,cpuacct/cpuacct.usage":        "42\n",
		"cpu,cpuacct/cpu.stat":             "nr_periods 5\nnr_throttled 2\nthrottled_time 7\n",
		"memory/memory.usage_in_bytes":     "100\n",
		"memory/memory.max_usage_in_bytes": "200\n",
	}
	for name, body := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o644))
	}
	got, err := ReadUsage(root)
	require.NoError(t, err)
	assert.Equal(t, Usage{CgroupVersion: 1, CPUUsage: 42, NrPeriods: 5, NrThrottled: 2,
		ThrottledTime: 7, MemoryBytes: 100, MemoryPeakBytes: 200}, got)
}

func TestReadUsageNamesMissingFiles(t *testing.T) {
	_, err := ReadUsage(t.TempDir())
	assert.ErrorContains(t, err, "cpuacct/cpuacct.usage")

	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu.stat"), []byte("user_usec 1\n"), 0o644))
	_, err = ReadUsage(root)
	assert.ErrorContains(t, err, "usage_usec")

	require.NoError(t, os.WriteFile(filepath.Join(root, "cpu.stat"), []byte("usage_usec x\n"), 0o644))
	_, err = ReadUsage(root)
	assert.ErrorContains(t, err, filepath.Join(root, "cpu.stat"))
}

func TestUsageSeries(t *testing.T) {
	var s UsageSeries
	// 2 s at a 0.25-core quota: 0.5 s of CPU, 150 of 200 periods throttled.
	s.Add(1*time.Second, Usage{CPUUsage: 10 * time.Second, NrPeriods: 1000, NrThrottled: 100,
		ThrottledTime: 3 * time.Second, MemoryBytes: 50 << 20, MemoryPeakBytes: 60 << 20})
	s.Add(2*time.Second, Usage{CPUUsage: 10*time.Second + 200*time.Millisecond, NrPeriods: 1100, NrThrottled: 170,
		ThrottledTime: 4 * time.Second, MemoryBytes: 70 << 20, MemoryPeakBytes: 60 << 20})
	s.Add(3*time.Second, Usage{CPUUsage: 10*time.Second + 500*time.Millisecond, NrPeriods: 1200, NrThrottled: 250,
		ThrottledTime: 5500 * time.Millisecond, MemoryBytes: 40 << 20, MemoryPeakBytes: 65 << 20})
	s.Close()

	assert.Equal(t, 3, s.Samples)
	assert.Equal(t, 2*time.Second, s.Window)
	assert.InDelta(t, 25.0, s.CPUPercent, 1e-9)
	assert.InDelta(t, 0.75, s.ThrottledShare, 1e-9)
	assert.Equal(t, 2500*time.Millisecond, s.ThrottledTime)
	assert.EqualValues(t, 70<<20, s.MaxMemoryBytes)
	assert.EqualValues(t, 20<<20, s.MemoryGrowthBytes, "the largest usage less the first sample's, never the peak since creation")
}

// ThrottledOver is the throttling between the samples around a span: a
// request of 5 ms inside one 50 ms tick is charged that tick's, one across
// a stall its whole, and the ends cut the span.
func TestUsageSeriesThrottledOver(t *testing.T) {
	var s UsageSeries
	for _, x := range []struct {
		at, throttled time.Duration
	}{{7400 * time.Millisecond, 200 * time.Millisecond}, {0, 0}, {100 * time.Millisecond, 180 * time.Millisecond},
		{150 * time.Millisecond, 182 * time.Millisecond}, {7 * time.Second, 195 * time.Millisecond},
		{7700 * time.Millisecond, 400 * time.Millisecond}, {8100 * time.Millisecond, 520 * time.Millisecond}} {
		s.Add(x.at, Usage{ThrottledTime: x.throttled})
	}
	s.Close()
	ms := time.Millisecond
	assert.Equal(t, 2*ms, s.ThrottledOver(110*ms, 115*ms), "within one tick: the tick's")
	assert.Equal(t, 2*ms, s.ThrottledOver(100*ms, 150*ms), "samples at both ends")
	assert.Equal(t, 325*ms, s.ThrottledOver(7200*ms, 7800*ms), "across the stall")
	assert.Equal(t, 182*ms, s.ThrottledOver(-time.Second, 120*ms), "cut at the first sample")
	assert.Equal(t, 120*ms, s.ThrottledOver(8*time.Second, time.Minute), "cut at the last sample")
	assert.Zero(t, s.ThrottledOver(9*time.Second, time.Minute), "past the last sample")
	var one UsageSeries
	one.Add(0, Usage{ThrottledTime: time.Second})
	assert.Zero(t, one.ThrottledOver(0, time.Second), "one sample")
}

func TestUsageSeriesFewSamples(t *testing.T) {
	var empty UsageSeries
	empty.Close()
	assert.Zero(t, empty.Samples)
	assert.Zero(t, empty.CPUPercent)

	var one UsageSeries
	one.Add(time.Second, Usage{CPUUsage: time.Second, NrPeriods: 10, MemoryBytes: 5, MemoryPeakBytes: 9})
	one.Close()
	assert.Equal(t, 1, one.Samples)
	assert.Zero(t, one.CPUPercent)
	assert.Zero(t, one.ThrottledShare)
	assert.EqualValues(t, 9, one.MaxMemoryBytes)

	// No period elapsed (unlimited CPU): no throttled share, CPU still.
	var unlimited UsageSeries
	unlimited.Add(0, Usage{CPUUsage: 0})
	unlimited.Add(time.Second, Usage{CPUUsage: 1500 * time.Millisecond})
	unlimited.Close()
	assert.InDelta(t, 150.0, unlimited.CPUPercent, 1e-9)
	assert.Zero(t, unlimited.ThrottledShare)
}
