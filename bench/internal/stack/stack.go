// Package stack starts a pod described by podspec in containers: a WSGI
// or ASGI server, optionally NGINX in front of it, a client and the /proc
// sampler, all in ONE network namespace (and PID namespace), talking over
// 127.0.0.1. No port is published and no bridge is in the path.
//
// The namespaces belong to the client container, which holds them as a
// Kubernetes pod's pause container does (it runs `sleep` under
// docker-init; the loads are exec'd into it), so each part can carry its
// own CPU and memory limits and the namespace's TCP sysctls are pinned
// once, at its creation.
package stack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/probe"
	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/runrec"
	"wsgilab/bench/internal/toxic"
	"wsgilab/wsgiapp"
)

// Label marks every container the lab starts; Session adds the series'
// own labels, so a later run can remove what a dead one left behind.
const Label = "wsgilab"

// TB is what Start needs of a test or benchmark: testing.TB satisfies it,
// and so can a command's own runner, which need not link package testing.
type TB interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Ident names a pod in its series: the condition and the run it measures.
type Ident struct {
	Condition string
	Run       int
}

// String is "<condition> r<run>", as container names and traces say it.
func (id Ident) String() string { return fmt.Sprintf("%s r%d", id.Condition, id.Run) }

// Pod is a started topology. Containers are purged by the test's cleanup.
type Pod struct {
	Config  podspec.Config
	Ident   Ident
	session *Session
	pool    *dockertest.Pool
	// Client owns the network and PID namespaces (it holds them as a
	// pause container would, and the loads are exec'd into it); App,
	// Proxy (nil when direct), Sampler (nil unless Config.Sampler) and
	// Hop (nil unless Config.Hops) join them.
	App, Proxy, Client, Sampler, Hop *dockertest.Resource
	// Opened is when the pod's first container was asked for.
	Opened      time.Time
	samplerRuns int
}

