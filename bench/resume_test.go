package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// TestResume interrupts a series the hard way and resumes it: a child runs
// direct-2dl twice with LAB_RESUME=1 and is SIGKILLed while its second
// run is under way. A child under another fingerprint (LAB_RUNS=3) must be
// refused before it runs anything. A child with the first's settings must
// then keep run 1 exactly as journalled, drop the interrupted run 2, and
// run only run 2. (Two runs, not the article's three: a third run, also
// missing, showed nothing more and cost 12 s of make test.)
func TestResume(t *testing.T) {
	if *leakMode != "" {
		t.Skip("TestNoLeaks' child")
	}
	bin := suiteBinary(t)
	dir := t.TempDir()
	env := childEnv(t, "LAB_QUIET=1", "LAB_RESUME=1", "LAB_RUNS=2", "LAB_REPORT_DIR="+dir)
	args := []string{"-test.run", "^TestArticleA$/^direct-2dl$"}

	first := exec.Command(bin, args...)
	first.Env = env
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	require.NoError(t, first.Start())
	t.Cleanup(func() { first.Process.Kill() })
	// Wait for run 1 in the journal and run 2's pod on the engine.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		require.True(t, time.Now().Before(deadline), "the first child never got to run 2:\n%s", tail(firstErr.String(), 20))
		_, err := os.Stat(filepath.Join(dir, "journal/a/direct-2dl-run1.json"))
		if err == nil && len(runContainers(t, "direct-2dl", 2)) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, first.Process.Signal(os.Kill))
	first.Wait()
	run1, err := os.ReadFile(filepath.Join(dir, "raw/direct-2dl-run1.json"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "journal/a/direct-2dl-run2.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "the interrupted run was journalled")

	// Another fingerprint is refused before anything runs, and leaves
	// the journal as it was.
	other := exec.Command(bin, args...)
	other.Env = append(env, "LAB_RUNS=3")
	out, err := other.CombinedOutput()
	require.Error(t, err, "a series under another fingerprint resumed:\n%s", tail(string(out), 10))
	assert.Contains(t, string(out), "the journal belongs to another series")
	assert.Contains(t, string(out), "it differs from this series in runs (journal 2, now 3);")
	assert.Contains(t, string(out), "make repro FRESH=1")
	assert.FileExists(t, filepath.Join(dir, "journal/a/direct-2dl-run1.json"))
	t.Logf("refused: %s", tail(string(out), 1))

	second := exec.Command(bin, args...)
	second.Env = env
	out, err = second.CombinedOutput()
	require.NoError(t, err, "the resumed series failed:\n%s", tail(string(out), 30))
	assert.Contains(t, string(out), "its journal holds 1 completed unit(s); only the missing ones run")

	var e report.Environment
	readJSON(t, filepath.Join(dir, "environment.json"), &e)
	assert.True(t, e.Resume.Resumed)
	assert.Equal(t, []string{"a/direct-2dl-run1"}, e.Resume.Kept)
	var runs []report.Run
	readJSON(t, filepath.Join(dir, "runs.json"), &runs)
	var ks []int
	for _, r := range runs {
		ks = append(ks, r.Run)
		assert.Less(t, r.WallS, 60.0, "run %d's wall time", r.Run)
	}
	assert.ElementsMatch(t, []int{1, 2}, ks, "runs of the resumed series")
	again, err := os.ReadFile(filepath.Join(dir, "raw/direct-2dl-run1.json"))
	require.NoError(t, err)
	assert.Equal(t, run1, again, "run 1 was kept byte for byte, not run again")
	for k := 1; k <= 2; k++ {
		assert.FileExists(t, filepath.Join(dir, "journal/a", "direct-2dl-run"+strconv.Itoa(k)+".json"))
	}
	assert.FileExists(t, filepath.Join(dir, "journal/complete.json"), "a series that passed is complete")
}

// runContainers lists the engine's lab containers of condition's run k.
func runContainers(t *testing.T, condition string, k int) []dc.APIContainers {
	t.Helper()
	cs, err := lab.Session.Pool().Client.ListContainers(dc.ListContainersOptions{Filters: map[string][]string{
		"label": {stack.LabelCondition + "=" + condition, stack.LabelRun + "=" + strconv.Itoa(k)}}})
	require.NoError(t, err)
	return cs
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v), path)
}
