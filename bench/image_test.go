package bench

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
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

	"wsgilab/bench/internal/image"
)

// hideAptSources runs the build script in a mount namespace of its own in
// which /etc/apt is an empty tmpfs: a host with no Debian apt sources,
// as a stock CI runner is.
var hideAptSources = []string{"unshare", "--mount", "--propagation", "private", "--", "bash", "-c",
	`mount -t tmpfs tmpfs /etc/apt && [ -z "$(ls -A /etc/apt)" ] && exec "$0" "$@"`}

// TestImageWithoutHostSources builds the base image's root filesystem as
// a host that is not Debian must: with the host's apt sources hidden, and
// the archive named by the mirror setting (the series' LAB_DEBIAN_MIRROR,
// else the archive the host's own sources name, the one this machine may
// reach). It finds in it the same packages as in the image this series
// runs (env.Versions), and the pinned Gunicorn; versions may differ only
// where the archive moved on since that image was built (the image's tag
// is its recipe's hash), and those are logged.
func TestImageWithoutHostSources(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
		t.Fatalf("needs root and unshare (util-linux) to hide /etc/apt: %v", err)
	}
	dir := t.TempDir()
	require.NoError(t, image.WriteRecipe(dir))
	out := filepath.Join(dir, "rootfs.tar")
	var log strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	apt := lab.Settings.Apt
	if apt.Mirror == "" {
		apt = hostApt("/etc/apt/sources.list.d/debian.sources")
	}
	require.NotEmpty(t, apt.Mirror, "no archive to build from: set LAB_DEBIAN_MIRROR, or give the host Debian apt sources")
	err := image.BuildRootfs(ctx, dir, out, "", apt, &log, hideAptSources...)
	require.NoError(t, err, "build.sh with /etc/apt hidden:\n%s", log.String())
	assert.Contains(t, log.String(), "build.sh: Debian archive "+strings.TrimSuffix(apt.Mirror, "/")+" (sources: ", "the mirror setting, not the host's sources")

	pkgs, err := tarPackages(out)
	require.NoError(t, err)
	require.NotEmpty(t, env.Versions.Packages, "the series read the image's packages")
	assert.ElementsMatch(t, slices.Collect(maps.Keys(env.Versions.Packages)), slices.Collect(maps.Keys(pkgs)), "the same packages as from the host's sources")
	assert.Equal(t, "23.0.0-1", pkgs["python3-gunicorn"], "the pinned Gunicorn")
	for name, v := range pkgs {
		if old, ok := env.Versions.Packages[name]; ok && old != v {
			t.Logf("%s: %s in the series' image, %s in the archive now", name, old, v)
		}
	}
}

// hostApt is the archive a deb822 sources file names: its first URIs as
// the mirror, one of a security suite as the security archive.
func hostApt(sources string) image.Apt {
	b, err := os.ReadFile(sources)
	if err != nil {
		return image.Apt{}
	}
	var apt image.Apt
	var uri string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "URIs:":
			uri = f[1]
		case len(f) >= 2 && f[0] == "Suites:" && strings.HasSuffix(f[1], "-security"):
			apt.Security = uri
		case len(f) >= 2 && f[0] == "Suites:" && apt.Mirror == "":
			apt.Mirror = uri
		}
	}
	return apt
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
