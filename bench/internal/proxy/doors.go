package proxy

import (
	"embed"
	"fmt"
	"net"
	"strings"
	"text/template"

	"wsgilab/nginxconf"
)

//go:embed templates/*.tmpl
var templates embed.FS

var tmpls = template.Must(template.New("").ParseFS(templates, "templates/*.tmpl"))

// view is what a template sees: the Config, its preset and the
// upstream's host and port apart.
type view struct {
	Config
	Preset     string
	UpHost     string
	UpPort     string
	ListenHost string
	ListenPort string
	SpillDir   string
}

func render(d Door, name string, c Config) (string, error) {
	p, err := c.PresetOf(d)
	if err != nil {
		return "", err
	}
	v := view{Config: c, Preset: p.ID, SpillDir: d.SpillDir(c)}
	v.UpHost, v.UpPort, _ = net.SplitHostPort(c.Upstream)
	v.ListenHost, v.ListenPort, _ = net.SplitHostPort(c.Listen)
	var b strings.Builder
	if err := tmpls.ExecuteTemplate(&b, name, v); err != nil {
		return "", fmt.Errorf("proxy: render %s: %w", name, err)
	}
	return b.String(), nil
}

// NginxSettings are NGINX's switches beyond the addresses (nginxconf.Config
// less Listen and Upstream, which follow the proxy Config's).
type NginxSettings = nginxconf.Config

// Nginx is the Config of NGINX with settings s.
func Nginx(s nginxconf.Config) Config {
	c := New(KindNginx, "")
	c.Listen, c.Upstream = s.Listen, s.Upstream
	c.Nginx = &s
	return c
}

// nginxDoor is NGINX, rendered by package nginxconf.
type nginxDoor struct{}

func (nginxDoor) Kind() string      { return KindNginx }
func (nginxDoor) Package() string   { return "nginx" }
func (nginxDoor) Version() []string { return strings.Fields("nginx -v") }
func (nginxDoor) Presets() []Preset {
	return []Preset{{ID: "article", Text: "article A's template: buffers 4 x 16k, proxy_max_temp_file_size 32m", Source: "article A's nginx.conf (nginxconf)"}}
}
func (nginxDoor) ConfPath() string { return nginxconf.ConfPath }
func (nginxDoor) Render(c Config) (string, error) {
	s := nginxconf.New()
	if c.Nginx != nil {
		s = *c.Nginx
	}
	s.Listen, s.Upstream = c.Listen, c.Upstream
	return s.Render()
}
func (nginxDoor) Run(_ Config, conf string) []string {
	return []string{"nginx", "-e", "stderr", "-c", conf, "-g", "daemon off;"}
}
func (nginxDoor) Check(_ Config, conf string) []string {
	return []string{"nginx", "-t", "-e", "stderr", "-c", conf}
}
func (nginxDoor) Env() []string        { return nil }
func (nginxDoor) Dirs(Config) []string { return nil }
func (nginxDoor) SpillDir(c Config) string {
	if c.Nginx == nil {
		return nginxconf.DefaultTempPath
	}
	return c.Nginx.TempPath
}

// haproxyDoor is HAProxy 2.6: one buffer per direction (tune.bufsize),
// in memory, never on disk.
type haproxyDoor struct{}

