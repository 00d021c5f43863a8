// Package stack starts article A's topology in containers: a WSGI server,
// optionally NGINX in front of it, and a client, all in ONE network
// namespace (and PID namespace), talking over 127.0.0.1 as the article's
// processes did. No port is published and no bridge is in the path.
//
// The namespaces belong to a small holder container (like a Kubernetes
// pod's pause container), so each part can carry its own CPU and memory
// limits and the namespace's TCP sysctls are pinned once, at its creation.
package stack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"wsgilab/bench/internal/image"
	"wsgilab/bench/internal/probe"
	"wsgilab/nginxconf"
	"wsgilab/wsgiapp"
)

// Label marks every container the lab starts, so a later run can remove
// what a crashed one left behind.
const Label = "wsgilab"

// Defaults of Config, from article A's resource table.
const (
	DefaultCPUPeriod = 10 * time.Millisecond
	DefaultAppCPUs   = 0.25
	DefaultAppMemory = 128 << 20
	// DefaultProxyCPUs and DefaultProxyMemory limit NGINX.
	DefaultProxyCPUs   = 0.20
	DefaultProxyMemory = 96 << 20
	// DefaultClientCPUs and DefaultClientMemory limit the load generator.
	DefaultClientCPUs   = 0.20
	DefaultClientMemory = 128 << 20
	// DefaultTCPRmem and DefaultTCPWmem are stock Linux values, pinned so
	// results do not depend on the host's tuning.
	DefaultTCPRmem = "4096 131072 6291456"
	DefaultTCPWmem = "4096 16384 4194304"
	// DefaultReadyWait bounds the wait for the first 200 from /fast.
	DefaultReadyWait = 30 * time.Second
	// AppPort is where the WSGI server listens on 127.0.0.1.
	AppPort = 8000
	// WritesLog is the app's write-duration log inside the app container.
	WritesLog = "/tmp/lab-writes.jsonl"
)

// Limits are one container's CPU quota and memory limit.
type Limits struct {
	// CPUs is the CFS quota as a share of one core per Config.CPUPeriod.
	CPUs float64 `json:"cpus"`
	// Memory is the memory limit in bytes; swap is not allowed on top.
	Memory int64 `json:"memory_bytes"`
	// Cpuset pins the container to these CPUs ("0", "1-2"); empty lets it
	// run anywhere.
	Cpuset string `json:"cpuset,omitempty"`
}

// Server is the WSGI server's command line in the app container.
type Server struct {
	// ID names the server and worker model, e.g. "gunicorn-sync-2".
	ID string `json:"id"`
	// Cmd runs in wsgiapp.Dir and listens on 127.0.0.1:AppPort.
	Cmd []string `json:"cmd"`
	// Env is added to the app container's environment.
	Env []string `json:"env,omitempty"`
}

// GunicornSync is article A's main server: `workers` sync workers.
func GunicornSync(workers int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-sync-%d", workers),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "sync", "--workers", strconv.Itoa(workers), "app:application"},
	}
}

// GunicornGthread is article A's supplementary server: one process per
// `workers` with `threads` threads each.
func GunicornGthread(workers, threads int) Server {
	return Server{
		ID: fmt.Sprintf("gunicorn-gthread-%dx%d", workers, threads),
		Cmd: []string{"python3", "-m", "gunicorn", "--bind", fmt.Sprintf("127.0.0.1:%d", AppPort),
			"--worker-class", "gthread", "--workers", strconv.Itoa(workers), "--threads", strconv.Itoa(threads),
			"app:application"},
	}
}

// Config is one pod's setup. Its zero value is not usable; New fills the
// defaults.
type Config struct {
	// Image is the lab image reference (image.EnsureLab).
	Image string `json:"image"`
	// Server runs in the app container.
	Server Server `json:"server"`
	// Proxy, when set, puts NGINX in front; clients then talk to it.
	Proxy *nginxconf.Config `json:"proxy,omitempty"`
	// CPUPeriod is the CFS period of every limited container.
	CPUPeriod time.Duration `json:"cpu_period_ns"`
	// App, ProxyLimits and Client limit the three containers.
	App         Limits `json:"app"`
	ProxyLimits Limits `json:"proxy_limits"`
	Client      Limits `json:"client"`
	// TCPRmem and TCPWmem are pinned as net.ipv4.tcp_rmem and tcp_wmem in
	// the shared network namespace: "MIN DEFAULT MAX" in bytes.
	TCPRmem string `json:"tcp_rmem"`
	TCPWmem string `json:"tcp_wmem"`
	// ReadyWait bounds how long Start waits for /fast to answer 200.
	ReadyWait time.Duration `json:"ready_wait_ns"`
	// Probe adds the probe container: it joins the namespaces with
	// CAP_SYS_PTRACE to read the others' /proc, in its own cgroup with no
	// CPU quota, so sampling never eats a measured container's budget.
	Probe bool `json:"probe"`
}

