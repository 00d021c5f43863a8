// Package nginxconf renders the NGINX configuration of article A's proxy
// arms from one template. The buffer settings are the article's and are
// fixed; what varies per condition is buffering (of responses and of
// request bodies), gzip and the addresses.
package nginxconf

import (
	_ "embed"
	"fmt"
	"net"
	"path"
	"regexp"
	"strconv"
	"strings"
	"text/template"
)

// Defaults of Config's fields.
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultUpstream        = "127.0.0.1:8000"
	DefaultTempPath        = "/tmp/nginx-proxy-temp"
	DefaultWorkerProcesses = "auto" // Debian's nginx.conf default
	// ConfPath is where the rendered config lands in the proxy container.
	ConfPath = "/tmp/nginx.conf"
	// ClientMaxBodyBytes is the template's client_max_body_size (32m):
	// the largest request body NGINX passes on.
	ClientMaxBodyBytes = 32 << 20
)

//go:embed nginx.conf.tmpl
var text string

var tmpl = template.Must(template.New("nginx.conf").Parse(text))

// Config is what differs between rendered configurations.
type Config struct {
	// Buffering is proxy_buffering on (true) or off (false).
	Buffering bool
	// RequestBuffering is proxy_request_buffering on (true, NGINX's
	// default: the whole request body is read before the upstream is
	// sent anything) or off (the body streams to the upstream as it
	// arrives).
	RequestBuffering bool
	// Gzip turns gzip on for text/event-stream responses (off: no gzip,
	// NGINX's default).
	Gzip bool
	// Listen is the host:port NGINX accepts clients on.
	Listen string
	// Upstream is the host:port of the WSGI server.
	Upstream string
	// TempPath is proxy_temp_path, an absolute path; probes watch the
	// files NGINX keeps open below it.
	TempPath string
	// WorkerProcesses is "auto" or a positive whole number.
	WorkerProcesses string
	// Custom, when set, is a team's own configuration: location blocks
	// that replace the lab's location / inside its server (listening on
	// Listen), server blocks that replace the lab's server (they listen on
	// Listen), or a whole http block that replaces the lab's http
	// context. Location and server blocks reach the server as proxy_pass
	// http://app;. Buffering and the other switches then say nothing;
	// nginx -t checks it before a run.
	Custom string
}

// CustomHTTP is true when Custom is a whole http block, CustomLocation
// when it is location blocks, CustomServers when it is server blocks.
func (c Config) CustomHTTP() bool     { return firstBlock(c.Custom) == "http" }
func (c Config) CustomLocation() bool { return firstBlock(c.Custom) == "location" }
func (c Config) CustomServers() bool  { return c.Custom != "" && !c.CustomHTTP() && !c.CustomLocation() }

// firstBlock is the first directive of a config, past comments and blank
// lines.
func firstBlock(conf string) string {
	m := firstDirective.FindStringSubmatch(conf)
	if m == nil {
		return ""
	}
	return m[1]
}

var firstDirective = regexp.MustCompile(`^(?:\s*(?:#[^\n]*)?\n)*\s*([a-z_]+)`)

// Option changes a Config.
type Option func(*Config)

// WithBuffering sets proxy_buffering.
func WithBuffering(on bool) Option { return func(c *Config) { c.Buffering = on } }

// WithRequestBuffering sets proxy_request_buffering.
func WithRequestBuffering(on bool) Option { return func(c *Config) { c.RequestBuffering = on } }

// WithGzip turns gzip on for text/event-stream.
func WithGzip(on bool) Option { return func(c *Config) { c.Gzip = on } }

// WithWorkerProcesses sets worker_processes ("auto" or a count).
func WithWorkerProcesses(n string) Option { return func(c *Config) { c.WorkerProcesses = n } }

// New returns the default Config changed by opts.
func New(opts ...Option) Config {
	c := Config{
		Buffering:        true,
		RequestBuffering: true,
		Listen:           DefaultListen,
		Upstream:         DefaultUpstream,
		TempPath:         DefaultTempPath,
		WorkerProcesses:  DefaultWorkerProcesses,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Validate names the first malformed field and the form it takes.
func (c Config) Validate() error {
	for name, addr := range map[string]string{"Listen": c.Listen, "Upstream": c.Upstream} {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" {
			return fmt.Errorf("nginxconf: %s %q is not host:port (e.g. %s)", name, addr, DefaultListen)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("nginxconf: %s %q has no port between 1 and 65535", name, addr)
		}
	}
	if !path.IsAbs(c.TempPath) || strings.ContainsAny(c.TempPath, " ;{}\"'\n") {
		return fmt.Errorf("nginxconf: TempPath %q must be an absolute path without spaces, quotes, braces or ';'", c.TempPath)
	}
	if c.WorkerProcesses != "auto" {
		if n, err := strconv.Atoi(c.WorkerProcesses); err != nil || n < 1 {
			return fmt.Errorf("nginxconf: WorkerProcesses %q must be \"auto\" or a whole number above 0", c.WorkerProcesses)
		}
	}
	return nil
}

// Render returns the configuration file text, or the Validate error.
func (c Config) Render() (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, c); err != nil {
		return "", fmt.Errorf("nginxconf: render: %w", err)
	}
	return b.String(), nil
}