func (haproxyDoor) Kind() string      { return KindHAProxy }
func (haproxyDoor) Package() string   { return "haproxy" }
func (haproxyDoor) Version() []string { return strings.Fields("haproxy -v") }
func (haproxyDoor) Presets() []Preset {
	return []Preset{
		{ID: "defaults", Text: "Debian's packaged defaults section: mode http, timeouts 5 s / 50 s / 50 s; tune.bufsize 16 KiB (HAProxy's default)",
			Source: "Debian bookworm haproxy 2.6 /etc/haproxy/haproxy.cfg; https://docs.haproxy.org/2.6/configuration.html#3.2-tune.bufsize"},
		{ID: "bufreq", Text: "the defaults plus option http-buffer-request: wait for the request body (up to one buffer) before connecting",
			Source: "https://docs.haproxy.org/2.6/configuration.html#4.2-option%20http-buffer-request"},
	}
}
func (haproxyDoor) ConfPath() string                   { return ConfDir + "/haproxy.cfg" }
func (d haproxyDoor) Render(c Config) (string, error)  { return render(d, "haproxy.cfg.tmpl", c) }
func (haproxyDoor) Run(_ Config, conf string) []string { return []string{"haproxy", "-db", "-f", conf} }
func (haproxyDoor) Check(_ Config, conf string) []string {
	return []string{"haproxy", "-c", "-f", conf}
}
func (haproxyDoor) Env() []string          { return nil }
func (haproxyDoor) Dirs(Config) []string   { return nil }
func (haproxyDoor) SpillDir(Config) string { return "" }

// apacheDoor is Apache httpd 2.4 with mod_proxy_http under the event MPM.
type apacheDoor struct{}

func (apacheDoor) Kind() string      { return KindApache }
func (apacheDoor) Package() string   { return "apache2" }
func (apacheDoor) Version() []string { return strings.Fields("apache2 -v") }
func (apacheDoor) Presets() []Preset {
	return []Preset{{ID: "defaults", Text: "Debian's mpm_event.conf (2 servers x 25 threads), ProxyPass with ProxyIOBufferSize 8192 (its default)",
		Source: "Debian bookworm apache2 /etc/apache2/mods-available/mpm_event.conf; https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxyiobuffersize"}}
}
func (apacheDoor) ConfPath() string                  { return ConfDir + "/apache2.conf" }
func (d apacheDoor) Render(c Config) (string, error) { return render(d, "apache2.conf.tmpl", c) }
func (apacheDoor) Run(_ Config, conf string) []string {
	return []string{"apache2", "-f", conf, "-DFOREGROUND"}
}
func (apacheDoor) Check(_ Config, conf string) []string { return []string{"apache2", "-t", "-f", conf} }
func (apacheDoor) Env() []string                        { return nil }
func (apacheDoor) Dirs(Config) []string                 { return []string{"/tmp/apache2"} }
func (apacheDoor) SpillDir(Config) string               { return "" }

// caddyDoor is Caddy 2.6.2's reverse_proxy.
type caddyDoor struct{}

func (caddyDoor) Kind() string      { return KindCaddy }
func (caddyDoor) Package() string   { return "caddy" }
func (caddyDoor) Version() []string { return strings.Fields("caddy version") }
func (caddyDoor) Presets() []Preset {
	return []Preset{
		{ID: "defaults", Text: "reverse_proxy at its defaults: responses stream through a 32 KiB copy buffer",
			Source: "https://caddyserver.com/docs/caddyfile/directives/reverse_proxy (v2.6)"},
		{ID: "buffered", Text: "reverse_proxy with buffer_responses: the whole response body is read into memory first",
			Source: "https://caddyserver.com/docs/caddyfile/directives/reverse_proxy#buffer_responses (v2.6)"},
	}
}
func (caddyDoor) ConfPath() string                  { return ConfDir + "/Caddyfile" }
func (d caddyDoor) Render(c Config) (string, error) { return render(d, "Caddyfile.tmpl", c) }
func (caddyDoor) Run(_ Config, conf string) []string {
	return []string{"caddy", "run", "--config", conf, "--adapter", "caddyfile"}
}
func (caddyDoor) Check(_ Config, conf string) []string {
	return []string{"caddy", "validate", "--config", conf, "--adapter", "caddyfile"}
}

// Env keeps Caddy's data and config directories in its /tmp.
func (caddyDoor) Env() []string {
	return []string{"HOME=/tmp", "XDG_DATA_HOME=/tmp/caddy-data", "XDG_CONFIG_HOME=/tmp/caddy-config"}
}
func (caddyDoor) Dirs(Config) []string   { return nil }
func (caddyDoor) SpillDir(Config) string { return "" }