// Option changes a Config.
type Option func(*Config)

// WithServer sets the WSGI server.
func WithServer(s Server) Option { return func(c *Config) { c.Server = s } }

// WithProxy puts NGINX with p in front of the server; nil removes it.
func WithProxy(p *nginxconf.Config) Option { return func(c *Config) { c.Proxy = p } }

// WithAppLimits, WithProxyLimits and WithClientLimits set one container's limits.
func WithAppLimits(l Limits) Option    { return func(c *Config) { c.App = l } }
func WithProxyLimits(l Limits) Option  { return func(c *Config) { c.ProxyLimits = l } }
func WithClientLimits(l Limits) Option { return func(c *Config) { c.Client = l } }

// WithProbe adds or leaves out the probe container.
func WithProbe(on bool) Option { return func(c *Config) { c.Probe = on } }

// WithTCPMem pins tcp_rmem and tcp_wmem.
func WithTCPMem(rmem, wmem string) Option {
	return func(c *Config) { c.TCPRmem, c.TCPWmem = rmem, wmem }
}

// New returns the article's defaults for imageRef, changed by opts.
func New(imageRef string, opts ...Option) Config {
	c := Config{
		Image:       imageRef,
		Server:      GunicornSync(2),
		CPUPeriod:   DefaultCPUPeriod,
		App:         Limits{CPUs: DefaultAppCPUs, Memory: DefaultAppMemory},
		ProxyLimits: Limits{CPUs: DefaultProxyCPUs, Memory: DefaultProxyMemory},
		Client:      Limits{CPUs: DefaultClientCPUs, Memory: DefaultClientMemory},
		TCPRmem:     DefaultTCPRmem,
		TCPWmem:     DefaultTCPWmem,
		ReadyWait:   DefaultReadyWait,
		Probe:       true,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Validate names the first malformed setting and the form it takes.
func (c Config) Validate() error {
	if c.Image == "" {
		return errors.New("stack: no image; call image.EnsureLab first")
	}
	if len(c.Server.Cmd) == 0 {
		return errors.New("stack: no server command; use WithServer(GunicornSync(2)) or similar")
	}
	if c.CPUPeriod < time.Millisecond || c.CPUPeriod > time.Second {
		return fmt.Errorf("stack: CPUPeriod %v must be between 1ms and 1s (the kernel's CFS bounds)", c.CPUPeriod)
	}
	for name, l := range map[string]Limits{"app": c.App, "proxy": c.ProxyLimits, "client": c.Client} {
		if quota := time.Duration(l.CPUs * float64(c.CPUPeriod)); quota < time.Millisecond {
			return fmt.Errorf("stack: %s CPUs %.3g gives a quota of %v per %v period; the kernel needs at least 1ms", name, l.CPUs, quota, c.CPUPeriod)
		}
		if l.Memory < 6<<20 {
			return fmt.Errorf("stack: %s memory %d bytes is below Docker's 6 MiB minimum", name, l.Memory)
		}
	}
	for name, v := range map[string]string{"TCPRmem": c.TCPRmem, "TCPWmem": c.TCPWmem} {
		f := strings.Fields(v)
		ok := len(f) == 3
		var n [3]int64
		for i := 0; ok && i < 3; i++ {
			var err error
			n[i], err = strconv.ParseInt(f[i], 10, 64)
			ok = err == nil && n[i] > 0
		}
		if !ok || n[0] > n[1] || n[1] > n[2] {
			return fmt.Errorf("stack: %s %q must be three byte counts MIN <= DEFAULT <= MAX, e.g. %q", name, v, DefaultTCPRmem)
		}
	}
	if c.Proxy != nil {
		if err := c.Proxy.Validate(); err != nil {
			return err
		}
	}
	if c.ReadyWait <= 0 {
		return errors.New("stack: ReadyWait must be positive")
	}
	return nil
}

// Pod is a started topology. Containers are purged by the test's cleanup.
type Pod struct {
	Config Config
	pool   *dockertest.Pool
	// Holder owns the network and PID namespaces; App, Proxy (nil when
	// direct), Client and Probe (nil unless Config.Probe) join them.
	Holder, App, Proxy, Client, Probe *dockertest.Resource
	probeRuns                         int
}

// Start starts the pod described by c and waits until the client gets a
// 200 from /fast through the pod's entry point. Any failure ends the test
// with the cause and the failing container's log.
func Start(t testing.TB, pool *dockertest.Pool, c Config) *Pod {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	repo, tag := image.SplitRef(c.Image)
	p := &Pod{Config: c, pool: pool}

	p.Holder = p.run(t, &dockertest.RunOptions{
		Repository: repo, Tag: tag, Cmd: []string{"sleep", "infinity"}, Labels: labels("holder"),
	}, func(hc *dc.HostConfig) {
		hc.NetworkMode = "none"
		hc.Init = true // reaps whatever the pod's processes orphan
		hc.Sysctls = map[string]string{"net.ipv4.tcp_rmem": c.TCPRmem, "net.ipv4.tcp_wmem": c.TCPWmem}
		hc.Memory, hc.MemorySwap = 16<<20, 16<<20
	})

	p.App = p.run(t, &dockertest.RunOptions{
		Repository: repo, Tag: tag, Cmd: c.Server.Cmd, WorkingDir: wsgiapp.Dir,
		Env: append([]string{"LAB_WRITES_LOG=" + WritesLog, "PYTHONUNBUFFERED=1"}, c.Server.Env...), Labels: labels("app"),
	}, p.join, p.limit(c.App))

	if c.Proxy != nil {
		conf, err := c.Proxy.Render()
		if err != nil {
			t.Fatal(err)
		}
		p.Proxy = p.run(t, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Env: []string{"LAB_NGINX_CONF=" + conf}, Labels: labels("proxy"),
			// The config travels in the environment, so no bind mount ties
			// the lab to a local engine.
			Cmd: []string{"sh", "-c", `printf '%s' "$LAB_NGINX_CONF" > ` + NginxConfPath +
				` && exec nginx -c ` + NginxConfPath + ` -g 'daemon off;'`},
		}, p.join, p.limit(c.ProxyLimits))
	}

	p.Client = p.run(t, &dockertest.RunOptions{
		Repository: repo, Tag: tag, Cmd: []string{"sleep", "infinity"}, Labels: labels("client"),
	}, p.join, p.limit(c.Client))

	if c.Probe {
		p.Probe = p.run(t, &dockertest.RunOptions{
			Repository: repo, Tag: tag, Cmd: []string{"sleep", "infinity"}, Labels: labels("probe"),
			CapAdd: []string{"SYS_PTRACE"},
		}, p.join, func(hc *dc.HostConfig) { hc.Memory, hc.MemorySwap = DefaultProbeMemory, DefaultProbeMemory })
	}

	if err := p.waitReady(); err != nil {
		t.Fatal(err)
	}
	return p
}

// DefaultProbeMemory limits the probe container; its CPU is not limited.
const DefaultProbeMemory = 256 << 20

// NginxConfPath is where the rendered config lands in the proxy container.
const NginxConfPath = "/tmp/nginx.conf"

func labels(role string) map[string]string {
	return map[string]string{Label: "1", Label + ".role": role}
}

// run creates one container and registers its purge before anything else
// can fail.
func (p *Pod) run(t testing.TB, opts *dockertest.RunOptions, mods ...func(*dc.HostConfig)) *dockertest.Resource {
	t.Helper()
	r, err := p.pool.RunWithOptions(opts, append(mods, func(hc *dc.HostConfig) {
		// dockertest publishes ports by default; the lab publishes none.
		hc.PublishAllPorts = false
	})...)
	if err != nil {
		t.Fatalf("stack: start %s container: %v", opts.Labels[Label+".role"], err)
	}
	t.Cleanup(func() {
		if err := p.pool.Purge(r); err != nil {
			t.Errorf("stack: purge %s: %v", r.Container.Name, err)
		}
	})
	return r
}

func (p *Pod) join(hc *dc.HostConfig) {
	hc.NetworkMode = "container:" + p.Holder.Container.ID
	hc.PidMode = "container:" + p.Holder.Container.ID
}

func (p *Pod) limit(l Limits) func(*dc.HostConfig) {
	return func(hc *dc.HostConfig) {
		period := p.Config.CPUPeriod.Microseconds()
		hc.CPUPeriod = period
		hc.CPUQuota = int64(l.CPUs * float64(period))
		hc.Memory, hc.MemorySwap = l.Memory, l.Memory
		hc.CPUSetCPUs = l.Cpuset
	}
}

// URL is path at the pod's entry point: NGINX when present, else the server.
func (p *Pod) URL(path string) string {
	if p.Config.Proxy != nil {
		return "http://" + p.Config.Proxy.Listen + path
	}
	return p.AppURL(path)
}

// AppURL is path at the WSGI server itself.
func (p *Pod) AppURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", AppPort, path)
}

