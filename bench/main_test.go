// Package bench is the lab's entry point: go test cases that run the
// engine's condition tables in real containers and assert the verdicts of
// package verdict on the results. The test files hold tables, t.Run and
// asserts, no logic of their own.
//
// TestMain checks every LAB_* setting, then owns the Docker pool and the
// images; every test starts its own pods through the engine.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/labrun"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// lab is the state TestMain prepares for every test: the engine's Lab and
// the series' environment.
var (
	lab = &labrun.Lab{}
	env report.Environment
	// unguard undoes the session's Guard, set up with the session.
	unguard = func() {}
)

func TestMain(m *testing.M) {
	flag.Parse() // testing.Verbose, below, needs the flags
	code, err := setUp()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
		os.Exit(1)
	}
	if code == 0 {
		job.Start()
		code = m.Run()
		removeChildren()
		lab.DiscardAhead()
		if lab.Safety != nil {
			lab.Safety.Close()
			lab.Reports.SetSafety(lab.Safety.Summary())
		}
		lab.Reports.SetKept(lab.Journal.Kept())
		if code == 0 {
			if err := lab.Journal.Complete(); err != nil {
				fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
				code = 1
			}
		}
		if n, err := lab.Session.Purge(); err != nil || n > 0 {
			fmt.Fprintf(os.Stderr, "wsgilab: removed %d container(s) the tests left (%v)\n", n, err)
		}
	}
	// Up to here a signal purges and exits with its own code; one that
	// came meanwhile is handled now, and this never returns.
	unguard()
	// environment.json goes with a series; a run that measured nothing
	// (make image) writes no report file.
	if lab.Reports == nil {
		os.Exit(code)
	}
	if err := lab.Reports.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// setUp checks the settings before anything starts, reaches the engine,
