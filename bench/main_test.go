// Package bench is the lab: go test cases that start real servers in
// containers, measure them and assert the articles' claims.
//
// TestMain owns the Docker pool and the images; every test starts its own
// pods through the stack package.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// lab is the state TestMain prepares for every test.
var lab struct {
	pool      *dockertest.Pool
	image     string // the lab image reference
	reportDir string
	env       report.Environment
}

func TestMain(m *testing.M) {
	code, err := setUp()
	if err != nil {
		fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
		os.Exit(1)
	}
	if code == 0 {
		code = m.Run()
	}
	if err := report.WriteFile(lab.reportDir, "environment.json", report.JSON(lab.env)); err != nil {
		fmt.Fprintf(os.Stderr, "wsgilab: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

// setUp reaches the engine, removes what a crashed run left and makes sure
// the images exist. A missing daemon is an error, never a skip.
func setUp() (int, error) {
	ctx := context.Background()
	root, err := moduleRoot()
	if err != nil {
		return 1, err
	}
	lab.reportDir = os.Getenv("LAB_REPORT_DIR")
	if lab.reportDir == "" {
		lab.reportDir = filepath.Join(root, report.DefaultDir)
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
	lab.pool = pool

	if n, err := stack.RemoveStale(pool.Client); err != nil {
		return 1, err
	} else if n > 0 {
		fmt.Fprintf(os.Stderr, "wsgilab: removed %d container(s) left by an earlier run\n", n)
	}

	ver, err := pool.Client.Version()
	if err != nil {
		return 1, fmt.Errorf("docker version: %w", err)
	}
	info, err := pool.Client.Info()
	if err != nil {
		return 1, fmt.Errorf("docker info: %w", err)
	}
	lab.env.Docker = report.Docker{
		ServerVersion: info.ServerVersion, APIVersion: ver.Get("ApiVersion"), Kernel: info.KernelVersion,
		OS: info.OperatingSystem, Arch: ver.Get("Arch"), NCPU: info.NCPU, MemTotal: info.MemTotal,
		StorageDriver: info.Driver, CgroupDriver: info.CgroupDriver,
	}

	base, err := image.EnsureBase(ctx, pool.Client, os.Stderr)
	if err != nil {
		return 1, err
	}
	agent, err := image.BuildAgent(ctx, lab.env.Docker.Arch)
	if err != nil {
		return 1, err
	}
	labImage, err := image.EnsureLab(ctx, pool.Client, base.Ref, agent)
	if err != nil {
		return 1, err
	}
	lab.image = labImage.Ref
	lab.env.BaseImage, lab.env.LabImage = base, labImage
	if base.Built || labImage.Built {
		fmt.Fprintf(os.Stderr, "wsgilab: built %s in %v, %s in %v\n",
			base.Ref, base.Duration.Round(time.Millisecond), labImage.Ref, labImage.Duration.Round(time.Millisecond))
	}

	if lab.env.Versions, err = stack.ReadVersions(pool, lab.image); err != nil {
		return 1, err
	}
	lab.env.GeneratedAt = time.Now().UTC()
	lab.env.GoVersion = runtime.Version()
	lab.env.GitCommit, lab.env.GitDirty = gitState(root)
	lab.env.Pod = stack.New(lab.image)
	lab.env.Inspections = map[string]probe.Inspection{}
	return 0, nil
}

// moduleRoot is the directory holding go.mod, above the package directory
// go test runs in.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
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