func (p *Pod) waitReady() error {
	retry := *p.pool
	retry.MaxWait = p.Config.ReadyWait
	var last error
	err := retry.Retry(func() error {
		for _, r := range []*dockertest.Resource{p.App, p.Proxy} {
			if r == nil {
				continue
			}
			c, err := p.pool.Client.InspectContainer(r.Container.ID)
			if err != nil {
				return backoff.Permanent(err)
			}
			if !c.State.Running {
				return backoff.Permanent(fmt.Errorf("%s exited with code %d:\n%s",
					roleOf(r), c.State.ExitCode, p.Logs(r)))
			}
		}
		_, last = p.Exec(p.Client, image.AgentPath, "get", "-timeout", "2s", p.URL("/fast"))
		return last
	})
	if err != nil {
		return fmt.Errorf("stack: %s pod not ready within %v: %w (last check: %v)\napp log:\n%s",
			p.Config.Server.ID, p.Config.ReadyWait, err, last, p.Logs(p.App))
	}
	return nil
}

func roleOf(r *dockertest.Resource) string {
	if r.Container.Config != nil {
		return r.Container.Config.Labels[Label+".role"]
	}
	return r.Container.Name
}

// Exec runs cmd in r and returns its stdout; a non-zero exit is an error
// carrying stderr.
func (p *Pod) Exec(r *dockertest.Resource, cmd ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	code, err := r.Exec(cmd, dockertest.ExecOptions{StdOut: &stdout, StdErr: &stderr})
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

// WriteRecord is one line of the app's write-duration log.
type WriteRecord struct {
	ID       string        `json:"id"`
	PID      int           `json:"pid"`
	Bytes    int64         `json:"bytes"`
	Size     int64         `json:"size"`
	Complete bool          `json:"complete"`
	StartNs  int64         `json:"start_unix_ns"`
	Write    time.Duration `json:"write_ns"`
}

// Writes reads the app's write records, keyed by X-Lab-Id.
func (p *Pod) Writes() (map[string]WriteRecord, error) {
	out, err := p.Exec(p.App, "sh", "-c", "cat "+WritesLog+" 2>/dev/null || true")
	if err != nil {
		return nil, err
	}
	recs := map[string]WriteRecord{}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var w WriteRecord
		if err := json.Unmarshal(line, &w); err != nil {
			return nil, fmt.Errorf("stack: write log line %q: %w", line, err)
		}
		recs[w.ID] = w
	}
	return recs, nil
}

// RemoveStale removes labelled containers that an earlier, crashed run
// left behind. Only one lab run may use an engine at a time: two would
// also disturb each other's measurements.
func RemoveStale(client *dc.Client) (int, error) {
	cs, err := client.ListContainers(dc.ListContainersOptions{
		All: true, Filters: map[string][]string{"label": {Label}},
	})
	if err != nil {
		return 0, err
	}
	for _, c := range cs {
		if err := client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true}); err != nil {
			return 0, fmt.Errorf("stack: remove stale container %s: %w", c.ID[:12], err)
		}
	}
	return len(cs), nil
}
