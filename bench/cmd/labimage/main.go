// Command labimage finds or builds the lab's images (image.Ensure: the
// base image from Debian's archive with the host's apt sources hidden, and
// the lab layer) without running a test, and writes what it found or built
// to -record, with the base image's build output; then it builds the
// example stacks' app images (exampleApps). make test runs it beside
// the compile and the unit packages, so that a clean machine's base image
// build (2 to 2.5 minutes here) overlaps them instead of starting the
// series; the series then finds the images and reads the record
// (LAB_IMAGE_RECORD) to report their build.
//
//	labimage -record reports/out/image-record.json
//
// It reads the LAB_* settings as the test binary does (LAB_DEBIAN_MIRROR
// and LAB_DEBIAN_SECURITY choose the archive) and exits 2 on a bad one, 1
// when the build fails; the record is written whole or not at all.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stackfile"
)

// buildTimeout bounds the whole step: the base image took 112 to 156 s on
// a clean machine here alone, 227 to 230 s beside make test's compile.
const buildTimeout = 15 * time.Minute

func main() {
	record := flag.String("record", "", "write what was found or built to this file (JSON), for LAB_IMAGE_RECORD (required)")
	flag.Parse()
	if *record == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "labimage: usage: labimage -record FILE")
		os.Exit(2)
	}
	wd, err := os.Getwd()
	if err == nil {
		wd, err = engine.ModuleRoot(wd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "labimage:", err)
		os.Exit(2)
	}
	settings, err := engine.ParseSettings(os.Environ(), wd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labimage: bad settings, nothing was started or written:\n%v\n", err)
		os.Exit(2)
	}
	if err := run(settings, wd, *record); err != nil {
		fmt.Fprintln(os.Stderr, "labimage:", err)
		os.Exit(1)
	}
}

func run(settings engine.Settings, wd, record string) error {
	pool, err := dockertest.NewPool("")
	if err == nil {
		err = pool.Client.Ping()
	}
	if err != nil {
		return fmt.Errorf("no Docker daemon answers (run 'make deps' as root): %w", err)
	}
	ver, err := pool.Client.Version()
	if err != nil {
		return fmt.Errorf("docker version: %w", err)
	}
	// make test's Ctrl-C or kill ends the build (its commands run under
	// ctx) rather than leaving it behind.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	var log strings.Builder
	base, lab, err := image.Ensure(ctx, pool.Client, settings.Apt, ver.Get("Arch"), io.MultiWriter(os.Stderr, &log))
	if err != nil {
		return err
	}
	if base.Built || lab.Built {
		fmt.Fprintf(os.Stderr, "labimage: built %s in %v, %s in %v\n", base.Ref, base.Duration.Round(time.Millisecond),
			lab.Ref, lab.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(os.Stderr, "labimage: found %s and %s\n", base.Ref, lab.Ref)
	}
	rec := report.ImageRecord{Base: base, Lab: lab}
	if base.Built {
		rec.Log = log.String()
	}
	if err := report.WriteFile(filepath.Dir(record), filepath.Base(record), report.JSON(rec)); err != nil {
		return err
	}
	exampleApps(ctx, pool.Client, wd, lab.Ref)
	return nil
}

// exampleApps builds the app images of fixtures/stacks' stack files (each
// app directory once) on the lab image, as the stack checks would: the
// same content-addressed images (image.EnsureStackApp), which TestStack
// then finds instead of building them between its runs (about 30 s of
// make test's series here). The builds run at once: each is a container
// made, copied into and committed on the engine's storage, and one after
// another they took 13 to 17 s each here, on the series' way when the
// base image is slow to come. A file or build that fails is only logged:
// the check builds its image itself and reports it. A linked directory is
// not followed.
func exampleApps(ctx context.Context, eng image.Engine, root, lab string) {
	dir := filepath.Join(root, "fixtures", "stacks")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	nested, _ := filepath.Glob(filepath.Join(dir, "*", "stack.yaml"))
	var mu sync.Mutex // one line at a time on stderr
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stderr, format, args...)
	}
	var wg sync.WaitGroup
	dirs := map[string]bool{}
	for _, path := range append(files, nested...) {
		if fi, err := os.Lstat(filepath.Dir(path)); err != nil || !fi.IsDir() {
			continue
		}
		f, err := stackfile.Load(path)
		if err != nil {
			logf("labimage: %s's app image (left to its check): %v\n", path, err)
			continue
		}
		if f.App == nil || dirs[filepath.Join(f.Dir, f.App.Dir)] {
			continue
		}
		dirs[filepath.Join(f.Dir, f.App.Dir)] = true
		wg.Go(func() {
			app, err := image.EnsureStackApp(ctx, eng, lab, f)
			switch {
			case err != nil:
				logf("labimage: %s's app image (left to its check): %v\n", path, err)
			case app.Built:
				logf("labimage: built %s for %s in %v\n", app.Ref, f.Name, app.Duration.Round(time.Millisecond))
			}
		})
	}
	wg.Wait()
}
