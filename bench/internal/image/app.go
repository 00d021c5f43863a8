package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/report"
)

// AppRepository holds the images built from stack files' app directories.
const AppRepository = "wsgilab-stack"

const appDockerfile = `FROM %s
COPY app/ %s/
`

// EnsureApp finds or builds, through the Docker API, an image FROM from
// with the files of app under root. With ref empty it is named
// AppRepository:<hash of the recipe and the files> and one already built
// is reused; a ref of the caller's (a team's own tag) is built each time,
// Docker's build cache keeping that quick. Dot files and __pycache__ are
// left out. No registry is asked: from must be on the engine.
func EnsureApp(ctx context.Context, eng Engine, from string, app fs.FS, root, ref string) (report.Image, error) {
	start := time.Now()
	df := fmt.Sprintf(appDockerfile, from, root)
	files := fs.FS(app)
	tag, err := shortHash(
		func(w io.Writer) error { _, err := io.WriteString(w, df); return err },
		func(w io.Writer) error { return hashFS(w, appFiles{files}) },
	)
	if err != nil {
		return report.Image{}, fmt.Errorf("image: hash app directory: %w", err)
	}
	fixed := ref == ""
	if fixed {
		ref = AppRepository + ":" + tag
		if img, err := eng.InspectImage(ref); err == nil {
			return report.Image{Ref: ref, ID: img.ID, Duration: time.Since(start)}, nil
		} else if !errors.Is(err, dc.ErrNoSuchImage) {
			return report.Image{}, fmt.Errorf("image: inspect %s: %w", ref, err)
		}
	}
	buildCtx, err := tarContext(df, func(add addFunc) error { return addFS(add, appFiles{files}, "app/") })
	if err != nil {
		return report.Image{}, err
	}
	var out bytes.Buffer
	if err := eng.BuildImage(dc.BuildImageOptions{
		Name: ref, InputStream: buildCtx, OutputStream: &out, RmTmpContainer: true, ForceRmTmpContainer: true,
		Context: ctx, Labels: map[string]string{"wsgilab.app-hash": tag},
	}); err != nil {
		return report.Image{}, fmt.Errorf("image: build %s from %s: %w\n%s", ref, from, err, out.String())
	}
	img, err := eng.InspectImage(ref)
	if err != nil {
		return report.Image{}, fmt.Errorf("image: inspect %s after its build: %w", ref, err)
	}
	return report.Image{Ref: ref, ID: img.ID, Built: true, Duration: time.Since(start)}, nil
}

// appFiles hides dot files and __pycache__ from fs.WalkDir.
type appFiles struct{ fs.FS }

func (a appFiles) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(a.FS, name)
	var out []fs.DirEntry
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "__pycache__" {
			out = append(out, e)
		}
	}
	return out, err
}

// Inspect is ref's report.Image as the engine has it, or an error saying
// that it is not there: the lab pulls nothing.
func Inspect(eng Engine, ref string) (report.Image, error) {
	img, err := eng.InspectImage(ref)
	if errors.Is(err, dc.ErrNoSuchImage) {
		return report.Image{}, fmt.Errorf("image %q is not on the engine: build it or docker load it first; the lab pulls nothing", ref)
	}
	if err != nil {
		return report.Image{}, fmt.Errorf("image: inspect %s: %w", ref, err)
	}
	return report.Image{Ref: ref, ID: img.ID}, nil
}
