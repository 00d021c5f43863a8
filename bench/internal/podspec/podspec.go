// Package podspec describes a pod as data: the WSGI server's command
// line, NGINX in front of it or not, each container's CPU quota and memory
// limit, and the network namespace's TCP sysctls. It starts nothing
// (package stack does), so reports and verdicts can carry a pod's
// description without linking Docker.
package podspec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

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
	// TCPMaxTWBuckets and TCPMaxSynBacklog are pinned in every pod: a
	// namespace's defaults follow its TCP hash's size (half its buckets,
	// and a 128th of them but at least 128), and the lab's host setting
	// gives each pod a hash of its own, 4,096 buckets
	// (fixtures/host/setup.sh), where it shared the host's 262,144.
	// Pinned, TIME_WAIT sockets and half-open connections are kept as on
	// the shared hash of the lab's 24 GiB machines, whatever the hash.
	TCPMaxTWBuckets  = 131072
	TCPMaxSynBacklog = 2048
	// DefaultReadyWait bounds the wait for the first 200 from /fast.
	DefaultReadyWait = 30 * time.Second
	// AppPort is where the WSGI server listens on 127.0.0.1.
	AppPort = 8000
	// WritesLog is the app's write-duration log inside the app container.
	WritesLog = "/tmp/lab-writes.jsonl"
	// NginxConfPath is where the rendered config lands in the proxy
	// container.
	NginxConfPath = nginxconf.ConfPath
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
	// Cmd runs in Dir and listens on 127.0.0.1:Port (or every address).
	Cmd []string `json:"cmd"`
	// Env is added to the app container's environment.
	Env []string `json:"env,omitempty"`
	// Image, when set, is the app container's image (a team's own, found
	// on the engine, never pulled) instead of the pod's lab image; the
	// other containers run the lab image still.
	Image string `json:"image,omitempty"`
	// Dir is the working directory; empty is wsgiapp.Dir on the lab image
	// and the image's own on another.
	Dir string `json:"dir,omitempty"`
	// User runs the server ("uid:gid" or a name the image knows); empty
	// is the app role's hardening user (Nobody).
	User string `json:"user,omitempty"`
	// Port is where the server listens; 0 is AppPort.
	Port int `json:"port,omitempty"`
	// ReadyPath is the path that answers ReadyStatus (0: 200) once the
	// server is up; empty is the lab app's /fast.
	ReadyPath   string `json:"ready_path,omitempty"`
	ReadyStatus int    `json:"ready_status,omitempty"`
}

// ListenPort is the server's port: Port, or AppPort.
func (s Server) ListenPort() int {
	if s.Port == 0 {
		return AppPort
	}
	return s.Port
}

// Ready is the path Start polls, ReadyPath or /fast, and the status it
// waits for, ReadyStatus or 200.
func (s Server) Ready() (path string, status int) {
	path, status = s.ReadyPath, s.ReadyStatus
	if path == "" {
		path = "/fast"
	}
	if status == 0 {
		status = 200
	}
	return path, status
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
	// Proxy, when set, puts a front door (proxy.Doors) in front; clients
	// then talk to it.
	Proxy *proxy.Config `json:"proxy,omitempty"`
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
	// TLS makes the entry point speak TLS: the front door (Proxy's own TLS
	// setting, which must agree) or, directly, the server (ServeTLS).
	// URL is then https; tls.go says how the files reach the container.
	TLS bool `json:"tls,omitempty"`
	// Sampler adds the /proc sampler's container: it joins the namespaces
	// with CAP_SYS_PTRACE to read the others' /proc, in its own cgroup with
	// no CPU quota, so sampling never eats a measured container's budget.
	Sampler bool `json:"sampler"`
	// Hops, when set, puts Toxiproxy hops on the pod's path (hops.go):
	// give it with WithHops, after the server and the front door.
	Hops *Hops `json:"hops,omitempty"`
}

// URL is path at the pod's entry point: NGINX when there is one, else
// the server.
func (c Config) URL(path string) string {
	if c.Proxy != nil {
		return c.scheme(true) + "://" + c.Proxy.Listen + path
	}
	return c.AppURL(path)
}

// H2C is whether the pod's entry point takes HTTP/2 only, by prior
// knowledge: NGINX with http2 on a plain listener (nginxconf.Config's
// HTTP2 without TLS), which NGINX 1.22 answers no HTTP/1.1 on. Its
// readiness is asked over h2c.
func (c Config) H2C() bool {
	return !c.TLS && c.Proxy != nil && c.Proxy.Nginx != nil && c.Proxy.Nginx.HTTP2
}

