package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
)

// shardFixture writes a shard's report directory with no runs: what
// Merge checks before reading any run.
func shardFixture(t *testing.T, index, count int, series, cpu string) string {
	t.Helper()
	dir := t.TempDir()
	env := report.Environment{Shard: report.Shard{Index: index, Count: count, Profile: "ci", Series: series, Conditions: []string{}},
		Machine: report.Machine{CPUModel: cpu, CPUs: 2}, Docker: report.Docker{ServerVersion: "20.10.24", Kernel: "6.18.0", Name: "node"}}
	require.NoError(t, report.WriteFile(dir, "environment.json", report.JSON(env)))
	require.NoError(t, report.WriteFile(dir, "runs.json", report.JSON([]report.Run{})))
	return dir
}

func TestMergeRefusesOtherSeries(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "aaaa", "AMD EPYC"), shardFixture(t, 1, 2, "bbbb", "AMD EPYC")
	out := filepath.Join(t.TempDir(), "merged")
	_, err := Merge(out, []string{a, b}, MergeOptions{AllowMismatch: true})
	require.ErrorIs(t, err, ErrMerge)
	assert.Contains(t, err.Error(), b+" is shard 1/2 of series bbbb (profile ci), "+a+" of series aaaa (profile ci)")
	assert.Contains(t, err.Error(), "shards must run the same code, images and settings")
	assert.NoDirExists(t, out, "a refused merge writes nothing")
}

func TestMergeRefusesMissingOrRepeatedShards(t *testing.T) {
	a, a2 := shardFixture(t, 0, 3, "s", "AMD EPYC"), shardFixture(t, 0, 3, "s", "AMD EPYC")
	_, err := Merge(filepath.Join(t.TempDir(), "m"), []string{a, a2}, MergeOptions{})
	require.ErrorIs(t, err, ErrMerge)
	assert.Contains(t, err.Error(), "shard 0/3 is in ")
	assert.Contains(t, err.Error(), "shard 1/3 is missing")
	assert.Contains(t, err.Error(), "shard 2/3 is missing")

	_, err = Merge(filepath.Join(t.TempDir(), "m"), []string{t.TempDir()}, MergeOptions{})
	assert.ErrorContains(t, err, "is not a shard's report directory")
}

func TestMergeRefusesOtherMachinesUnlessAllowed(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "Intel Xeon")
	out := filepath.Join(t.TempDir(), "merged")
	_, err := Merge(out, []string{a, b}, MergeOptions{})
	require.ErrorIs(t, err, ErrMerge)
	assert.Contains(t, err.Error(), "cpu_model: shard 0/2 ("+a+") AMD EPYC, shard 1/2 ("+b+") Intel Xeon")
	assert.Contains(t, err.Error(), "-allow-mismatch")
	assert.NoDirExists(t, out)

	m, err := Merge(out, []string{b, a}, MergeOptions{AllowMismatch: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"cpu_model: shard 0/2 (" + a + ") AMD EPYC, shard 1/2 (" + b + ") Intel Xeon"}, m.Mismatches)
	var env report.Environment
	require.NoError(t, readStrict(out, "environment.json", &env))
	require.NotNil(t, env.Merged)
	assert.Equal(t, m.Mismatches, env.Merged.Mismatches)
	assert.Len(t, env.Merged.Shards, 2)
	assert.Equal(t, 1, env.Shard.Count)
	assert.Equal(t, "s", env.Shard.Series)
	assert.Len(t, env.Shard.Conditions, len(Plans["ci"].Table()), "the merged series' table")
	assert.Empty(t, env.Shard.Attempted)
	assert.Equal(t, env.Shard.Conditions, env.Merged.Unrun, "shards that ran nothing leave the whole table unrun")
	assert.Equal(t, env.Merged.Unrun, m.Unrun)
}

func TestMergeNeverOverwrites(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "claims.json"), []byte("[]"), 0o644))
	_, err := Merge(out, []string{a, b}, MergeOptions{})
	assert.ErrorContains(t, err, "already holds 1 entries")
	_, err = Merge(a, []string{a, b}, MergeOptions{})
	assert.ErrorContains(t, err, "would overwrite shard")
}

func TestMergeRefusesAConditionRunByAnotherShard(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	for dir, owns := range map[string][]string{a: {"direct-0dl"}, b: {"direct-1dl"}} {
		var env report.Environment
		require.NoError(t, readStrict(dir, "environment.json", &env))
		env.Shard.Conditions = owns
		require.NoError(t, report.WriteFile(dir, "environment.json", report.JSON(env)))
	}
	require.NoError(t, report.WriteFile(b, "runs.json", report.JSON([]report.Run{{Condition: "direct-0dl", Run: 1}})))
	_, err := Merge(filepath.Join(t.TempDir(), "m"), []string{a, b}, MergeOptions{})
	require.ErrorIs(t, err, ErrMerge)
	assert.Contains(t, err.Error(), b+" ran direct-0dl run 1, which another shard owns")
}

func TestCollectRefusesStrangeRecords(t *testing.T) {
	out := filepath.Join(t.TempDir(), "c")
	err := Collect(out, "ci", "s", []Record{{Condition: "direct-2dl", Run: 1}, {Condition: "direct-2dl", Run: 1}, {Condition: "no-such", Run: 1}}, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "direct-2dl run 1: given twice")
	assert.Contains(t, err.Error(), "no-such run 1: not a condition of profile ci")
	assert.NoDirExists(t, out)
	assert.ErrorContains(t, Collect(out, "nope", "s", []Record{{}}, false), `profile "nope": want one of ci, full`)
	assert.ErrorContains(t, Collect(out, "ci", "", []Record{{}}, false), "needs the series' name")
}

