package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	s, err := ParseShard("1/3")
	require.NoError(t, err)
	assert.Equal(t, Shard{Index: 1, Count: 3}, s)
	assert.True(t, s.Sharded())
	assert.False(t, s.Whole())
	for _, bad := range []string{"", "1", "3/3", "-1/2", "0/0", "a/2", "0/65", "1/2/3"} {
		_, err := ParseShard(bad)
		assert.Error(t, err, bad)
	}
	assert.False(t, Shard{}.Sharded(), "the zero shard is the whole series")
	assert.True(t, Shard{}.Owns(7))
}

// TestShardsPartitionTheTable: for every profile and N, the shards' plans
// together hold each condition of the table exactly once, condition k on
// shard k mod N, and keep the runs per cell.
func TestShardsPartitionTheTable(t *testing.T) {
	for name, p := range Plans {
		table := p.Table()
		require.NotEmpty(t, table, name)
		for _, n := range []int{1, 2, 3, 7} {
			seen := map[string]int{}
			for i := range n {
				part := p.Shard(Shard{Index: i, Count: n})
				assert.Equal(t, p.SweepRuns, part.SweepRuns)
				assert.Equal(t, p.MatrixRuns, part.MatrixRuns)
				for _, c := range part.Table() {
					seen[c.ID]++
					k := indexOf(table, c.ID)
					assert.Equal(t, i, k%n, "%s %d/%d holds %s, place %d", name, i, n, c.ID, k)
				}
			}
			for _, c := range table {
				assert.Equal(t, 1, seen[c.ID], "%s in %d shards of %s", c.ID, n, name)
			}
		}
	}
}

func indexOf(cs []Condition, id string) int {
	for k, c := range cs {
		if c.ID == id {
			return k
		}
	}
	return -1
}

func TestSettingsShard(t *testing.T) {
	s, err := ParseSettings([]string{"LAB_SHARD=1/2"}, "/mod")
	require.NoError(t, err)
	assert.Equal(t, Shard{Index: 1, Count: 2}, s.Shard)
	assert.Less(t, len(s.Plan().Table()), len(s.Table().Table()))
	// The series' hash is the whole series', the same on every shard and
	// host; a journal's fingerprint is its own shard's.
	s0, err := ParseSettings([]string{"LAB_SHARD=0/2"}, "/mod")
	require.NoError(t, err)
	f0, f1 := NewFingerprint("lab", "base", s0, Host{CPUModel: "a"}), NewFingerprint("lab", "base", s, Host{CPUModel: "b"})
	assert.Equal(t, f0.SeriesHash(), f1.SeriesHash())
	assert.NotEqual(t, f0.Hash(), f1.Hash())
	// Runs per cell are the series' own: shards that differ in them are
	// not one series.
	for _, v := range []string{"LAB_SWEEP_RUNS=1", "LAB_MATRIX_RUNS=5", "LAB_RUNS=2", "LAB_PROFILE=full"} {
		other, err := ParseSettings([]string{"LAB_SHARD=1/2", v}, "/mod")
		require.NoError(t, err)
		assert.NotEqual(t, f1.SeriesHash(), NewFingerprint("lab", "base", other, Host{}).SeriesHash(), v)
	}

	_, err = ParseSettings([]string{"LAB_SHARD=2/2"}, "/mod")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `LAB_SHARD="2/2": want i/N with 0 <= i < N <= 64`)
}