// Start starts the pod described by c, as id in session s, and waits
// until the client gets a 200 from /fast through the pod's entry point.
// Any failure ends the test with the cause and the failing container's
// log (Open returns it instead); every container is purged by the test's
// cleanup, registered as it is created.
func Start(t TB, s *Session, c podspec.Config, id Ident) *Pod {
	t.Helper()
	p, err := Open(t, s, c, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Open is Start returning its error: a container that was OOM-killed says
// so (*OOMError), whether it exited or only lost a process.
// A pod that fails to start is removed at once, so a retry in the same
// test can use its names.
func Open(t TB, s *Session, c podspec.Config, id Ident) (*Pod, error) {
	t.Helper()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Pod{Config: c, Ident: id, session: s, pool: s.pool, Opened: time.Now()}
	if err := p.start(t); err != nil {
		return nil, errors.Join(err, p.Close())
	}
	return p, nil
}

func (p *Pod) start(t TB) error {
	c := p.Config
	repo, tag := image.SplitRef(c.Image)
	var err error
	// The client holds the pod's namespaces, as a Kubernetes pod's pause
	// container does: it runs only `sleep` until the loads are exec'd into
	// it. A holder of its own was a container more per run, and each costs
	// the engine about 0.8 core-seconds to start and remove here, in the
	// gap between two windows, which is CPU-bound. The pod now lives as
	// long as the client does: a client at its memory limit loses its
	// load (labagent, by far its largest process), not docker-init.
	if p.Client, err = p.run(t, &dockertest.RunOptions{
		Repository: repo, Tag: tag, Cmd: []string{"sleep", "infinity"}, Labels: p.labels(podspec.RoleClient), Name: p.name(podspec.RoleClient),
	}, p.limit(c.Client), func(hc *dc.HostConfig) {
		hc.NetworkMode = "none"
		hc.Init = true // reaps whatever the pod's processes orphan
		hc.Sysctls = map[string]string{"net.ipv4.tcp_rmem": c.TCPRmem, "net.ipv4.tcp_wmem": c.TCPWmem,
			"net.ipv4.tcp_max_tw_buckets":  strconv.Itoa(podspec.TCPMaxTWBuckets),
			"net.ipv4.tcp_max_syn_backlog": strconv.Itoa(podspec.TCPMaxSynBacklog)}
	}); err != nil {
		return err
	}

	// The other containers only join the client's namespaces: they are
	// created at once, which takes a pod's start from about 1.8 s to 1.2 s
	// here. No measurement runs yet.
	// A pod that speaks TLS carries the series' files to the container
	// that terminates it: the server's, directly (its command writes them
	// first), or the proxy's.
	var tlsEnv []string
	if c.TLS {
		if tlsEnv, err = p.tlsEnv(); err != nil {
			return err
		}
	}
	cmd, appEnv := c.Server.Cmd, []string{"LAB_WRITES_LOG=" + podspec.WritesLog, "PYTHONUNBUFFERED=1"}
	if c.TLS && c.Proxy == nil {
		cmd, appEnv = podspec.WritingTLS(cmd), append(appEnv, tlsEnv...)
	}
	appOpts := &dockertest.RunOptions{
		Repository: repo, Tag: tag, Cmd: cmd, WorkingDir: wsgiapp.Dir,
		Env: append(appEnv, c.Server.Env...), Labels: p.labels(podspec.RoleApp), Name: p.name(podspec.RoleApp),
	}
	if c.Server.Image != "" {
		// A team's image: its command is the whole command line, whatever
		// ENTRYPOINT the image sets.
		appOpts.Repository, appOpts.Tag = image.SplitRef(c.Server.Image)
		appOpts.WorkingDir = ""
		appOpts.Entrypoint, appOpts.Cmd = cmd[:1], cmd[1:]
	}
	if c.Server.Dir != "" {
		appOpts.WorkingDir = c.Server.Dir
	}
	// A team's image runs as the user its stack file names.
	appOpts.User = c.Server.User
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	create := func(dst **dockertest.Resource, opts *dockertest.RunOptions, mods ...func(*dc.HostConfig)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.run(t, opts, mods...)
			mu.Lock()
			defer mu.Unlock()
			*dst, errs = r, append(errs, err)
		}()
	}
	create(&p.App, appOpts, p.join, p.limit(c.App), bootUnquoted)
	if c.Proxy != nil {
		d, err := c.Proxy.Door()
		if err != nil {
			wg.Wait()
			return err
		}
		conf, err := c.Proxy.Render()
		if err != nil {
			wg.Wait()
			return err
		}
		cmd := proxy.Shell(d, *c.Proxy, d.Run(*c.Proxy, d.ConfPath()))
		if c.TLS {
			cmd = podspec.WritingTLS(cmd)
		}
		create(&p.Proxy, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Env: slices.Concat([]string{proxy.EnvVar + "=" + conf}, d.Env(), tlsEnv),
			Labels: p.labels(podspec.RoleProxy), Name: p.name(podspec.RoleProxy),
			Cmd: cmd,
		}, p.join, p.limit(c.ProxyLimits))
	}
	if c.Hops != nil {
		hops, err := json.Marshal(c.Hops.List())
		if err != nil {
			wg.Wait()
			return err
		}
		create(&p.Hop, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Cmd: []string{image.AgentPath, "hop"}, Env: []string{toxic.HopsEnv + "=" + string(hops)},
			Labels: p.labels(podspec.RoleHop), Name: p.name(podspec.RoleHop),
		}, p.join, p.limit(c.Hops.Limits))
	}
	if c.Sampler {
		create(&p.Sampler, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Cmd: []string{"sleep", "infinity"}, Labels: p.labels(podspec.RoleSampler), Name: p.name(podspec.RoleSampler),
		}, p.join, func(hc *dc.HostConfig) { hc.Memory, hc.MemorySwap = DefaultSamplerMemory, DefaultSamplerMemory })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := p.waitReady(); err != nil {
		return err
	}
	return p.applyQuota()
}