// A condition a shard started but got no run of is missing data, as in an
// unsharded series; one no shard started is unrun.
func TestMergeStartedWithoutRunIsMissing(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	var env report.Environment
	require.NoError(t, readStrict(a, "environment.json", &env))
	env.Shard.Conditions, env.Shard.Attempted = []string{"direct-2dl", "direct-0dl"}, []string{"direct-2dl"}
	require.NoError(t, report.WriteFile(a, "environment.json", report.JSON(env)))
	m, err := Merge(filepath.Join(t.TempDir(), "m"), []string{a, b}, MergeOptions{})
	require.NoError(t, err)
	status := map[string]string{}
	for _, c := range m.Claims {
		status[c.ID] = c.Status
	}
	assert.Equal(t, report.StatusMissing, status["direct-2dl-stalls"])
	assert.Equal(t, report.StatusNotRun, status["direct-0dl-idle"])
	assert.Contains(t, m.Unrun, "direct-0dl")
	assert.NotContains(t, m.Unrun, "direct-2dl")
}

// A condition a shard's machine was too busy for stays unjudged in the
// merge: its verdicts say so, from any shard.
func TestMergeKeepsTooBusy(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	var env report.Environment
	require.NoError(t, readStrict(b, "environment.json", &env))
	env.Shard.Conditions, env.Shard.Attempted = []string{"direct-2dl"}, []string{"direct-2dl"}
	env.Safety.TooBusy = []report.TooBusy{{Unit: "direct-2dl run 1", Condition: "direct-2dl", Attempts: 4, Last: "disturbed: lag-second 3 ms > 2"}}
	require.NoError(t, report.WriteFile(b, "environment.json", report.JSON(env)))
	m, err := Merge(filepath.Join(t.TempDir(), "m"), []string{a, b}, MergeOptions{})
	require.NoError(t, err)
	for _, c := range m.Claims {
		if c.ID == "direct-2dl-stalls" {
			assert.Equal(t, report.StatusTooBusy, c.Status)
			assert.Contains(t, c.Note, "machine too busy, not judged: direct-2dl run 1: 4 attempts")
			return
		}
	}
	t.Fatal("no claim direct-2dl-stalls")
}

// A merge that fails half way leaves no output and no partial directory.
func TestMergeFailureLeavesNothing(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	require.NoError(t, os.WriteFile(filepath.Join(a, "throughput.json"), []byte("{not json"), 0o644))
	parent := t.TempDir()
	out := filepath.Join(parent, "merged")
	_, err := Merge(out, []string{a, b}, MergeOptions{})
	require.Error(t, err)
	ents, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, ents, "the failed merge left %v", ents)
}

func TestCollectRefusesMixedNodesAndOtherPods(t *testing.T) {
	c := Pick(ArticleA, "direct-2dl")[0]
	rec := func(run int, cpu string) Record {
		r := Record{Condition: c.ID, Run: run, Pod: c.Pod("wsgilab:x")}
		r.Client.Node.CPUModel = cpu
		return r
	}
	out := filepath.Join(t.TempDir(), "c")
	err := Collect(out, "ci", "s", []Record{rec(1, "AMD EPYC"), rec(2, "Intel Xeon")}, false)
	assert.ErrorContains(t, err, "direct-2dl run 2 ran on Intel Xeon")
	assert.ErrorContains(t, err, "the node pool is not uniform")
	other := rec(3, "AMD EPYC")
	other.Pod.App.CPUs = 1
	err = Collect(out, "ci", "s", []Record{rec(1, "AMD EPYC"), other}, false)
	assert.ErrorContains(t, err, "direct-2dl run 3: its pod is not the table's")
	assert.NoDirExists(t, out)
}

// A host's sysctls (here the TCP hash's size) that differ between shards
// are a mismatch; the per-condition tcp_wmem is not.
func TestMergeComparesHostSysctls(t *testing.T) {
	a, b := shardFixture(t, 0, 2, "s", "AMD EPYC"), shardFixture(t, 1, 2, "s", "AMD EPYC")
	for dir, v := range map[string][3]string{a: {"direct-0dl", "4096", "4096 16384 4194304"}, b: {"direct-1dl", "-262144", "4096 16384 8388608"}} {
		rec := Record{Condition: v[0], Run: 1}
		rec.Client.Sysctls = map[string]string{"net.ipv4.tcp_ehash_entries": v[1], "net.ipv4.tcp_wmem": v[2]}
		require.NoError(t, report.WriteFile(filepath.Join(dir, "raw"), v[0]+"-run1.json", report.JSON(rec)))
		require.NoError(t, report.WriteFile(dir, "runs.json", report.JSON([]report.Run{{Condition: v[0], Run: 1}})))
		var env report.Environment
		require.NoError(t, readStrict(dir, "environment.json", &env))
		env.Shard.Conditions = []string{v[0]}
		require.NoError(t, report.WriteFile(dir, "environment.json", report.JSON(env)))
	}
	_, err := Merge(filepath.Join(t.TempDir(), "m"), []string{a, b}, MergeOptions{})
	require.ErrorIs(t, err, ErrMerge)
	assert.Contains(t, err.Error(), `net.ipv4.tcp_ehash_entries: shard 0/2 (`+a+`) "4096", shard 1/2 (`+b+`) "-262144"`)
	assert.NotContains(t, err.Error(), "tcp_wmem")
}
