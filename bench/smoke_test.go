package bench

import (
	"testing"

	"github.com/ory/dockertest/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/engine"
	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/readme"
	"wsgilab/bench/internal/stack"
)

// fetch is labagent's get result.
type fetch struct {
	Status int   `json:"status"`
	Bytes  int64 `json:"bytes"`
}

// TestSmokeVersions checks that the image holds the versions article A used,
// and the matrix's Uvicorn with uvloop and httptools.
func TestSmokeVersions(t *testing.T) {
	v := env.Versions
	assert.Equal(t, "23.0.0", v.Gunicorn, "Gunicorn")
	assert.Equal(t, "1.22.1", v.Nginx, "NGINX")
	assert.Equal(t, "3.11.2", v.Python, "CPython")
	assert.Equal(t, "0.17.6", v.Uvicorn, "Uvicorn (Debian bookworm's)")
	assert.NotEmpty(t, v.Uvloop, "uvloop, which Uvicorn picks when it can import it")
	assert.NotEmpty(t, v.Httptools, "httptools, which Uvicorn picks when it can import it")
	t.Logf("image %s: python %s, gunicorn %s, nginx %s (%s), uwsgi %s, django %s, gevent %s, uvicorn %s (uvloop %s, httptools %s)",
		lab.Image, v.Python, v.Gunicorn, v.Nginx, v.Packages["nginx"], v.UWSGI, v.Django, v.Gevent, v.Uvicorn, v.Uvloop, v.Httptools)
	for _, pkg := range []string{"python3-flask", "python3-fastapi", "python3-django"} {
		assert.NotEmpty(t, v.Packages[pkg], "%s, which an app directory can import", pkg)
	}

	// The stack-file reference lists what an app directory can import:
	// the image's own Python packages (make docs PACKAGES_FROM=<a report
	// directory of this image> regenerates the list).
	want, err := readme.Packages(v.Packages)
	require.NoError(t, err)
	got, err := readme.PackagesDoc.Committed("..")
	require.NoError(t, err)
	assert.Equal(t, want, got, "fixtures/stacks/README.md's list of the image's Python packages is stale: run make docs PACKAGES_FROM=%s", lab.Settings.ReportDir)
}

// TestSmokeFast checks /fast on every path, and that NGINX accepts the
// rendered configuration (nginx -t) in both buffering modes.
func TestSmokeFast(t *testing.T) {
	for _, p := range []engine.Path{engine.Direct, engine.NginxOff, engine.NginxOn} {
		t.Run(p.ID, func(t *testing.T) {
			pod := stack.Start(t, lab.Session, podspec.New(lab.Image, p.Option()), stack.Ident{Condition: "smoke-fast-" + p.ID})
			var got fetch
			require.NoError(t, pod.ExecJSON(pod.Client, &got, image.AgentPath, "get", "-expect-bytes", "12", pod.URL("/fast")))
			assert.Equal(t, 200, got.Status)
			if pod.Proxy != nil {
				_, err := pod.Exec(pod.Proxy, "nginx", "-e", "stderr", "-t", "-q", "-c", podspec.NginxConfPath)
				assert.NoError(t, err, "nginx -t")
			}
		})
	}
}

// TestSmokeLarge checks that /large delivers exactly 16 MiB and that the
// app records the response's write duration under the client's id.
func TestSmokeLarge(t *testing.T) {
	const size = 16 << 20
	pod := stack.Start(t, lab.Session, podspec.New(lab.Image), stack.Ident{Condition: "smoke-large"})
	var got fetch
	require.NoError(t, pod.ExecJSON(pod.Client, &got, image.AgentPath, "get", "-id", "smoke-large",
		"-expect-bytes", "16777216", pod.URL("/large")))
	assert.EqualValues(t, size, got.Bytes)

	writes, err := pod.Writes()
	require.NoError(t, err)
	w, ok := writes["smoke-large"]
	require.True(t, ok, "no write record for smoke-large in %v", writes)
	assert.True(t, w.Complete, "write record %+v", w)
	assert.EqualValues(t, size, w.Bytes)
	assert.Positive(t, w.Write, "write duration")
	t.Logf("16 MiB written in %v by worker %d", w.Write, w.PID)
}

// TestSmokeLimits checks that every container runs under the CPU quota
// and memory limit it was given, read back both from the Docker API and
// from its cgroup, and that the namespace's TCP sysctls are the pinned ones.
func TestSmokeLimits(t *testing.T) {
	cfg := podspec.New(lab.Image, engine.NginxOn.Option())
	pod := stack.Start(t, lab.Session, cfg, stack.Ident{Condition: "smoke-limits"})
	for role, c := range map[string]struct {
		limits podspec.Limits
		r      *dockertest.Resource
	}{
		"app":    {cfg.App, pod.App},
		"proxy":  {cfg.ProxyLimits, pod.Proxy},
		"client": {cfg.Client, pod.Client},
	} {
		t.Run(role, func(t *testing.T) {
			ctr, err := lab.Session.Pool().Client.InspectContainer(c.r.Container.ID)
			require.NoError(t, err)
			period := cfg.CPUPeriod.Microseconds()
			assert.Equal(t, period, ctr.HostConfig.CPUPeriod, "API CPU period")
			assert.Equal(t, int64(c.limits.CPUs*float64(period)), ctr.HostConfig.CPUQuota, "API CPU quota")
			assert.Equal(t, c.limits.Memory, ctr.HostConfig.Memory, "API memory")

			in, err := pod.Inspect(c.r)
			require.NoError(t, err)
			assert.Equal(t, period, in.Limits.CPUPeriodMicros, "cgroup CPU period")
			assert.InDelta(t, c.limits.CPUs, in.Limits.CPUs(), 1e-9, "cgroup CPUs")
			assert.Equal(t, c.limits.Memory, in.Limits.MemoryBytes, "cgroup memory")
			assert.Equal(t, cfg.TCPRmem, in.Sysctls["net.ipv4.tcp_rmem"])
			assert.Equal(t, cfg.TCPWmem, in.Sysctls["net.ipv4.tcp_wmem"])
			env.Inspections[role] = in
		})
	}
}