// bootUnquoted leaves the server's CFS quota off while it boots; its
// cpuset and memory limit hold from the start, and applyQuota sets the
// quota once the server answers, before anything is measured. At article
// A's quarter core, a server's boot (Python importing the app in each
// worker) was most of a pod's 1.2 s start, and the start of the next
// run's pod is what the series waits for between windows.
func bootUnquoted(hc *dc.HostConfig) { hc.CPUQuota = 0 }

// applyQuota gives the server its CFS quota (Config.App) and reads it
// back from the engine; a quota it does not read back is an error.
// Config.Validate has made sure the quota is at least 1 ms.
func (p *Pod) applyQuota() error {
	period := p.Config.CPUPeriod.Microseconds()
	quota := int64(p.Config.App.CPUs * float64(period))
	id := p.App.Container.ID
	if err := p.pool.Client.UpdateContainer(id, dc.UpdateContainerOptions{CPUPeriod: int(period), CPUQuota: int(quota)}); err != nil {
		return fmt.Errorf("stack: setting the server's CPU quota to %d us per %d us: %w", quota, period, err)
	}
	c, err := p.pool.Client.InspectContainer(id)
	if err != nil {
		return err
	}
	if c.HostConfig == nil {
		return fmt.Errorf("stack: the engine returned no limits for the server")
	}
	if got := c.HostConfig; got.CPUQuota != quota || got.CPUPeriod != period {
		return fmt.Errorf("stack: the server's CPU quota reads back as %d us per %d us, want %d us per %d us",
			got.CPUQuota, got.CPUPeriod, quota, period)
	}
	return nil
}

// DefaultSamplerMemory limits the sampler container; its CPU is not limited.
const DefaultSamplerMemory = 256 << 20

func (p *Pod) labels(role string) map[string]string {
	return p.session.labels(role, p.Ident.Condition, p.Ident.Run)
}

func (p *Pod) name(role string) string { return p.session.name(role, p.Ident.Condition, p.Ident.Run) }

// run creates one container, hardened for its role
// (podspec.DefaultHardening), and registers its purge before anything
// else can fail.
func (p *Pod) run(t TB, opts *dockertest.RunOptions, mods ...func(*dc.HostConfig)) (*dockertest.Resource, error) {
	t.Helper()
	role := opts.Labels[LabelRole]
	var r *dockertest.Resource
	_, err := p.session.create(role+" container of "+p.Ident.String(), func() (string, error) {
		var err error
		r, err = p.pool.RunWithOptions(Harden(role, opts), append(mods, HardenHost(role), func(hc *dc.HostConfig) {
			// dockertest publishes ports by default; the lab publishes none.
			hc.PublishAllPorts = false
		})...)
		if err != nil {
			return "", fmt.Errorf("stack: start %s container: %w", role, explainStart(err))
		}
		return r.Container.ID, nil
	}, func(id string) { removeContainer(p.pool.Client, id) })
	if err != nil {
		return nil, err
	}
	p.session.live.Store(r.Container.ID, true)
	t.Cleanup(func() {
		if err := p.remove(r); err != nil {
			t.Errorf("stack: purge %s: %v", r.Container.Name, err)
		}
	})
	return r, nil
}

func (p *Pod) remove(r *dockertest.Resource) error {
	p.session.trace("remove " + strings.TrimPrefix(r.Container.Name, "/"))
	err := removeContainer(p.pool.Client, r.Container.ID)
	if err == nil {
		p.session.live.Delete(r.Container.ID)
	}
	return err
}

// Close removes the pod's containers now, before the test's cleanup
// (which then finds nothing left to do), so a run retried in the same
// test can start a pod of the same names.
func (p *Pod) Close() error {
	var errs []error
	for _, r := range p.Roles() {
		errs = append(errs, p.remove(r.Resource))
	}
	return errors.Join(errs...)
}

