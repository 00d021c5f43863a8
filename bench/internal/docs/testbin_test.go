package docs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testbinEvent is the part of a go test -json event TestTestbin reads.
type testbinEvent struct {
	Action, Package, Test, Output string
}

// stopAt is when testbin signals the script's process group: at its
// first event of action ("start": test2json's, which can come before the
// binary has started; "run": the binary's first test), with sig.
type stopAt struct {
	action string
	sig    syscall.Signal
}

// testbin runs fixtures/host/testbin.sh on dir's binaries and pkgs, in a
// process group of its own, and signals that group as stop says; with no
// stop, the script starts with SIGINT ignored, as a job started in the
// background of a script does. It returns the events and the script's
// exit status.
func testbin(t *testing.T, dir string, stop stopAt, pkgs ...string) ([]testbinEvent, int) {
	t.Helper()
	args := append([]string{filepath.Join(root, "fixtures/host/testbin.sh"), dir, "1m"}, pkgs...)
	if stop.action == "" {
		args = append([]string{"-c", `trap '' INT; exec bash "$@"`, "bash"}, args...)
	}
	cmd := exec.Command("bash", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	var evs []testbinEvent
	stopped := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e testbinEvent
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &e), "%s", sc.Text())
		evs = append(evs, e)
		if stop.action != "" && !stopped && e.Action == stop.action {
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, stop.sig))
			stopped = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !assert.ErrorAs(t, err, &exit) {
		return evs, -1
	}
	return evs, cmd.ProcessState.ExitCode()
}

// standIn is a directory of binaries for testbin: stats.test, a shell
// script standing in for stats' test binary, and dir's test2json.
func standIn(t *testing.T, dir, script string) string {
	t.Helper()
	out := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "stats.test"), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	require.NoError(t, os.Link(filepath.Join(dir, "test2json"), filepath.Join(out, "test2json")))
	return out
}

// packageEnds are each package's final action (pass, fail, skip).
func packageEnds(evs []testbinEvent) map[string]string {
	out := map[string]string{}
	for _, e := range evs {
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			out[e.Package] = e.Action
		}
	}
	return out
}

// TestTestbin: make test runs its compiled test binaries through
// fixtures/host/testbin.sh as go test -json runs their packages. A
// package with a binary runs it, in its own directory (stats' tests read
// nothing from it, wsgiapp has none: the fixture is what the Makefile's
// compile leaves); a package with tests and no binary goes through go
// test, which compiles it (or reports its compile error); one without
// tests prints nothing; a failing test, or a binary that exits non-zero
// whatever it printed, fails its package and the script; a binary starts
// with SIGINT at its default even when the script was started with it
// ignored; and a Ctrl-C ends the running binary, even one that could not
// take the signal when it came, and no further package starts.
func TestTestbin(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a test binary")
	}
	dir := t.TempDir()
	build := exec.Command("go", "test", "-c", "-o", dir+"/", "wsgilab/bench/internal/stats")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	build = exec.Command("go", "build", "-o", dir+"/", "cmd/test2json")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	evs, code := testbin(t, dir, stopAt{}, "wsgilab/bench/internal/stats", "wsgilab/bench/internal/buffermodel", "wsgilab/wsgiapp")
	assert.Equal(t, 0, code)
	assert.Equal(t, map[string]string{"wsgilab/bench/internal/stats": "pass", "wsgilab/bench/internal/buffermodel": "pass"}, packageEnds(evs))
	assert.Contains(t, evs, testbinEvent{Action: "start", Package: "wsgilab/bench/internal/stats"})

	// A binary whose test fails: a stand-in prints what a failed test
	// binary prints and exits 1, as one does.
	failing := standIn(t, dir, "echo '--- FAIL: TestX (0.00s)'\necho FAIL\nexit 1")
	evs, code = testbin(t, failing, stopAt{}, "wsgilab/bench/internal/stats")
	assert.Equal(t, 1, code)
	assert.Equal(t, "fail", packageEnds(evs)["wsgilab/bench/internal/stats"])
	// A binary that fails after its tests passed (a TestMain whose
	// journal could not be completed), or before any ran (a TestMain
	// that found no Docker daemon), fails its package, as under go test.
	for _, script := range []string{"echo PASS\nexit 1", "echo 'no Docker daemon answers' >&2\nexit 1"} {
		evs, code = testbin(t, standIn(t, dir, script), stopAt{}, "wsgilab/bench/internal/stats")
		assert.Equal(t, 1, code, script)
		assert.Equal(t, "fail", packageEnds(evs)["wsgilab/bench/internal/stats"], script)
	}

	// Started with SIGINT ignored, the script still gives the binary
	// SIGINT at its default, as go test does: the stand-in prints the
	// signals it ignores.
	evs, code = testbin(t, standIn(t, dir, "grep SigIgn /proc/self/status"), stopAt{}, "wsgilab/bench/internal/stats")
	assert.Equal(t, 0, code)
	i := slices.IndexFunc(evs, func(e testbinEvent) bool { return strings.HasPrefix(e.Output, "SigIgn:") })
	if assert.GreaterOrEqual(t, i, 0, "the stand-in's output: %v", evs) {
		ign, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(evs[i].Output, "SigIgn:")), 16, 64)
		require.NoError(t, err)
		assert.Zero(t, ign&(1<<(syscall.SIGINT-1)), "the binary started with SIGINT ignored: %s", evs[i].Output)
	}

	// A signal while a package runs: its binary ends at once (not after
	// its 30 s), its package ends failed, nothing after it starts, and the
	// script exits 128 + the signal. The stand-in becomes the sleep: a
	// shell that runs it as a child passes a signal that comes between
	// its fork and exec to its own trap, and the sleep never sees it (a
	// Go test binary has no such moment).
	slow := standIn(t, dir, "echo '=== RUN   TestSlow'\nexec sleep 30")
	realEnv, err := exec.LookPath("env")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		stop stopAt
		// slowEnv puts a stand-in env first on PATH that ignores INT for
		// a second, then starts the binary: as a process forked from the
		// script drops a signal that comes before it has reset its traps.
		slowEnv bool
	}{
		{"Ctrl-C", stopAt{"run", syscall.SIGINT}, false},
		{"SIGTERM to the group (a CI runner's cancel, timeout(1))", stopAt{"run", syscall.SIGTERM}, false},
		{"Ctrl-C before the binary can take it", stopAt{"start", syscall.SIGINT}, true},
	} {
		path := os.Getenv("PATH")
		if c.slowEnv {
			fake := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(fake, "env"), []byte("#!/bin/sh\ntrap '' INT\nsleep 1\nexec "+realEnv+" \"$@\"\n"), 0o755))
			path = fake + string(os.PathListSeparator) + path
		}
		t.Setenv("PATH", path)
		start := time.Now()
		evs, code = testbin(t, slow, c.stop, "wsgilab/bench/internal/stats", "wsgilab/bench/internal/buffermodel")
		assert.Equal(t, 128+int(c.stop.sig), code, c.name)
		assert.Less(t, time.Since(start), 20*time.Second, "%s: the binary ended", c.name)
		assert.Equal(t, "fail", packageEnds(evs)["wsgilab/bench/internal/stats"], "%s: the package's end: %v", c.name, evs)
		assert.NotContains(t, packageEnds(evs), "wsgilab/bench/internal/buffermodel", "%s: a package ran after it", c.name)
	}
}
