// Package image makes the lab's container images without a registry.
//
// Two layers: a base image, a Debian root filesystem built by mmdebstrap
// from the recipe in fixtures/image and imported with the Docker API; and
// the lab image on top of it, which adds the WSGI apps and the static
// labagent binary by a one-step Docker build. Each tag is a hash of what
// went into it, so an unchanged recipe is found and reused in seconds and a
// changed one is rebuilt.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"wsgilab/bench/internal/apt"

	dc "github.com/ory/dockertest/v3/docker"
	"golang.org/x/sys/unix"

	"wsgilab/bench/internal/report"
	"wsgilab/fixtures"
	"wsgilab/wsgiapp"
)

// Repositories of the two layers.
const (
	BaseRepository = "wsgilab-base"
	LabRepository  = "wsgilab"
)

// AgentPath is where the labagent binary lands in the lab image.
const AgentPath = "/usr/local/bin/labagent"

// Engine is the part of the Docker API this package uses.
type Engine interface {
	InspectImage(name string) (*dc.Image, error)
	ImportImage(opts dc.ImportImageOptions) error
	BuildImage(opts dc.BuildImageOptions) error
}

// hashFS hashes every file of fsys in path order, names included.
func hashFS(h io.Writer, fsys fs.FS) error {
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return err
		}
		hashEntry(h, n, b)
	}
	return nil
}

// hashEntry hashes one file, its name and length first.
func hashEntry(h io.Writer, name string, b []byte) {
	fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
	h.Write(b)
}

