package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/stack"
)

// leakMode makes TestLeakHelper a child's whole job (see TestNoLeaks).
var leakMode = flag.String("lab.leak", "", "run TestLeakHelper: start a pod, then pass, fail, panic or wait (a child of TestNoLeaks)")

// leakWait bounds how long a "wait" child waits to be signalled.
const leakWait = 60 * time.Second

// TestLeakHelper starts a pod, says so on stdout, then ends as -lab.leak
// says. It runs only as TestNoLeaks' child.
func TestLeakHelper(t *testing.T) {
	if *leakMode == "" {
		t.Skip("a helper of TestNoLeaks; runs only with -lab.leak")
	}
	stack.Start(t, lab.Session, podspec.New(lab.Image, podspec.WithSampler(false)),
		stack.Ident{Condition: "leak-" + *leakMode, Run: 1})
	fmt.Printf("LEAKHELPER READY series=%s\n", lab.Session.ID)
	switch *leakMode {
	case "pass":
	case "fail":
		t.Fatal("a failing verdict, on purpose")
	case "panic":
		panic("a panic, on purpose")
	case "wait":
		time.Sleep(leakWait)
	default:
		t.Fatalf("-lab.leak=%q: want pass, fail, panic or wait", *leakMode)
	}
}

// child is a test binary running TestLeakHelper.
type child struct {
	cmd    *exec.Cmd
	series string
	exited chan error
	waited chan struct{} // closed when the child has exited
	stderr bytes.Buffer  // read only after waited is closed
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startChild runs bin's TestLeakHelper in mode and waits until its pod is
// up; extra are more test flags.
func startChild(t *testing.T, bin, mode string, extra ...string) *child {
	t.Helper()
	args := append([]string{"-test.run", "^TestLeakHelper$", "-lab.leak", mode}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LAB_QUIET=1", "LAB_REPORT_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// The child's stderr is kept, not relayed: its own panics and test
	// lines would read, to go test -json, as this package's.
	c := &child{cmd: cmd, exited: make(chan error, 1), waited: make(chan struct{})}
	cmd.Stderr = &c.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		c.cmd.Process.Kill() // a no-op once it has exited
		select {
		case <-c.waited:
		case <-time.After(10 * time.Second):
			return // its stderr may still be written to
		}
		if t.Failed() {
			t.Logf("the %s child's stderr:\n%s", mode, tail(c.stderr.String(), 40))
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "LEAKHELPER READY series="); ok {
				ready <- s
			}
		}
		err := cmd.Wait()
		close(c.waited)
		c.exited <- err
	}()
	select {
	case c.series = <-ready:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the %s child never started its pod", mode)
	}
	return c
}

// wait is the child's exit code, within limit.
func (c *child) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-c.exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(limit):
		c.cmd.Process.Kill()
		t.Fatalf("the child did not exit within %v", limit)
		return -1
	}
}

// containersOf lists the Docker objects of a series by its label: its
// containers, and any network or volume carrying the lab's label.
func containersOf(t *testing.T, series string) []string {
	t.Helper()
	client := lab.Session.Pool().Client
	cs, err := client.ListContainers(dc.ListContainersOptions{All: true,
		Filters: map[string][]string{"label": {stack.LabelSeries + "=" + series}}})
	require.NoError(t, err)
	var names []string
	for _, c := range cs {
		names = append(names, strings.Join(c.Names, ","))
	}
	nets, err := client.FilteredListNetworks(map[string]map[string]bool{"label": {stack.Label: true}})
	require.NoError(t, err)
	for _, n := range nets {
		names = append(names, "network "+n.Name)
	}
	vols, err := client.ListVolumes(dc.ListVolumesOptions{Filters: map[string][]string{"label": {stack.LabelSeries + "=" + series}}, Context: context.Background()})
	require.NoError(t, err)
	for _, v := range vols {
		names = append(names, "volume "+v.Name)
	}
	return names
}

// buildSelf builds the suite's own test binary, for tests that run it as
// a child.
func buildSelf(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bench.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run(), "build the suite's test binary")
	return bin
}

// TestNoLeaks runs the suite's own binary as a child that starts a pod,
// ends it every way a series can end, then lists Docker objects by the
// child's series label: none may be left. After SIGKILL, which nothing can
// catch, the next start's Reap removes what the killed series left, and
// never a live series' containers.
func TestNoLeaks(t *testing.T) {
	if *leakMode != "" {
		t.Skip("TestNoLeaks' child")
	}
	bin := buildSelf(t)

	cases := []struct {
		name  string
		mode  string
		flags []string
		// signal, when set, is sent once the pod is up.
		signal os.Signal
		code   int
	}{
		{name: "pass", mode: "pass", code: 0},
		{name: "failing-verdict", mode: "fail", code: 1},
		{name: "panic", mode: "panic", code: 2},
		{name: "sigint", mode: "wait", signal: syscall.SIGINT, code: 130},
		{name: "sigterm", mode: "wait", signal: syscall.SIGTERM, code: 143},
		// The child's pod is up in about 5 s (the cases above); with 20 s
		// the guard purges at 15 s (Session.Guard's 5 s margin).
		{name: "test-timeout", mode: "wait", flags: []string{"-test.timeout", "20s"}, code: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startChild(t, bin, tc.mode, tc.flags...)
			require.NotEmpty(t, containersOf(t, c.series), "the child's pod is up")
			if tc.signal != nil {
				require.NoError(t, c.cmd.Process.Signal(tc.signal))
			}
			assert.Equal(t, tc.code, c.wait(t, 2*time.Minute), "exit code")
			assert.Empty(t, containersOf(t, c.series), "left behind by series %s", c.series)
		})
	}

	t.Run("sigkill-reaped-live-kept", func(t *testing.T) {
		live := startChild(t, bin, "wait")
		killed := startChild(t, bin, "wait")
		require.NoError(t, killed.cmd.Process.Signal(syscall.SIGKILL))
		killed.wait(t, time.Minute)
		left := containersOf(t, killed.series)
		require.NotEmpty(t, left, "SIGKILL leaves the pod: nothing could catch it")

		reaped, err := lab.Session.Reap()
		require.NoError(t, err)
		var got []string
		for _, r := range reaped {
			got = append(got, fmt.Sprintf("%s: %d (%s)", r.Series, r.Containers, r.Why))
		}
		assert.Contains(t, got, fmt.Sprintf("%s: %d (its process %d is gone)", killed.series, len(left), killed.cmd.Process.Pid))
		assert.Empty(t, containersOf(t, killed.series), "reaped")
		assert.NotEmpty(t, containersOf(t, live.series), "a live series' containers are never reaped")

		require.NoError(t, live.cmd.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 143, live.wait(t, 2*time.Minute))
		assert.Empty(t, containersOf(t, live.series))
	})
}
