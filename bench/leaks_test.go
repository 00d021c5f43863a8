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
	"strings"
	"syscall"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/stack"
)

// leakMode makes TestLeakHelper a child's whole job (see TestNoLeaks).
var leakMode = flag.String("lab.leak", "", "run TestLeakHelper: start a pod, then pass, fail, panic or wait; or life: two runs, tracing each step, then wait (a child of TestNoLeaks)")

// leakWait bounds how long a "wait" child waits to be signalled.
const leakWait = 60 * time.Second

// TestLeakHelper starts a pod, says so on stdout, then ends as -lab.leak
// says. It runs only as TestNoLeaks' child.
func TestLeakHelper(t *testing.T) {
	if *leakMode == "" {
		t.Skip("a helper of TestNoLeaks; runs only with -lab.leak")
	}
	if *leakMode == "life" {
		lifeOfRuns(t)
		return
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
		t.Fatalf("-lab.leak=%q: want pass, fail, panic, wait or life", *leakMode)
	}
}

// lifeOfRuns is the "life" child: two short runs of direct-0dl, the
// second's pod opened ahead during the first's collection, each step of
// their containers' lives printed as it happens (LEAKTRACE), then a wait
// to be signalled.
func lifeOfRuns(t *testing.T) {
	lab.Session.Trace = func(e string) { fmt.Printf("LEAKTRACE %s\n", e) }
	fmt.Printf("LEAKHELPER READY series=%s\n", lab.Session.ID)
	c := engine.ArticleA[0]
	c.ID, c.FastRequests = "leak-life", 8 // a 1 s window
	lab.Then(c, 2)
	for k := 1; k <= 2; k++ {
		if _, err := lab.RunA(t, c, k); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("LEAKTRACE done")
	time.Sleep(leakWait)
}

// child is a test binary running TestLeakHelper.
type child struct {
	cmd    *exec.Cmd
	series string
	exited chan error
	waited chan struct{} // closed when the child has exited
	// events are the child's LEAKTRACE lines, as they come.
	events chan string
	stderr bytes.Buffer // read only after waited is closed
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
	// The children measure nothing, and run two at a time: each one's
	// safety stop would take the other's pod for a busy host and make
	// it wait for calm (a "life" child waited 106 s so).
	cmd.Env = childEnv(t, "LAB_QUIET=1", "LAB_SAFETY_CPU=off", "LAB_REPORT_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// The child's stderr is kept, not relayed: its own panics and test
	// lines would read, to go test -json, as this package's.
	c := &child{cmd: cmd, exited: make(chan error, 1), waited: make(chan struct{}), events: make(chan string, 256)}
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
			if e, ok := strings.CutPrefix(sc.Text(), "LEAKTRACE "); ok {
				select {
				case c.events <- e:
				default: // nobody listens: the case signals on an earlier one
				}
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

// lifePoints are the steps of a "life" child at which TestNoLeaks signals
// it: the nth trace event that begins with event.
var lifePoints = []struct {
	name, event string
	nth         int
}{
	{"first-create", "create client container of leak-life r1", 1},
	{"client-created", "created client container of leak-life r1", 1},
	{"pod-creating", "create app container of leak-life r1", 1},
	{"pod-half-created", "created ", 2},
	{"window", "load leak-life r1", 1},
	{"collect-and-ahead", "collect leak-life r1", 1},
	{"ahead-creating", "create client container of leak-life r2", 1},
	{"ahead-pod-creating", "create app container of leak-life r2", 1},
	{"teardown", "remove ", 1},
	{"second-window", "load leak-life r2", 1},
	{"last-teardown", "remove ", 5},
	{"done", "done", 1},
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
	bin := suiteBinary(t)

	// SIGKILL first, alone: the children below run two at a time
	// (t.Parallel, -test.parallel's GOMAXPROCS), and a child's start reaps
	// a dead series, which would take this case's Reap from it.
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
			t.Parallel()
			c := startChild(t, bin, tc.mode, tc.flags...)
			require.NotEmpty(t, containersOf(t, c.series), "the child's pod is up")
			if tc.signal != nil {
				require.NoError(t, c.cmd.Process.Signal(tc.signal))
			}
			assert.Equal(t, tc.code, c.wait(t, 2*time.Minute), "exit code")
			assert.Empty(t, containersOf(t, c.series), "left behind by series %s", c.series)
		})
	}

	// A signal at any step of a run's life: while a pod's containers are
	// being created (the first run's, and the one opened ahead during the
	// first run's collection), in a window, while a pod is torn down, and
	// after. The child prints each step as it happens and is signalled at
	// once, so the signal lands while that step is in flight.
	for i, p := range lifePoints {
		sig, code := os.Signal(syscall.SIGINT), 130
		if i%2 == 1 {
			sig, code = syscall.SIGTERM, 143
		}
		t.Run(fmt.Sprintf("life-%02d-%s", i+1, p.name), func(t *testing.T) {
			t.Parallel()
			c := startChild(t, bin, "life")
			seen := 0
			timeout := time.After(2 * time.Minute)
			for seen < p.nth {
				select {
				case e := <-c.events:
					if strings.HasPrefix(e, p.event) {
						seen++
					}
				case <-timeout:
					t.Fatalf("the child never reached %q (#%d)", p.event, p.nth)
				}
			}
			require.NoError(t, c.cmd.Process.Signal(sig))
			assert.Equal(t, code, c.wait(t, 2*time.Minute), "exit code")
			assert.Empty(t, containersOf(t, c.series), "left behind by series %s, signalled at %q #%d", c.series, p.event, p.nth)
		})
	}

}
