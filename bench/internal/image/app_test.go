package image

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeEngine records builds and knows the images built.
type fakeEngine struct {
	images map[string]bool
	files  []string
	args   []dc.BuildArg
	builds int
}

func (f *fakeEngine) InspectImage(name string) (*dc.Image, error) {
	if f.images[name] {
		return &dc.Image{ID: "sha256:" + name}, nil
	}
	return nil, dc.ErrNoSuchImage
}

func (f *fakeEngine) ImportImage(dc.ImportImageOptions) error { return errors.New("not here") }

func (f *fakeEngine) BuildImage(o dc.BuildImageOptions) error {
	f.builds++
	f.files, f.args = nil, o.BuildArgs
	tr := tar.NewReader(o.InputStream)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		f.files = append(f.files, h.Name)
	}
	f.images[o.Name] = true
	return nil
}

// An app directory's image holds exactly the files it is given (a stack
// file's Tree filters and checks them), and is found again by its hash.
func TestEnsureApp(t *testing.T) {
	app := map[string][]byte{
		"shop.py":         []byte("app = None\n"),
		"pkg/__init__.py": nil,
	}
	eng := &fakeEngine{images: map[string]bool{}}
	img, err := EnsureApp(context.Background(), eng, "wsgilab:1", app, "/srv/app")
	require.NoError(t, err)
	assert.True(t, img.Built)
	assert.Regexp(t, `^wsgilab-stack:[0-9a-f]{12}$`, img.Ref)
	assert.Equal(t, "sha256:"+img.Ref, img.ID)
	assert.ElementsMatch(t, []string{"Dockerfile", "app/shop.py", "app/pkg/__init__.py"}, eng.files)

	again, err := EnsureApp(context.Background(), eng, "wsgilab:1", app, "/srv/app")
	require.NoError(t, err)
	assert.Equal(t, img.Ref, again.Ref)
	assert.False(t, again.Built, "found by its hash")
	assert.Equal(t, 1, eng.builds)

	app["shop.py"] = []byte("app = 1\n")
	changed, err := EnsureApp(context.Background(), eng, "wsgilab:1", app, "/srv/app")
	require.NoError(t, err)
	assert.NotEqual(t, img.Ref, changed.Ref, "a changed file is a new image")

	_, err = Inspect(eng, "team/other:2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `image "team/other:2" is not on the engine`)
}

// A team's Dockerfile is built over its context with its build
// arguments, each time (Docker's cache keeps that quick).
func TestBuildDockerfile(t *testing.T) {
	eng := &fakeEngine{images: map[string]bool{}}
	files := fstest.MapFS{"shop.py": {Data: []byte("app = None\n")}}
	for range 2 {
		img, err := BuildDockerfile(context.Background(), eng, "ARG BASE\nFROM ${BASE}\nCOPY shop.py /srv/shop/\n", files, "team/shop:1", map[string]string{"BASE": "wsgilab-base:1"})
		require.NoError(t, err)
		assert.Equal(t, "team/shop:1", img.Ref)
	}
	assert.Equal(t, 2, eng.builds)
	assert.ElementsMatch(t, []string{"Dockerfile", "shop.py"}, eng.files)
	assert.Equal(t, []dc.BuildArg{{Name: "BASE", Value: "wsgilab-base:1"}}, eng.args)
}

func TestBuildTempDir(t *testing.T) {
	const plenty = 1 << 40
	if buildTempDir(shmDir, minBuildTmpfs, plenty) == "" {
		t.Skip("no tmpfs at /dev/shm here with room for a build")
	}
	assert.Equal(t, shmDir, buildTempDir(shmDir, minBuildTmpfs, plenty))
	assert.Empty(t, buildTempDir(shmDir, 1<<60, plenty), "too little room")
	assert.Empty(t, buildTempDir(shmDir, minBuildTmpfs, minBuildTmpfs-1), "too little memory")
	var st unix.Statfs_t
	if require.NoError(t, unix.Statfs(".", &st)); st.Type != unix.TMPFS_MAGIC {
		assert.Empty(t, buildTempDir(".", 1, plenty), "not a tmpfs")
	}
	assert.Empty(t, buildTempDir("/nonexistent", 1, plenty))
}

func TestMemAvailable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "meminfo")
	require.NoError(t, os.WriteFile(p, []byte("MemTotal:       24684084 kB\nMemFree:        23577000 kB\nMemAvailable:   24151724 kB\n"), 0o644))
	assert.EqualValues(t, 24151724<<10, memAvailable(p))
	assert.Zero(t, memAvailable(filepath.Join(t.TempDir(), "none")))
	assert.Positive(t, memAvailable("/proc/meminfo"))
}