// AppURL is path at the WSGI server itself.
func (c Config) AppURL(path string) string {
	return fmt.Sprintf("%s://127.0.0.1:%d%s", c.scheme(c.Proxy == nil), c.Server.ListenPort(), path)
}

// scheme is https for the hop that terminates TLS (entry: the pod's entry
// point), http for the others.
func (c Config) scheme(entry bool) string {
	if c.TLS && entry {
		return "https"
	}
	return "http"
}

// Option changes a Config.
type Option func(*Config)

// WithServer sets the WSGI server.
func WithServer(s Server) Option { return func(c *Config) { c.Server = s } }

// WithProxy puts the front door p in front of the server; nil removes it.
func WithProxy(p *proxy.Config) Option { return func(c *Config) { c.Proxy = p } }

// WithAppLimits, WithProxyLimits and WithClientLimits set one container's limits.
func WithAppLimits(l Limits) Option    { return func(c *Config) { c.App = l } }
func WithProxyLimits(l Limits) Option  { return func(c *Config) { c.ProxyLimits = l } }
func WithClientLimits(l Limits) Option { return func(c *Config) { c.Client = l } }

// WithSampler adds or leaves out the /proc sampler's container.
func WithSampler(on bool) Option { return func(c *Config) { c.Sampler = on } }

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
		Sampler:     true,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Validate names the first malformed setting and the form it takes.
func (c Config) Validate() error {
	if c.Image == "" {
		return errors.New("podspec: no image; call image.EnsureLab first")
	}
	if len(c.Server.Cmd) == 0 {
		return errors.New("podspec: no server command; use WithServer(GunicornSync(2)) or similar")
	}
	if p := c.Server.Port; p != 0 && (p < 1 || p > 65535) {
		return fmt.Errorf("podspec: server port %d: want 1 to 65535 (0: %d)", p, AppPort)
	}
	if c.Proxy != nil && c.Proxy.Listen == fmt.Sprintf("127.0.0.1:%d", c.Server.ListenPort()) {
		return fmt.Errorf("podspec: server port %d is the %s proxy's listen address %s: want another", c.Server.ListenPort(), c.Proxy.Kind, c.Proxy.Listen)
	}
	if r := c.Server.ReadyPath; r != "" && !strings.HasPrefix(r, "/") {
		return fmt.Errorf("podspec: server ready path %q: want an absolute path such as /healthz", r)
	}
	if c.CPUPeriod < time.Millisecond || c.CPUPeriod > time.Second {
		return fmt.Errorf("podspec: CPUPeriod %v must be between 1ms and 1s (the kernel's CFS bounds)", c.CPUPeriod)
	}
	limits := map[string]Limits{"app": c.App, "proxy": c.ProxyLimits, "client": c.Client}
	if c.Hops != nil {
		limits["hop"] = c.Hops.Limits
	}
	for name, l := range limits {
		if quota := time.Duration(l.CPUs * float64(c.CPUPeriod)); quota < time.Millisecond {
			return fmt.Errorf("podspec: %s CPUs %.3g gives a quota of %v per %v period; the kernel needs at least 1ms", name, l.CPUs, quota, c.CPUPeriod)
		}
		if l.Memory < 6<<20 {
			return fmt.Errorf("podspec: %s memory %d bytes is below Docker's 6 MiB minimum", name, l.Memory)
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
			return fmt.Errorf("podspec: %s %q must be three byte counts MIN <= DEFAULT <= MAX, e.g. %q", name, v, DefaultTCPRmem)
		}
	}
	if c.Proxy != nil {
		if err := c.Proxy.Validate(); err != nil {
			return err
		}
		// The proxy's root is read-only: its temp files must land in a
		// tmpfs of its role.
		d, _ := c.Proxy.Door()
		spill := d.SpillDir(*c.Proxy)
		writable := spill == "" // a door that never spills needs no path
		for dir := range DefaultHardening[RoleProxy].Tmpfs {
			writable = writable || strings.HasPrefix(spill+"/", dir+"/")
		}
		if !writable {
			return fmt.Errorf("podspec: proxy temp path %q is not under the proxy's tmpfs (%v); its root filesystem is read-only", spill, DefaultHardening[RoleProxy].Tmpfs)
		}
	}
	if c.ReadyWait <= 0 {
		return errors.New("podspec: ReadyWait must be positive")
	}
	if err := c.validateHops(); err != nil {
		return err
	}
	return c.validateTLS()
}
