package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLimits(t *testing.T) {
	cases := map[string]Limits{
		"v1":           {CgroupVersion: 1, CPUQuotaMicros: 2500, CPUPeriodMicros: 10000, MemoryBytes: 128 << 20},
		"v1-unlimited": {CgroupVersion: 1, CPUQuotaMicros: -1, CPUPeriodMicros: 100000, MemoryBytes: -1},
		"v2":           {CgroupVersion: 2, CPUQuotaMicros: 2000, CPUPeriodMicros: 10000, MemoryBytes: -1},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadLimits("../../../fixtures/cgroup/" + name)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
	l, _ := ReadLimits("../../../fixtures/cgroup/v1")
	assert.InDelta(t, 0.25, l.CPUs(), 1e-9)
}

func TestReadLimitsNamesMissingFile(t *testing.T) {
	_, err := ReadLimits(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cpu/cpu.cfs_quota_us")
}

func TestReadSysctls(t *testing.T) {
	got, err := ReadSysctls("../../../fixtures/proc", Sysctls)
	require.NoError(t, err)
	assert.Equal(t, "4096 131072 6291456", got["net.ipv4.tcp_rmem"])
	assert.Equal(t, "4096 16384 4194304", got["net.ipv4.tcp_wmem"])
	assert.Equal(t, "4096", got["net.core.somaxconn"])
	assert.Equal(t, "131072", got["net.ipv4.tcp_max_tw_buckets"])
	assert.Equal(t, "2048", got["net.ipv4.tcp_max_syn_backlog"])
	assert.NotContains(t, got, "net.ipv4.tcp_ehash_entries", "optional, and not in the fixture's kernel")

	_, err = ReadSysctls("../../../fixtures/proc", []string{"net.ipv4.no_such"})
	assert.ErrorContains(t, err, "net.ipv4.no_such")
}

func TestReadNode(t *testing.T) {
	got, err := ReadNode("../../../fixtures/proc")
	require.NoError(t, err)
	assert.Equal(t, Node{CPUModel: "AMD EPYC", OnlineCPUs: 2, Kernel: "6.18.0-lab"}, got)

	// A tree without cpuinfo is an error, never an empty machine.
	_, err = ReadNode(t.TempDir())
	assert.ErrorContains(t, err, "cpuinfo")
}

func TestReadOOMKills(t *testing.T) {
	for name, want := range map[string]int64{"v1": 2, "v2": 1, "v1-unlimited": 0} {
		got, err := ReadOOMKills("../../../fixtures/cgroup/" + name)
		if err != nil || got != want {
			t.Errorf("%s: ReadOOMKills = %d, %v; want %d", name, got, err, want)
		}
	}
	if _, err := ReadOOMKills(t.TempDir()); err == nil {
		t.Error("ReadOOMKills of an empty tree gave no error")
	}
}