func shortHash(parts ...func(io.Writer) error) (string, error) {
	h := sha256.New()
	for _, p := range parts {
		if err := p(h); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// BaseRef is the base image reference for the embedded recipe.
func BaseRef() (string, error) {
	tag, err := shortHash(func(w io.Writer) error { return hashFS(w, fixtures.Image) })
	if err != nil {
		return "", fmt.Errorf("image: hash recipe: %w", err)
	}
	return BaseRepository + ":" + tag, nil
}

// Apt is the Debian archive the base image is built from (apt.Archive).
type Apt = apt.Archive

// The archives a mirror setting usually names.
const (
	DefaultMirror   = apt.DefaultMirror
	DefaultSecurity = apt.DefaultSecurity
)

// EnsureBase finds the base image or builds it: it runs the recipe's
// build.sh on this machine (root and mmdebstrap needed) from apt's
// archive and imports the tarball through the Docker API. Build output
// goes to log.
func EnsureBase(ctx context.Context, eng Engine, apt Apt, log io.Writer) (report.Image, error) {
	start := time.Now()
	ref, err := BaseRef()
	if err != nil {
		return report.Image{}, err
	}
	if _, err := eng.InspectImage(ref); err == nil {
		return report.Image{Ref: ref, Duration: time.Since(start)}, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return report.Image{}, fmt.Errorf("image: inspect %s: %w", ref, err)
	}
	return BuildBase(ctx, eng, ref, apt, log)
}

// HideAptSources is the command BuildRootfs wraps the recipe in so that
// it runs as on a host with no Debian apt sources, as a stock CI runner
// is: in a mount namespace of its own in which /etc/apt is an empty tmpfs
// (the script runs only once it is empty). Needs root and unshare
// (util-linux).
var HideAptSources = []string{"unshare", "--mount", "--propagation", "private", "--", "bash", "-c",
	`mount -t tmpfs tmpfs /etc/apt && [ -z "$(ls -A /etc/apt)" ] && exec "$0" "$@"`}

// BuildBase builds the base image from the embedded recipe as ref,
// whether or not an image of that name exists: build.sh by mmdebstrap from
// apt's archive, then an import through the Docker API. Build output goes
// to log. The archive is apt's, else the one the host's own deb822
// sources name (apt.FromSources); either way build.sh runs with the
// host's /etc/apt hidden (HideAptSources) and is given the archive alone,
// so every image the lab builds is built as a host that is not Debian
// must build it (report.Image.SourcesHidden). Only a host whose sources
// name no archive in that form builds from them as they are.
func BuildBase(ctx context.Context, eng Engine, ref string, archive Apt, log io.Writer) (report.Image, error) {
	start := time.Now()
	if os.Geteuid() != 0 {
		return report.Image{}, fmt.Errorf("image: building %s needs root (mmdebstrap); run 'make image' as root", ref)
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return report.Image{}, fmt.Errorf("image: building %s needs mmdebstrap, which is not installed; run 'make deps' or 'apt-get install -y mmdebstrap'", ref)
	}
	if archive.Mirror == "" {
		archive = apt.FromSources(apt.HostSources)
	}
	var wrap []string
	if _, err := exec.LookPath("unshare"); err == nil && archive.Mirror != "" {
		wrap = HideAptSources
	}
	// mmdebstrap unpacks and installs in a temporary directory: on a
	// tmpfs the build took 36-38 s here, on the disk 38-55 s (dpkg's
	// fsyncs and writeback on a shared virtual disk).
	tmp := buildTempDir(shmDir, minBuildTmpfs, memAvailable("/proc/meminfo"))
	where := tmp
	if where == "" {
		where = os.TempDir()
	}
	fmt.Fprintf(log, "image: building %s in %s\n", ref, where)
	dir, err := os.MkdirTemp(tmp, "wsgilab-image-")
	if err != nil {
		return report.Image{}, err
	}
	defer os.RemoveAll(dir)
	if err := WriteRecipe(dir); err != nil {
		return report.Image{}, err
	}
	rootfs := filepath.Join(dir, "rootfs.tar")
	if err := BuildRootfs(ctx, dir, rootfs, tmp, archive, log, wrap...); err != nil {
		return report.Image{}, err
	}
	f, err := os.Open(rootfs)
	if err != nil {
		return report.Image{}, err
	}
	defer f.Close()
	// Where a clean machine's build spends its minutes: the root
	// filesystem (the archive's downloads, dpkg) or the engine's import.
	built := time.Now()
	if fi, err := f.Stat(); err == nil {
		fmt.Fprintf(log, "image: root filesystem %d MiB in %v\n", fi.Size()>>20, built.Sub(start).Round(time.Millisecond))
	}
	repo, tag := SplitRef(ref)
	if err := eng.ImportImage(dc.ImportImageOptions{
		Repository: repo, Tag: tag, Source: "-", InputStream: f, OutputStream: io.Discard, Context: ctx,
	}); err != nil {
		return report.Image{}, fmt.Errorf("image: docker import %s: %w", ref, err)
	}
	fmt.Fprintf(log, "image: imported %s in %v\n", ref, time.Since(built).Round(time.Millisecond))
	return report.Image{Ref: ref, Built: true, SourcesHidden: wrap != nil, Archive: archive.Mirror, Duration: time.Since(start)}, nil
}

// BuildRootfs runs the recipe (written out in dir by WriteRecipe) to make
// the root filesystem tarball out, from apt's archive, its temporary files
// in tmp ("" for the default). The lab's own LAB_DEBIAN_* settings reach
// the script from apt only. wrap, when given, is the command the script
// runs under (its arguments follow wrap's).
func BuildRootfs(ctx context.Context, dir, out, tmp string, apt Apt, log io.Writer, wrap ...string) error {
	argv := append(slices.Clone(wrap), "bash", filepath.Join(dir, "image", "build.sh"), out)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LAB_DEBIAN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, apt.Env()...)
	if tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("image: fixtures/image/build.sh failed (its output is above): %w", err)
	}
	return nil
}

// WriteRecipe writes the embedded recipe (fixtures/image) into dir, for
// BuildRootfs.
func WriteRecipe(dir string) error {
	if err := os.CopyFS(dir, fixtures.Image); err != nil {
		return fmt.Errorf("image: write recipe: %w", err)
	}
	return nil
}

