package stack

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/report"
)

// versionScript asks every component of the image for its version, each
// front door (proxy.Doors) through its Door.Version.
var versionScript = func() string {
	var b strings.Builder
	b.WriteString(componentScript)
	for _, release := range slices.Sorted(maps.Keys(podspec.GunicornReleases)) {
		fmt.Fprintf(&b, "echo \"gunicorn-release:%s=$(PYTHONPATH=%s python3 -c 'import gunicorn; print(gunicorn.__version__)')\"\n", release, podspec.GunicornReleases[release])
	}
	for _, kind := range proxy.Kinds() {
		fmt.Fprintf(&b, "echo \"door:%s=$(%s 2>&1 | head -n 1)\"\n", kind, strings.Join(proxy.Doors[kind].Version(), " "))
	}
	return b.String()
}()

const componentScript = `set -e
echo "python=$(python3 -c 'import platform; print(platform.python_version())')"
echo "gunicorn=$(python3 -c 'import gunicorn; print(gunicorn.__version__)')"
echo "django=$(python3 -c 'import django; print(django.get_version())')"
echo "gevent=$(python3 -c 'import gevent; print(gevent.__version__)')"
echo "uvicorn=$(python3 -c 'import uvicorn; print(uvicorn.__version__)')"
echo "uvloop=$(python3 -c 'import uvloop; print(uvloop.__version__)')"
echo "httptools=$(python3 -c 'import httptools; print(httptools.__version__)')"
echo "nginx=$(nginx -v 2>&1)"
echo "uwsgi=$(uwsgi --version)"
echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
sed 's/^/pkg:/' /etc/lab-image-packages
`

var nginxVersion = regexp.MustCompile(`nginx/(\S+)`)

// DefaultVersionsWait bounds the run that reads the versions.
const DefaultVersionsWait = time.Minute

// ReadVersions runs ref once, in session s, and asks each component for
// its version.
func ReadVersions(s *Session, ref string) (report.Versions, error) {
	code, out, err := runOnce(s, podspec.RoleSetup, "setup", ref, []string{"sh", "-c", versionScript}, nil, DefaultVersionsWait)
	if err != nil {
		return report.Versions{}, fmt.Errorf("stack: run %s to read versions: %w", ref, err)
	}
	if code != 0 {
		return report.Versions{}, fmt.Errorf("stack: reading versions in %s exited %d:\n%s", ref, code, out)
	}
	return parseVersions(out)
}

// runOnce runs cmd in a container of ref, hardened as role, with no
// network, named for condition in session s; it waits at most wait for
// its exit and returns its exit code and output, and removes it.
func runOnce(s *Session, role, condition, ref string, cmd, env []string, wait time.Duration) (int, string, error) {
	pool := s.pool
	repo, tag := image.SplitRef(ref)
	var r *dockertest.Resource
	if _, err := s.create(role+" container of "+condition, func() (string, error) {
		var err error
		r, err = pool.RunWithOptions(Harden(role, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Cmd: cmd, Env: env,
			Labels: s.labels(role, condition, 0), Name: s.name(role, condition, 0),
		}), HardenHost(role), func(hc *dc.HostConfig) { hc.NetworkMode = "none"; hc.PublishAllPorts = false })
		if err != nil {
			return "", explainStart(err)
		}
		return r.Container.ID, nil
	}, func(id string) { removeContainer(pool.Client, id) }); err != nil {
		return 0, "", err
	}
	defer removeContainer(pool.Client, r.Container.ID)
	ctx, cancel := contextWithTimeout(wait)
	defer cancel()
	code, err := pool.Client.WaitContainerWithContext(r.Container.ID, ctx)
	if err != nil {
		return 0, "", err
	}
	var out bytes.Buffer
	if err := pool.Client.Logs(dc.LogsOptions{
		Container: r.Container.ID, OutputStream: &out, ErrorStream: &out, Stdout: true, Stderr: true,
	}); err != nil {
		return 0, "", err
	}
	return code, out.String(), nil
}

func parseVersions(s string) (report.Versions, error) {
	v := report.Versions{Packages: map[string]string{}, FrontDoors: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if door, ok := strings.CutPrefix(line, "door:"); ok {
			if kind, out, ok := strings.Cut(door, "="); ok {
				v.FrontDoors[kind] = proxy.VersionOf(out)
			}
			continue
		}
		if rel, ok := strings.CutPrefix(line, "gunicorn-release:"); ok {
			if release, got, ok := strings.Cut(rel, "="); ok {
				if v.GunicornReleases == nil {
					v.GunicornReleases = map[string]string{}
				}
				v.GunicornReleases[release] = got
			}
			continue
		}
		if pkg, ok := strings.CutPrefix(line, "pkg:"); ok {
			if name, ver, ok := strings.Cut(pkg, "="); ok {
				v.Packages[name] = ver
			}
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "python":
			v.Python = val
		case "gunicorn":
			v.Gunicorn = val
		case "django":
			v.Django = val
		case "gevent":
			v.Gevent = val
		case "uvicorn":
			v.Uvicorn = val
		case "uvloop":
			v.Uvloop = val
		case "httptools":
			v.Httptools = val
		case "cpu":
			v.CPUModel = val
		case "uwsgi":
			v.UWSGI = val
		case "nginx":
			if m := nginxVersion.FindStringSubmatch(val); m != nil {
				v.Nginx = m[1]
			}
		}
	}
	if v.Python == "" || v.Gunicorn == "" || v.Nginx == "" || len(v.Packages) == 0 {
		return v, fmt.Errorf("stack: version output is incomplete:\n%s", s)
	}
	for _, kind := range proxy.Kinds() {
		if v.FrontDoors[kind] == "" {
			return v, fmt.Errorf("stack: front door %s printed no version (%s):\n%s", kind, strings.Join(proxy.Doors[kind].Version(), " "), s)
		}
	}
	// Each Gunicorn release the matrix's version rows run must import as
	// itself from its directory: the image unpacked it there.
	for release, dir := range podspec.GunicornReleases {
		if got := v.GunicornReleases[release]; got != release {
			return v, fmt.Errorf("stack: Gunicorn %s from %s imported as %q (the image's build.sh unpacks it there):\n%s", release, dir, got, s)
		}
	}
	return v, nil
}
