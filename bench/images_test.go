package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stack"
)

// labImages are the series' images and the versions of the lab image's
// components (TestMain). A record that carries versions is a parent
// series' own, written for the children it starts (childEnv): its images,
// checked on the engine, and its versions are taken as they are. Else the
// images are found or built here (image.Ensure), a build of make test's
// image step is reported as theirs (image.Adopt, LAB_IMAGE_RECORD), and
// the versions are read from the lab image.
func labImages(ctx context.Context, eng *dc.Client, settings engine.Settings) (base, labImage report.Image, v report.Versions, err error) {
	if rec := settings.ImageRecord; rec != nil && rec.Versions != nil {
		if base, err = image.Inspect(eng, rec.Base.Ref); err == nil {
			labImage, err = image.Inspect(eng, rec.Lab.Ref)
		}
		if err != nil {
			return base, labImage, v, fmt.Errorf("LAB_IMAGE_RECORD: %w", err)
		}
		return base, labImage, *rec.Versions, nil
	}
	base, labImage, err = image.Ensure(ctx, eng, settings.Apt, env.Docker.Arch, io.MultiWriter(os.Stderr, &baseBuildLog))
	if err != nil {
		return base, labImage, v, err
	}
	base, labImage, stepLog, err := image.Adopt(base, labImage, settings.ImageRecord)
	if err != nil {
		return base, labImage, v, err
	}
	baseBuildLog.WriteString(stepLog)
	if base.Built || labImage.Built {
		by := ""
		if base.By != "" || labImage.By != "" {
			by = " (by " + image.ByImageStep + ", before this series)"
		}
		fmt.Fprintf(os.Stderr, "wsgilab: built %s in %v, %s in %v%s\n",
			base.Ref, base.Duration.Round(time.Millisecond), labImage.Ref, labImage.Duration.Round(time.Millisecond), by)
	}
	v, err = stack.ReadVersions(lab.Session, labImage.Ref)
	return base, labImage, v, err
}

// The children this suite starts (TestShards, TestResume, TestNoLeaks)
// run its own binary (suiteBinary: the one running, which go test or make
// test's compile built; linking it again cost about 3 s of CPU in the
// series), and take its images and versions from a record it writes once
// (labImages): each would otherwise compile labagent again to find the
// lab image by its hash, and run the image to read the versions. The
// record lives in childDir, removed when the tests are over.
var (
	childOnce   sync.Once
	childDir    string
	childBin    string
	childRecord string
	childErr    error
)

// children finds this suite's binary and writes the children's record,
// once.
func children(t *testing.T) {
	t.Helper()
	childOnce.Do(func() {
		if childBin, childErr = os.Executable(); childErr != nil {
			childErr = fmt.Errorf("the suite's own test binary: %w", childErr)
			return
		}
		if childDir, childErr = os.MkdirTemp("", "wsgilab-children-"); childErr != nil {
			return
		}
		childRecord = filepath.Join(childDir, "images.json")
		v := env.Versions
		childErr = report.WriteFile(childDir, "images.json", report.JSON(report.ImageRecord{Base: env.BaseImage, Lab: env.LabImage, Versions: &v}))
	})
	require.NoError(t, childErr)
}

// suiteBinary is the suite's own test binary, for its children.
func suiteBinary(t *testing.T) string {
	children(t)
	return childBin
}

// childEnv is the environment of a child of this suite: this process's,
// with LAB_IMAGE_RECORD naming the series' images and versions, then
// extra.
func childEnv(t *testing.T, extra ...string) []string {
	children(t)
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LAB_IMAGE_RECORD=") {
			out = append(out, kv)
		}
	}
	return append(append(out, "LAB_IMAGE_RECORD="+childRecord), extra...)
}

// removeChildren removes the children's record, once the tests are over.
func removeChildren() {
	if childDir != "" {
		os.RemoveAll(childDir)
	}
}
