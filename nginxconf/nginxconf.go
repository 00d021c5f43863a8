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
	// DefaultWorkerConnections is NGINX's own default worker_connections
	// (Debian's nginx.conf says 768; the lab's template has always said
	// NGINX's 1024).
	DefaultWorkerConnections = 1024
	// MinWorkerConnections and MaxWorkerConnections bound
	// WorkerConnections: a worker needs a few for its listeners and
	// upstreams, and the lab's containers get podspec's 16,384 files.
	MinWorkerConnections = 16
	MaxWorkerConnections = 16384
	// ConfPath is where the rendered config lands in the proxy container.
	ConfPath = "/tmp/nginx.conf"
	// ClientMaxBodyBytes is the template's client_max_body_size (32m):
	// the largest request body NGINX passes on.
	ClientMaxBodyBytes = 32 << 20
	// TLSDir holds a pod's TLS files in whichever container terminates
	// TLS (NGINX, or a server that does it itself), written there at its
	// start from the environment: TLSCert is the server's certificate
	// chain, TLSKey its private key.
	TLSDir  = "/tmp/lab-tls"
	TLSCert = TLSDir + "/server.crt"
	TLSKey  = TLSDir + "/server.key"
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
	// WorkerConnections is each worker's worker_connections, the most
	// connections (clients' and upstreams') it holds at once;
	// MinWorkerConnections to MaxWorkerConnections.
	WorkerConnections int
	// ListenBacklog is the listen socket's backlog= (connections the
	// kernel completes while NGINX does not accept); 0 is NGINX's own
	// default, 511.
	ListenBacklog int
	// TLS makes Listen a TLS listener (listen ... ssl) serving TLSCert
	// and TLSKey; the upstream stays plain HTTP/1.1.
	TLS bool
	// HTTP2 adds http2 to a TLS listener (ALPN h2, HTTP/1.1 still
	// accepted), or, without TLS, makes Listen speak HTTP/2 by prior
	// knowledge only (h2c): NGINX 1.22 then takes no HTTP/1.1 on it.
	HTTP2 bool
	// WebSocketPath, when set, adds an exact location for that path (the
	// lab's /ws, or a team's feed, without its query) that passes the
	// WebSocket Upgrade handshake on (proxy_http_version 1.1, Upgrade
	// and Connection headers) beside the lab's location / or a team's
	// location blocks. Letters, digits and "._~/-" only.
	WebSocketPath string
	// Buffers are the proxy_buffer* sizes; the zero value is ArticleBuffers.
	Buffers Buffers
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

// CertPath and KeyPath are the TLS listener's files (TLSCert, TLSKey),
// for the template.
func (Config) CertPath() string { return TLSCert }
func (Config) KeyPath() string  { return TLSKey }

// firstBlock is the first directive of a config, past comments and blank
// lines.
func firstBlock(conf string) string {
	m := firstDirective.FindStringSubmatch(conf)
	if m == nil {
		return ""
	}
	return m[1]
}

var nginxSize = regexp.MustCompile(`^([0-9]+ )?[0-9]+[kKmMgG]?$`)

var firstDirective = regexp.MustCompile(`^(?:\s*(?:#[^\n]*)?\n)*\s*([a-z_]+)`)

// Bytes is the byte count of one NGINX size ("32m", "16k", "1g", "0"), or
// an error naming the value and the form it takes.
func Bytes(size string) (int64, error) {
	if size == "" || strings.Contains(size, " ") || !nginxSize.MatchString(size) {
		return 0, fmt.Errorf("nginxconf: size %q: want a whole number with an optional k, m or g (e.g. 32m)", size)
	}
	mult := int64(1)
	switch size[len(size)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	}
	if mult > 1 {
		size = size[:len(size)-1]
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, fmt.Errorf("nginxconf: size %q is too large", size)
	}
	return n * mult, nil
}

// Buffers are NGINX's response buffer sizes, each in NGINX's own size
// syntax ("16k", "4 16k", "32m", "0").
type Buffers struct {
	BufferSize, Buffers, BusyBuffersSize, MaxTempFileSize, ClientMaxBodySize string
}

// ArticleBuffers are article A's: 16k, 4 x 16k, 32k busy, 32m on disk.
var ArticleBuffers = Buffers{BufferSize: "16k", Buffers: "4 16k", BusyBuffersSize: "32k", MaxTempFileSize: "32m", ClientMaxBodySize: "32m"}

// IngressNginxBuffers are the ingress-nginx controller's documented
// defaults (proxy-buffer-size 4k, proxy-buffers-number 4,
// proxy-max-temp-file-size 1024m, proxy-body-size 1m):
// https://kubernetes.github.io/ingress-nginx/user-guide/nginx-configuration/configmap/
// busy_buffers is NGINX's default, two buffers.
var IngressNginxBuffers = Buffers{BufferSize: "4k", Buffers: "4 4k", BusyBuffersSize: "8k", MaxTempFileSize: "1024m", ClientMaxBodySize: "1m"}

