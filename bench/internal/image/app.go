package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/report"
	"wsgilab/bench/internal/stackfile"
)

// AppRepository holds the images built from stack files' app directories.
const AppRepository = "wsgilab-stack"

const appDockerfile = `FROM %s
COPY app/ %s/
`

// EnsureApp finds or builds, through the Docker API, an image FROM from
// with the files of app (each path, slash separated, to its bytes) under
// root, named AppRepository:<hash of the recipe and the files>: one
// already built is reused. app is copied as it is: a stack file's app
// directory comes checked and read (stackfile.Tree.Files). No registry is
// asked: from must be on the engine.
func EnsureApp(ctx context.Context, eng Engine, from string, app map[string][]byte, root string) (report.Image, error) {
	start := time.Now()
	df := fmt.Sprintf(appDockerfile, from, root)
	names := slices.Sorted(maps.Keys(app))
	tag, err := shortHash(
		func(w io.Writer) error { _, err := io.WriteString(w, df); return err },
		func(w io.Writer) error {
			for _, n := range names {
				hashEntry(w, n, app[n])
			}
			return nil
		},
	)
	if err != nil {
		return report.Image{}, fmt.Errorf("image: hash app directory: %w", err)
	}
	ref := AppRepository + ":" + tag
	if img, err := eng.InspectImage(ref); err == nil {
		return report.Image{Ref: ref, ID: img.ID, Duration: time.Since(start)}, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return report.Image{}, fmt.Errorf("image: inspect %s: %w", ref, err)
	}
	buildCtx, err := tarContext(df, func(add addFunc) error {
		for _, n := range names {
			if err := add("app/"+n, 0o644, app[n]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return report.Image{}, err
	}
	img, err := build(ctx, eng, dc.BuildImageOptions{Name: ref, InputStream: buildCtx, Labels: map[string]string{"wsgilab.app-hash": tag}})
	if err != nil {
		return report.Image{}, err
	}
	img.Duration = time.Since(start)
	return img, nil
}

// BuildDockerfile builds ref from the Dockerfile df over the build context
// files, with the build arguments args, as a team's CI builds its own
// image ("docker build --build-arg BASE=... -t ref"). Docker's build cache
// keeps a rebuild quick; no registry is asked.
func BuildDockerfile(ctx context.Context, eng Engine, df string, files fs.FS, ref string, args map[string]string) (report.Image, error) {
	start := time.Now()
	buildCtx, err := tarContext(df, func(add addFunc) error { return addFS(add, files, "") })
	if err != nil {
		return report.Image{}, err
	}
	var bargs []dc.BuildArg
	for _, k := range slices.Sorted(maps.Keys(args)) {
		bargs = append(bargs, dc.BuildArg{Name: k, Value: args[k]})
	}
	img, err := build(ctx, eng, dc.BuildImageOptions{Name: ref, InputStream: buildCtx, BuildArgs: bargs})
	if err != nil {
		return report.Image{}, err
	}
	img.Duration = time.Since(start)
	return img, nil
}

// build runs one build and reads back the image's id.
func build(ctx context.Context, eng Engine, o dc.BuildImageOptions) (report.Image, error) {
	var out bytes.Buffer
	o.OutputStream, o.RmTmpContainer, o.ForceRmTmpContainer, o.Context = &out, true, true, ctx
	if err := eng.BuildImage(o); err != nil {
		return report.Image{}, fmt.Errorf("image: build %s: %w\n%s", o.Name, err, out.String())
	}
	img, err := eng.InspectImage(o.Name)
	if err != nil {
		return report.Image{}, fmt.Errorf("image: inspect %s after its build: %w", o.Name, err)
	}
	return report.Image{Ref: o.Name, ID: img.ID, Built: true}, nil
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

// EnsureStackApp finds or builds the app image of stack file f (which has
// an app directory) on from: EnsureApp on the directory as it was checked
// (stackfile.File.OpenApp), as the stack check and make test's image step
// both build it.
func EnsureStackApp(ctx context.Context, eng Engine, from string, f stackfile.File) (report.Image, error) {
	tree, err := f.OpenApp()
	if err != nil {
		return report.Image{}, fmt.Errorf("stack file %s: app.dir %q: want the directory as it was checked: %w", f.Name, f.App.Dir, err)
	}
	return EnsureApp(ctx, eng, from, tree.Files(), stackfile.AppRoot)
}