func (p *Pod) join(hc *dc.HostConfig) {
	hc.NetworkMode = "container:" + p.Client.Container.ID
	hc.PidMode = "container:" + p.Client.Container.ID
}

func (p *Pod) limit(l podspec.Limits) func(*dc.HostConfig) {
	return func(hc *dc.HostConfig) {
		period := p.Config.CPUPeriod.Microseconds()
		hc.CPUPeriod = period
		hc.CPUQuota = int64(l.CPUs * float64(period))
		hc.Memory, hc.MemorySwap = l.Memory, l.Memory
		hc.CPUSetCPUs = l.Cpuset
	}
}

// URL is path at the pod's entry point: NGINX when present, else the server.
func (p *Pod) URL(path string) string { return p.Config.URL(path) }

// AppURL is path at the WSGI server itself.
func (p *Pod) AppURL(path string) string { return p.Config.AppURL(path) }

// readyPoll is the first interval between readiness checks; it grows by
// half each time up to readyPollMax. dockertest's Retry starts at 500 ms,
// which left a server that booted in 0.5 s waiting up to a second more.
// Each check is one exec that itself tries every 10 ms for up to
// readyRetry, so a server is seen ready within 10 ms of answering rather
// than at the next exec; between checks the containers' states are read,
// so a server that exited is reported within a check (a second, or three
// when a try hangs to its 2 s timeout).
const (
	readyPoll    = 50 * time.Millisecond
	readyPollMax = 500 * time.Millisecond
	readyRetry   = time.Second
)

func (p *Pod) waitReady() error {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = readyPoll, readyPollMax, p.Config.ReadyWait
	var last error
	err := backoff.Retry(func() error {
		for _, r := range []*dockertest.Resource{p.App, p.Proxy, p.Hop} {
			if r == nil {
				continue
			}
			c, err := p.pool.Client.InspectContainer(r.Container.ID)
			if err != nil {
				return backoff.Permanent(err)
			}
			if !c.State.Running {
				if oom := p.OOMKilled(); oom != nil {
					return backoff.Permanent(oom)
				}
				return backoff.Permanent(fmt.Errorf("%s exited with code %d:\n%s",
					roleOf(r), c.State.ExitCode, p.Logs(r)))
			}
		}
		path, status := p.Config.Server.Ready()
		args := []string{image.AgentPath, "get", "-timeout", "2s", "-retry", readyRetry.String(), "-status", strconv.Itoa(status)}
		if ca := p.CAPEM(); ca != nil {
			args = append(args, "-ca", string(ca))
		}
		if p.Config.H2C() {
			args = append(args, "-h2c")
		}
		// Through the client's hop, when there is one: the pod is ready
		// once its entry point answers through it.
		if _, last = p.Exec(p.Client, append(args, p.Config.HopURL(path))...); last != nil {
			// A server whose worker the OOM killer ended may only restart
			// it, forever: say so now, not after ReadyWait.
			if oom := p.OOMKilled(); oom != nil {
				return backoff.Permanent(oom)
			}
		}
		return last
	}, bo)
	var oom *OOMError
	if errors.As(err, &oom) {
		return err
	}
	if err != nil {
		return fmt.Errorf("stack: %s pod not ready within %v: %w (last check: %v)\napp log:\n%s",
			p.Config.Server.ID, p.Config.ReadyWait, err, last, p.Logs(p.App))
	}
	return nil
}

func roleOf(r *dockertest.Resource) string {
	if r.Container.Config != nil {
		return r.Container.Config.Labels[LabelRole]
	}
	return r.Container.Name
}

// DefaultExecWait bounds every exec: the longest load (article B's full
// profile with blocking, 1,000 requests at 10 req/s) takes about 100 s.
const DefaultExecWait = 5 * time.Minute

