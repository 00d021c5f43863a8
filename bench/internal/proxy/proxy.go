// Package proxy is the pod's proxy role as data: which front door sits
// between the clients and the Python server, with which preset, and how
// the lab runs it. Each front door (NGINX, HAProxy, Apache httpd, Caddy,
// lighttpd) is one small Door, in the way golang/benchmarks' sweet declares
// one interface per external system: its Debian package, its config
// rendered from a template with the lab's addresses and temp paths, its
// own config check, its command and where it spills to disk. A Config
// names a Door by kind, so reports and journals carry it as plain JSON.
package proxy

import (
	"fmt"
	"maps"
	"net"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Defaults of Config.
const (
	DefaultListen   = "127.0.0.1:8080"
	DefaultUpstream = "127.0.0.1:8000"
	// ConfDir holds every rendered config inside the proxy container: the
	// proxy's /tmp tmpfs (its root filesystem is read-only).
	ConfDir = "/tmp"
)

// Kinds of front door.
const (
	KindNginx    = "nginx"
	KindHAProxy  = "haproxy"
	KindApache   = "apache"
	KindCaddy    = "caddy"
	KindLighttpd = "lighttpd"
	KindVarnish  = "varnish"
)

// Door is one front door's integration with the lab.
type Door interface {
	// Kind is the door's name in configs, stack files and reports.
	Kind() string
	// Package is its Debian bookworm package (fixtures/image/packages.txt).
	Package() string
	// Version is the command whose output's first line carries its
	// version (VersionOf reads it), for environment.json.
	Version() []string
	// Presets are the settings the lab runs it at, the first its packaged
	// defaults; each names the source of what it copies.
	Presets() []Preset
	// ConfPath is where its rendered config lands, under ConfDir.
	ConfPath() string
	// Render is its config for c (c.Preset, or c.Custom verbatim).
	Render(c Config) (string, error)
	// Run is the command that serves c on the config at conf in the
	// foreground; Check is its own config check of that file.
	Run(c Config, conf string) []string
	Check(c Config, conf string) []string
	// Env is its environment; Dirs are made before it starts.
	Env() []string
	Dirs(c Config) []string
	// SpillDir is where it buffers responses on disk (the sampler counts
	// the bytes of the files it holds open there); "" when it never does.
	SpillDir(c Config) string
}

// Preset is one setting of a door.
type Preset struct {
	// ID names it in path ids and stack files ("defaults", "buffered").
	ID string
	// Text says what it sets; Source is the documentation it copies.
	Text, Source string
}

// Config is the proxy role of one pod.
type Config struct {
	// Kind names the Door; Preset one of its Presets (empty: the first).
	Kind   string `json:"kind"`
	Preset string `json:"preset,omitempty"`
	// Listen is where it accepts clients, Upstream the server it forwards
	// to, both host:port on loopback.
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
	// Nginx holds NGINX's own switches (kind nginx only); its Listen and
	// Upstream follow the Config's.
	Nginx *NginxSettings `json:"nginx,omitempty"`
	// Custom, when set on a kind other than nginx, is a team's own whole
	// config, used verbatim: it must listen on Listen and forward to
	// Upstream itself. The door's own check reads it before a run.
	Custom string `json:"custom,omitempty"`
}

// Doors are every front door the lab runs, by kind.
var Doors = map[string]Door{
	KindNginx:    nginxDoor{},
	KindHAProxy:  haproxyDoor{},
	KindApache:   apacheDoor{},
	KindCaddy:    caddyDoor{},
	KindLighttpd: lighttpdDoor{},
	KindVarnish:  varnishDoor{},
}

// Kinds are the kinds of Doors, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(Doors)) }

// New is a Config of kind at preset on the default addresses.
func New(kind, preset string) Config {
	return Config{Kind: kind, Preset: preset, Listen: DefaultListen, Upstream: DefaultUpstream}
}

// Door is c's Door, or an error naming the kinds accepted.
func (c Config) Door() (Door, error) {
	d, ok := Doors[c.Kind]
	if !ok {
		return nil, fmt.Errorf("proxy: kind %q: want one of %q", c.Kind, Kinds())
	}
	return d, nil
}

// PresetOf is c's preset of d: c.Preset, or d's first.
func (c Config) PresetOf(d Door) (Preset, error) {
	ps := d.Presets()
	if c.Preset == "" {
		return ps[0], nil
	}
	for _, p := range ps {
		if p.ID == c.Preset {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("proxy: %s preset %q: want one of %q", c.Kind, c.Preset, PresetIDs(d))
}

// PresetIDs are d's presets' ids, its packaged defaults first.
func PresetIDs(d Door) []string {
	var ids []string
	for _, p := range d.Presets() {
		ids = append(ids, p.ID)
	}
	return ids
}

// Validate names the first malformed field and the form it takes.
func (c Config) Validate() error {
	d, err := c.Door()
	if err != nil {
		return err
	}
	if _, err := c.PresetOf(d); err != nil {
		return err
	}
	for name, addr := range map[string]string{"Listen": c.Listen, "Upstream": c.Upstream} {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || strings.ContainsAny(addr, " ;{}\"'\n#") {
			return fmt.Errorf("proxy: %s %q is not host:port (e.g. %s)", name, addr, DefaultListen)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("proxy: %s %q has no port between 1 and 65535", name, addr)
		}
	}
	if c.Kind == KindNginx {
		if c.Custom != "" {
			return fmt.Errorf("proxy: an NGINX config of a team's goes in Nginx.Custom, not Custom")
		}
		if c.Nginx != nil {
			s := *c.Nginx
			s.Listen, s.Upstream = c.Listen, c.Upstream
			if err := s.Validate(); err != nil {
				return err
			}
		}
	} else if c.Nginx != nil {
		return fmt.Errorf("proxy: kind %s takes no NGINX settings", c.Kind)
	}
	if dir := d.SpillDir(c); dir != "" && (!path.IsAbs(dir) || strings.ContainsAny(dir, " ;{}\"'\n")) {
		return fmt.Errorf("proxy: spill dir %q must be an absolute path without spaces, quotes, braces or ';'", dir)
	}
	return nil
}

// Render is c's config text, or the Validate error.
func (c Config) Render() (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	d, _ := c.Door()
	if c.Custom != "" {
		return c.Custom, nil
	}
	return d.Render(c)
}

// Port is Listen's port.
func (c Config) Port() int {
	_, p, _ := net.SplitHostPort(c.Listen)
	n, _ := strconv.Atoi(p)
	return n
}

// Name is "<kind>" or "<kind>-<preset>" off the first preset: the door as
// the report names it.
func (c Config) Name() string {
	d, err := c.Door()
	if err != nil || c.Preset == "" || c.Preset == d.Presets()[0].ID {
		return c.Kind
	}
	return c.Kind + "-" + c.Preset
}

// Shell is the proxy container's command: it writes the config from
// $LAB_PROXY_CONF to the door's ConfPath, makes its Dirs and execs argv
// (d.Run or d.Check of that file). The config travels in the
// environment, so no bind mount ties the lab to a local engine.
func Shell(d Door, c Config, argv []string) []string {
	var b strings.Builder
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	b.WriteString(`printf '%s' "$LAB_PROXY_CONF" > ` + quote(d.ConfPath()))
	if dirs := d.Dirs(c); len(dirs) > 0 {
		b.WriteString(" && mkdir -p")
		for _, dir := range dirs {
			b.WriteString(" " + quote(dir))
		}
	}
	b.WriteString(" && exec")
	for _, a := range argv {
		b.WriteString(" " + quote(a))
	}
	return []string{"sh", "-c", b.String()}
}

// EnvVar carries the rendered config into the proxy container.
const EnvVar = "LAB_PROXY_CONF"

// versionNumber is the first dotted version in a line.
var versionNumber = regexp.MustCompile(`\d+\.\d+(\.\d+)?`)

// VersionOf is the version in out, what a door's Version command printed:
// the first dotted number of its first line ("HAProxy version
// 2.6.12-1+deb12u4" gives 2.6.12), "" when it has none.
func VersionOf(out string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return versionNumber.FindString(first)
}
