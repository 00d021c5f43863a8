package bench

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
// a host that is not Debian must, with the host's apt sources hidden and
// LAB_DEBIAN_MIRROR naming Debian's archive, and finds in it the same
// packages, at the same versions, as in the image this series built from
// the host's sources (env.Versions).
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
	apt := image.Apt{Mirror: image.DefaultMirror}
	err := image.BuildRootfs(ctx, dir, out, "", apt, &log, hideAptSources...)
	require.NoError(t, err, "build.sh with /etc/apt hidden:\n%s", log.String())
	assert.Contains(t, log.String(), "build.sh: Debian archive "+image.DefaultMirror, "the mirror setting, not the host's sources")

	pkgs, err := tarPackages(out)
	require.NoError(t, err)
	require.NotEmpty(t, env.Versions.Packages, "the series read the image's packages")
	assert.Equal(t, env.Versions.Packages, pkgs, "the same packages and versions as from the host's sources")
	assert.Equal(t, "23.0.0-1", pkgs["python3-gunicorn"])
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
