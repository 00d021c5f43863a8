package bench

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	aptpkg "wsgilab/bench/internal/apt"
	"wsgilab/bench/internal/image"
	"wsgilab/fixtures"
)

// baseBuildLog is the base image's build output, when this series built
// it, or make test's image step built it for the series (TestMain).
var baseBuildLog strings.Builder

// TestImageWithoutHostSources shows that the base image builds as a host
// that is not Debian must build it: with the host's apt sources hidden,
// and the archive named by the mirror setting (the series' LAB_DEBIAN_MIRROR,
// else the archive the host's own sources name, the one this machine may
// reach). When this series built its image, it built it so
// (image.BuildBase: report.Image.SourcesHidden), and its build output says
// so: that build is the proof, and a clean machine (CI) builds once. So
// does a build make test's image step (cmd/labimage) made for this series,
// beside the compile, which the series reads from LAB_IMAGE_RECORD. Else
// the recipe is run again here in the same way. Either way the root
// filesystem holds every package of the recipe's packages.txt, the same
// packages as the image this series runs (env.Versions), and the pinned
// Gunicorn; versions may differ only where the archive moved on since that
// image was built (the image's tag is its recipe's hash), and those are
// logged.
func TestImageWithoutHostSources(t *testing.T) {
	apt := lab.Settings.Apt
	if apt.Mirror == "" {
		apt = aptpkg.FromSources(aptpkg.HostSources)
	}
	require.NotEmpty(t, apt.Mirror, "no archive to build from: set LAB_DEBIAN_MIRROR, or give the host Debian apt sources")
	require.NotEmpty(t, env.Versions.Packages, "the series read the image's packages")
	wantLine := "build.sh: Debian archive " + strings.TrimSuffix(apt.Mirror, "/") + " (sources: "

	var log string
	pkgs := env.Versions.Packages
	if b := env.BaseImage; b.Built {
		t.Logf("this series built %s (by %q; empty: itself) with /etc/apt hidden: %v, from %s", b.Ref, b.By, b.SourcesHidden, b.Archive)
		require.True(t, b.SourcesHidden, "the series' own build ran with the host's apt sources in place")
		log = baseBuildLog.String()
	} else {
		if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
			t.Fatalf("needs root and unshare (util-linux) to hide /etc/apt: %v", err)
		}
		dir := t.TempDir()
		require.NoError(t, image.WriteRecipe(dir))
		out := filepath.Join(dir, "rootfs.tar")
		var b strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := image.BuildRootfs(ctx, dir, out, "", apt, &b, image.HideAptSources...)
		log = b.String()
		require.NoError(t, err, "build.sh with /etc/apt hidden:\n%s", log)
		pkgs, err = tarPackages(out)
		require.NoError(t, err)
		assert.ElementsMatch(t, slices.Collect(maps.Keys(env.Versions.Packages)), slices.Collect(maps.Keys(pkgs)), "the same packages as the series' image")
		for name, v := range pkgs {
			if old, ok := env.Versions.Packages[name]; ok && old != v {
				t.Logf("%s: %s in the series' image, %s in the archive now", name, old, v)
			}
		}
	}
	assert.Contains(t, log, wantLine, "the mirror setting, not the host's sources")
	assert.Equal(t, "23.0.0-1", pkgs["python3-gunicorn"], "the pinned Gunicorn")
	for _, name := range recipePackages(t) {
		assert.Contains(t, pkgs, name, "a package of packages.txt")
	}
}

// recipePackages are the package names fixtures/image/packages.txt lists.
func recipePackages(t *testing.T) []string {
	b, err := fs.ReadFile(fixtures.Image, "image/packages.txt")
	require.NoError(t, err)
	var out []string
	for line := range strings.Lines(string(b)) {
		if f := strings.TrimSpace(line); f != "" && !strings.HasPrefix(f, "#") {
			out = append(out, f)
		}
	}
	return out
}

// tarPackages is /etc/lab-image-packages of a root filesystem tarball.
func tarPackages(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no etc/lab-image-packages in the tarball")
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "./") != "etc/lab-image-packages" {
			continue
		}
		out := map[string]string{}
		sc := bufio.NewScanner(tr)
		for sc.Scan() {
			if name, ver, ok := strings.Cut(sc.Text(), "="); ok {
				out[name] = ver
			}
		}
		return out, sc.Err()
	}
}