// Exec runs cmd in r and returns its stdout; a non-zero exit is an error
// carrying stderr. It gives up after DefaultExecWait.
func (p *Pod) Exec(r *dockertest.Resource, cmd ...string) ([]byte, error) {
	ctx, cancel := contextWithTimeout(DefaultExecWait)
	defer cancel()
	var stdout, stderr bytes.Buffer
	ex, err := p.pool.Client.CreateExec(dc.CreateExecOptions{Context: ctx, Container: r.Container.ID, Cmd: cmd,
		AttachStdout: true, AttachStderr: true})
	var cw dc.CloseWaiter
	if err == nil {
		cw, err = p.pool.Client.StartExecNonBlocking(ex.ID, dc.StartExecOptions{Context: ctx, OutputStream: &stdout, ErrorStream: &stderr})
	}
	if err == nil {
		// The client does not watch ctx once the stream is attached: a
		// process that never ends (one stuck at its memory limit, say)
		// would hold the call forever. Closing the stream ends the wait.
		done := make(chan error, 1)
		go func() { done <- cw.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			cw.Close()
			return nil, fmt.Errorf("exec %q in %s: no end within %v", cmd, roleOf(r), DefaultExecWait)
		}
	}
	var code int
	if err == nil {
		var in *dc.ExecInspect
		if in, err = p.pool.Client.InspectExec(ex.ID); err == nil {
			code = in.ExitCode
		}
	}
	if err != nil {
		return nil, fmt.Errorf("exec %q in %s: %w", cmd, roleOf(r), err)
	}
	if code != 0 {
		return stdout.Bytes(), fmt.Errorf("exec %q in %s: exit %d: %s%s", cmd, roleOf(r), code,
			strings.TrimSpace(stderr.String()), strings.TrimSpace(stdout.String()))
	}
	return stdout.Bytes(), nil
}

// ExecJSON runs cmd in r and decodes its stdout into v.
func (p *Pod) ExecJSON(r *dockertest.Resource, v any, cmd ...string) error {
	out, err := p.Exec(r, cmd...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("exec %q in %s: decode %q: %w", cmd, roleOf(r), out, err)
	}
	return nil
}

// Inspect reads r's cgroup limits and the namespace's sysctls from inside r.
func (p *Pod) Inspect(r *dockertest.Resource) (probe.Inspection, error) {
	var in probe.Inspection
	err := p.ExecJSON(r, &in, image.AgentPath, "inspect")
	return in, err
}

// Logs is the tail of r's stdout and stderr, for error messages.
func (p *Pod) Logs(r *dockertest.Resource) string {
	if r == nil {
		return ""
	}
	var b bytes.Buffer
	err := p.pool.Client.Logs(dc.LogsOptions{
		Container: r.Container.ID, OutputStream: &b, ErrorStream: &b, Stdout: true, Stderr: true, Tail: "40",
	})
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return b.String()
}

// MaxLogLines bounds what LogSince returns.
const MaxLogLines = runrec.MaxLogLines

// LogSince is r's stdout and stderr from since on, at most its last
// MaxLogLines lines.
func (p *Pod) LogSince(r *dockertest.Resource, since time.Time) (string, error) {
	var b bytes.Buffer
	err := p.pool.Client.Logs(dc.LogsOptions{
		Container: r.Container.ID, OutputStream: &b, ErrorStream: &b, Stdout: true, Stderr: true,
		Since: since.Unix(), Tail: strconv.Itoa(MaxLogLines),
	})
	if err != nil {
		return "", fmt.Errorf("stack: %s log: %w", roleOf(r), err)
	}
	return b.String(), nil
}

// WriteRecord is one of the app's write records (runrec.WriteRecord).
type WriteRecord = runrec.WriteRecord

// Writes reads the app's write records, keyed by X-Lab-Id.
func (p *Pod) Writes() (map[string]WriteRecord, error) {
	out, err := p.Exec(p.App, "sh", "-c", "cat "+podspec.WritesLog+" 2>/dev/null || true")
	if err != nil {
		return nil, err
	}
	return runrec.ParseWrites(out)
}