// OneMiBBuffers read about 1 MiB of a response ahead, in memory only
// (proxy_max_temp_file_size 0): a stand-in for Heroku's router, whose
// documentation states a 1 MB response buffer per connection
// (https://devcenter.heroku.com/articles/http-routing#response-buffering).
var OneMiBBuffers = Buffers{BufferSize: "16k", Buffers: "64 16k", BusyBuffersSize: "32k", MaxTempFileSize: "0", ClientMaxBodySize: "32m"}

// WithBuffers sets the buffer sizes.
func WithBuffers(b Buffers) Option { return func(c *Config) { c.Buffers = b } }

// Option changes a Config.
type Option func(*Config)

// WithBuffering sets proxy_buffering.
func WithBuffering(on bool) Option { return func(c *Config) { c.Buffering = on } }

// WithRequestBuffering sets proxy_request_buffering.
func WithRequestBuffering(on bool) Option { return func(c *Config) { c.RequestBuffering = on } }

// WithGzip turns gzip on for text/event-stream.
func WithGzip(on bool) Option { return func(c *Config) { c.Gzip = on } }

// WithTLS makes the listener TLS (TLSCert, TLSKey).
func WithTLS(on bool) Option { return func(c *Config) { c.TLS = on } }

// WithWebSocket adds the WebSocket location at path ("": none).
func WithWebSocket(path string) Option { return func(c *Config) { c.WebSocketPath = path } }

// WithHTTP2 adds http2 to the listener.
func WithHTTP2(on bool) Option { return func(c *Config) { c.HTTP2 = on } }

// WithWorkerConnections sets worker_connections.
func WithWorkerConnections(n int) Option { return func(c *Config) { c.WorkerConnections = n } }

// WithListenBacklog sets the listen socket's backlog (0: NGINX's 511).
func WithListenBacklog(n int) Option { return func(c *Config) { c.ListenBacklog = n } }

// WithWorkerProcesses sets worker_processes ("auto" or a count).
func WithWorkerProcesses(n string) Option { return func(c *Config) { c.WorkerProcesses = n } }

// New returns the default Config changed by opts.
func New(opts ...Option) Config {
	c := Config{
		Buffering:         true,
		RequestBuffering:  true,
		Listen:            DefaultListen,
		Upstream:          DefaultUpstream,
		TempPath:          DefaultTempPath,
		WorkerProcesses:   DefaultWorkerProcesses,
		WorkerConnections: DefaultWorkerConnections,
		Buffers:           ArticleBuffers,
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
	for name, v := range map[string]string{"BufferSize": c.Buffers.BufferSize, "Buffers": c.Buffers.Buffers, "BusyBuffersSize": c.Buffers.BusyBuffersSize,
		"MaxTempFileSize": c.Buffers.MaxTempFileSize, "ClientMaxBodySize": c.Buffers.ClientMaxBodySize} {
		if !nginxSize.MatchString(v) {
			return fmt.Errorf("nginxconf: Buffers.%s %q must be an NGINX size such as 16k or 32m (Buffers: a count and a size, 4 16k)", name, v)
		}
	}
	if c.WorkerConnections < MinWorkerConnections || c.WorkerConnections > MaxWorkerConnections {
		return fmt.Errorf("nginxconf: WorkerConnections %d must be %d to %d", c.WorkerConnections, MinWorkerConnections, MaxWorkerConnections)
	}
	if c.ListenBacklog < 0 || c.ListenBacklog > 65535 {
		return fmt.Errorf("nginxconf: ListenBacklog %d must be 0 (NGINX's 511) to 65535", c.ListenBacklog)
	}
	if c.WebSocketPath != "" && (!wsPath.MatchString(c.WebSocketPath) || !MatchedAsWritten(c.WebSocketPath)) {
		return fmt.Errorf("nginxconf: WebSocketPath %q must be an absolute path of letters, digits and ._~/- only, as NGINX matches it (no //, . or .. segment), without its query", c.WebSocketPath)
	}
	if c.WebSocketPath != "" && (c.CustomServers() || c.CustomHTTP()) {
		return fmt.Errorf("nginxconf: WebSocketPath adds a location to the lab's server, which a custom server or http block replaces: want location blocks inside the lab's server")
	}
	if (c.TLS || c.HTTP2) && (c.CustomServers() || c.CustomHTTP()) {
		return fmt.Errorf("nginxconf: TLS %v, HTTP2 %v set the lab's own listen line, which a custom server or http block replaces: want location blocks inside the lab's server", c.TLS, c.HTTP2)
	}
	if c.WorkerProcesses != "auto" {
		if n, err := strconv.Atoi(c.WorkerProcesses); err != nil || n < 1 {
			return fmt.Errorf("nginxconf: WorkerProcesses %q must be \"auto\" or a whole number above 0", c.WorkerProcesses)
		}
	}
	return nil
}

// MatchedAsWritten is whether NGINX matches a location of absolute path
// p as written: no empty, "." or ".." segment, which NGINX normalises
// away from a request's path before it matches (a trailing "/" stays).
func MatchedAsWritten(p string) bool {
	segs := strings.Split(p, "/")[1:]
	for i, s := range segs {
		if s == "." || s == ".." || (s == "" && i < len(segs)-1) {
			return false
		}
	}
	return true
}

// wsPath is what a WebSocket location's path may hold: nothing NGINX's
// config syntax reads (a team's path is untrusted input).
var wsPath = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*$`)

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