// Where the base image is built when there is room: the build needs about
// 1 GiB (the chroot, its .debs and the tarball).
const (
	shmDir        = "/dev/shm"
	minBuildTmpfs = 2 << 30
)

// buildTempDir is dir if it is a tmpfs with at least min bytes free, and
// at least min bytes of memory available (a tmpfs's free space is not
// free memory), mounted so that programs run from it (mmdebstrap runs the
// chroot's); else "" (the default temporary directory).
func buildTempDir(dir string, min, memAvail uint64) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return ""
	}
	if st.Bavail*uint64(st.Bsize) < min || memAvail < min || st.Flags&(unix.ST_NOEXEC|unix.ST_NODEV) != 0 {
		return ""
	}
	return dir
}

// memAvailable is MemAvailable of a meminfo file in bytes, 0 if unread.
func memAvailable(meminfo string) uint64 {
	b, err := os.ReadFile(meminfo)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		var kb uint64
		if n, _ := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}

// SplitRef splits "repo:tag" (a registry port is not a tag).
func SplitRef(ref string) (repo, tag string) {
	if i := strings.LastIndex(ref, ":"); i > 0 && !strings.Contains(ref[i:], "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}

// dockerfile makes the lab layer in one step: each step of the legacy
// builder creates a container and commits it, and two COPYs took 7.5-10 s
// here against 3 s for one.
const dockerfile = `FROM %s
COPY root/ /
`

// EnsureLab finds or builds the lab image: base plus the WSGI apps and the
// labagent binary (built for the engine's platform by BuildAgent).
func EnsureLab(ctx context.Context, eng Engine, base string, agent []byte) (report.Image, error) {
	start := time.Now()
	df := fmt.Sprintf(dockerfile, base)
	tag, err := shortHash(
		func(w io.Writer) error { _, err := io.WriteString(w, df); return err },
		func(w io.Writer) error { return hashFS(w, wsgiapp.Files) },
		func(w io.Writer) error { _, err := w.Write(agent); return err },
	)
	if err != nil {
		return report.Image{}, fmt.Errorf("image: hash lab layer: %w", err)
	}
	ref := LabRepository + ":" + tag
	if _, err := eng.InspectImage(ref); err == nil {
		return report.Image{Ref: ref, Duration: time.Since(start)}, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return report.Image{}, fmt.Errorf("image: inspect %s: %w", ref, err)
	}
	buildCtx, err := labContext(df, agent)
	if err != nil {
		return report.Image{}, err
	}
	img, err := build(ctx, eng, dc.BuildImageOptions{Name: ref, InputStream: buildCtx})
	if err != nil {
		return report.Image{}, err
	}
	img.Duration = time.Since(start)
	return img, nil
}

func labContext(df string, agent []byte) (io.Reader, error) {
	return tarContext(df, func(add addFunc) error {
		if err := add(path.Join("root", AgentPath), 0o755, agent); err != nil {
			return err
		}
		return addFS(add, wsgiapp.Files, path.Join("root", wsgiapp.Dir)+"/")
	})
}

// addFunc adds one file to a build context.
type addFunc func(name string, mode int64, b []byte) error

// tarContext is a build context: the Dockerfile df and what files adds.
func tarContext(df string, files func(addFunc) error) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(df)); err != nil {
		return nil, err
	}
	if err := files(add); err != nil {
		return nil, err
	}
	return &buf, tw.Close()
}

// addFS adds every file of fsys under prefix, readable by all.
func addFS(add addFunc, fsys fs.FS, prefix string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		return add(prefix+p, 0o644, b)
	})
}

// BuildAgent compiles bench/cmd/labagent as a static binary for goarch
// (the engine's architecture, so a remote engine works too) and returns
// its bytes. -trimpath keeps the bytes, and so the lab image tag, stable.
func BuildAgent(ctx context.Context, goarch string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "wsgilab-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "labagent")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "wsgilab/bench/cmd/labagent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("image: build labagent: %w\n%s", err, msg)
	}
	return os.ReadFile(out)
}