// lighttpdDoor is lighttpd 1.4.69's mod_proxy.
type lighttpdDoor struct{}

func (lighttpdDoor) Kind() string      { return KindLighttpd }
func (lighttpdDoor) Package() string   { return "lighttpd" }
func (lighttpdDoor) Version() []string { return strings.Fields("lighttpd -v") }
func (lighttpdDoor) Presets() []Preset {
	return []Preset{
		{ID: "stream-0", Text: "server.stream-response-body = 0 (its default): the whole response is read ahead, past 1 MiB into temp files in server.upload-dirs",
			Source: "https://redmine.lighttpd.net/projects/lighttpd/wiki/Server_stream-response-bodyDetails"},
		{ID: "stream-2", Text: "server.stream-response-body = 2: the response streams and reading the backend waits for the client",
			Source: "https://redmine.lighttpd.net/projects/lighttpd/wiki/Server_stream-response-bodyDetails"},
	}
}
func (lighttpdDoor) ConfPath() string                  { return ConfDir + "/lighttpd.conf" }
func (d lighttpdDoor) Render(c Config) (string, error) { return render(d, "lighttpd.conf.tmpl", c) }
func (lighttpdDoor) Run(_ Config, conf string) []string {
	return []string{"lighttpd", "-D", "-f", conf}
}
func (lighttpdDoor) Check(_ Config, conf string) []string {
	return []string{"lighttpd", "-tt", "-f", conf}
}
func (lighttpdDoor) Env() []string            { return nil }
func (d lighttpdDoor) Dirs(c Config) []string { return []string{d.SpillDir(c)} }
func (lighttpdDoor) SpillDir(Config) string   { return "/tmp/lighttpd-upload" }

// varnishDoor is Varnish 7.1, passing every request to the app.
type varnishDoor struct{}

func (varnishDoor) Kind() string      { return KindVarnish }
func (varnishDoor) Package() string   { return "varnish" }
func (varnishDoor) Version() []string { return strings.Fields("varnishd -V") }
func (varnishDoor) Presets() []Preset {
	return []Preset{{ID: "pass", Text: "vcl_recv returns pass for every request, as for any uncacheable large download; " +
		"the response streams from transient storage (malloc, unbounded by default) while the fetch reads the backend at its own pace",
		Source: "https://varnish-cache.org/docs/7.1/users-guide/vcl-built-in-subs.html; https://varnish-cache.org/docs/7.1/reference/varnishd.html (Transient storage)"}}
}
func (varnishDoor) ConfPath() string                  { return ConfDir + "/varnish.vcl" }
func (d varnishDoor) Render(c Config) (string, error) { return render(d, "varnish.vcl.tmpl", c) }

// Run starts varnishd in the foreground with its state in /tmp, without
// a jail (an unprivileged container cannot switch users), one thread
// pool small enough for the proxy role's 128 pids, and a 1 MiB shared
// log (its default 80 MiB would fill the proxy's /tmp and memory).
func (varnishDoor) Run(c Config, conf string) []string {
	return append([]string{"varnishd", "-F", "-f", conf, "-a", c.Listen}, varnishArgs...)
}

// Check compiles the VCL (varnishd -C), in a state directory of its own.
func (varnishDoor) Check(c Config, conf string) []string {
	return []string{"varnishd", "-C", "-f", conf, "-n", varnishDir + "-check", "-j", "none"}
}
func (varnishDoor) Env() []string          { return nil }
func (varnishDoor) Dirs(Config) []string   { return nil }
func (varnishDoor) SpillDir(Config) string { return "" }

const varnishDir = "/tmp/varnish"

var varnishArgs = []string{"-n", varnishDir, "-j", "none", "-s", "malloc,16m",
	"-p", "thread_pools=1", "-p", "thread_pool_min=10", "-p", "thread_pool_max=50", "-p", "vsl_space=1M"}

// TLS is whether c's front door terminates TLS: NGINX with TLS set.
func (c Config) TLS() bool { return c.Kind == KindNginx && c.Nginx != nil && c.Nginx.TLS }