// removes what a crashed run left and makes sure the images exist. A
// missing daemon is an error, never a skip.
func setUp() (int, error) {
	ctx := context.Background()
	root, err := moduleRoot()
	if err != nil {
		return 1, err
	}
	settings, err := engine.ParseSettings(os.Environ(), root)
	if err != nil {
		return 1, fmt.Errorf("bad settings, nothing was started or written:\n%w", err)
	}
	lab.Settings = settings
	lab.Reports = engine.NewReports(settings.ReportDir, &env)
	filter, err := engine.ParseRunFilter(flagValue("test.run"), flagValue("test.skip"))
	if err != nil {
		return 1, err
	}

	pool, err := dockertest.NewPool("")
	if err == nil {
		err = pool.Client.Ping()
	}
	if err != nil {
		where := os.Getenv("DOCKER_HOST")
		if where == "" {
			where = "the default socket (unix:///var/run/docker.sock)"
		}
		return 1, fmt.Errorf("no Docker daemon answers at %s: %v\n"+
			"Fix: run 'make deps' as root (it starts dockerd, installing Debian's docker.io if needed), "+
			"or start the daemon yourself, or point DOCKER_HOST at a running engine", where, err)
	}
	if lab.Session, err = stack.NewSession(pool); err != nil {
		return 1, err
	}
	// No container outlives the series, from its first on (the versions'
	// run below): Ctrl-C, SIGTERM and the -timeout panic purge it first
	// (a panicking or failing test purges its own pods through
	// t.Cleanup).
	unguard = lab.Session.Guard(testTimeout(), os.Stderr)
	lab.Session.OnStop = func() {
		if err := lab.Reports.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
		}
	}
	reaped, err := lab.Session.Reap()
	for _, r := range reaped {
		fmt.Fprintf(os.Stderr, "wsgilab: removed %d container(s) of dead series %s: %s\n", r.Containers, r.Series, r.Why)
	}
	if err != nil {
		return 1, err
	}

	ver, err := pool.Client.Version()
	if err != nil {
		return 1, fmt.Errorf("docker version: %w", err)
	}
	info, err := pool.Client.Info()
	if err != nil {
		return 1, fmt.Errorf("docker info: %w", err)
	}
	env.Docker = report.Docker{
		ServerVersion: info.ServerVersion, APIVersion: ver.Get("ApiVersion"), Kernel: info.KernelVersion,
		OS: info.OperatingSystem, Arch: ver.Get("Arch"), NCPU: info.NCPU, MemTotal: info.MemTotal,
		StorageDriver: info.Driver, CgroupDriver: info.CgroupDriver, Name: info.Name,
	}

	if env.BaseImage, env.LabImage, env.Versions, err = labImages(ctx, pool.Client, settings); err != nil {
		return 1, err
	}
	lab.Image = env.LabImage.Ref
	// What could disturb the series, read while it runs nothing.
	if env.Machine, err = engine.ReadMachine("/proc", "/proc", engine.DefaultMachineWindow, time.Sleep); err != nil {
		return 1, err
	}
	env.Machine.CalibrationMBps = engine.Calibrate()
	if env.Machine.Busy != "" {
		fmt.Fprintf(os.Stderr, "wsgilab: a busy machine: %s; the verdicts will say so\n", env.Machine.Busy)
	}
	// The safety stop watches the series from here on, and the journal
	// gives back what an interrupted series of the same fingerprint did.
	env.Hardening = podspec.DefaultHardening
	fp := engine.NewFingerprint(lab.Image, env.BaseImage.Ref, settings, engine.Host{CPUModel: env.Machine.CPUModel,
		CPUs: env.Machine.CPUs, Kernel: env.Docker.Kernel, Docker: env.Docker.ServerVersion})
	env.Shard = report.Shard{Index: settings.Shard.Index, Count: max(settings.Shard.Count, 1), Profile: settings.Profile,
		Series: fp.SeriesHash(), Conditions: []string{}, Attempted: []string{}}
	for _, c := range settings.Plan().Table() {
		env.Shard.Conditions = append(env.Shard.Conditions, c.ID)
	}
	if lab.Journal, env.Resume, err = engine.OpenJournal(settings.ReportDir, fp, settings.Resume); err != nil {
		return 1, err
	}
	if env.Resume.Resumed {
		fmt.Fprintf(os.Stderr, "wsgilab: resuming the series in %s: its journal holds %d completed unit(s); only the missing ones run\n",
			settings.ReportDir, len(env.Resume.Kept))
	}
	// What the job will run, and how long it should take, before it runs:
	// printed before any test, so go test -json shows it too.
	job = newJob(filter, env.Resume.Kept)
	job.Quiet = settings.Quiet
	if !settings.Quiet {
		if err := job.Plan(os.Stderr, fmt.Sprintf("wsgilab: the job (profile %s)", settings.Profile)); err != nil {
			return 1, err
		}
	}
	job.Out, job.Verbose = progressOut()
	lab.Log = os.Stderr
	env.Safety = report.Safety{Enabled: settings.Safety.Enabled, Threshold: settings.Safety.Config.Threshold,
		WindowS: settings.Safety.Config.Window.Seconds(), Aborts: append([]report.Abort{}, lab.Journal.Aborts()...)}
	if settings.Safety.Enabled {
		rule := settings.Safety.Redo
		env.Safety.Redo = &rule
	}
	if lab.Safety, err = lab.SafetyStop("/proc", "/sys/fs/cgroup"); err != nil {
		return 1, err
	}
	env.GeneratedAt = time.Now().UTC()
	env.GoVersion = runtime.Version()
	env.GitCommit, env.GitDirty = gitState(root)
	env.Pod = podspec.New(lab.Image)
	env.Inspections = map[string]probe.Inspection{}
	return 0, nil
}

// testTimeout is go test's -timeout (0 when there is none).
func testTimeout() time.Duration {
	d, _ := time.ParseDuration(flagValue("test.timeout"))
	return d
}

// progressOut is where the job's lines go besides t.Log: under go test
// -v, nowhere (t.Log reaches the terminal); under go test -json
// (gotestsum, make test), whose output of a passing test is folded away,
// the terminal itself when there is one (else t.Log's lines stay in
// test.json); else stderr.
func progressOut() (io.Writer, bool) {
	switch flagValue("test.v") {
	case "true":
		return nil, true
	case "test2json":
		tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
		if err != nil {
			return nil, true
		}
		return tty, false
	}
	return os.Stderr, false
}

// flagValue is the test binary's flag name as set ("" when it has none).
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// moduleRoot is the directory holding go.mod, above the package directory
// go test runs in.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return engine.ModuleRoot(dir)
}

// gitState is the commit the lab ran from and whether the tree had
// uncommitted changes; empty outside a git checkout.
func gitState(root string) (string, bool) {
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	status, _ := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(status))) > 0
}
