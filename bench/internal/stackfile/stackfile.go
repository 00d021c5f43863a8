// Package stackfile reads a team's stack file: one small YAML file that
// describes the team's own server setup (its Docker image, or an app
// directory run on the lab's image), what sits in front of it, its paths,
// its limits and what it requires under slow clients. Decoding is strict
// (an unknown key is an error) and every field is validated before
// anything starts; each error names the field, the value and what is
// accepted. The package starts nothing: package engine turns a File into
// the conditions of a stack check.
package stackfile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// File is a stack file. Exactly one of App and Image is set.
type File struct {
	// Name names the stack in condition ids and reports: 1 to 40 of
	// a-z, 0-9 and '-', starting with a letter or digit.
	Name string `yaml:"name"`
	// App is an app directory run on the lab's image.
	App *App `yaml:"app"`
	// Image is the team's own image, already on the engine.
	Image *Image `yaml:"image"`
	// Proxy is what sits in front of the server; the zero value is none.
	Proxy Proxy `yaml:"proxy"`
	// Paths are the app's paths the load uses.
	Paths Paths `yaml:"paths"`
	// Limits are the CPU and memory per role; unset roles get article
	// A's (podspec's defaults).
	Limits Limits `yaml:"limits"`
	// Requires is what the team requires.
	Requires Requires `yaml:"requires"`

	// Dir is the stack file's directory, inside which its relative paths
	// (App.Dir, Proxy.Config) are read (OpenApp, ReadConfig); set by Load.
	Dir string `yaml:"-"`
	// Path is the file's path and Source its bytes as read; set by Load.
	Path   string `yaml:"-"`
	Source []byte `yaml:"-"`
	// tree is App.Dir as Parse read and checked it: OpenApp gives these
	// bytes, and a Validate again checks them without reading again.
	tree *Tree
}

// App is a WSGI or ASGI app directory, copied into an image built from
// the lab's own, and the server command that runs it.
type App struct {
	// Dir is the directory, relative to the stack file and inside its
	// directory; it holds Module.
	Dir string `yaml:"dir"`
	// Module is the import path "package.module:callable".
	Module string `yaml:"module"`
	// Interface is "wsgi" (the default) or "asgi".
	Interface string `yaml:"interface"`
	// Server is the server program and its arguments, without the bind
	// address (the lab binds it) and without the app (Module): gunicorn,
	// uwsgi or uvicorn.
	Server []string `yaml:"server"`
	// Env is added to the server's environment.
	Env map[string]string `yaml:"env"`
}

// Image is a team's own image: it runs Command, listening on Port.
type Image struct {
	// Ref is the image reference on the engine ("team/app:1.4"); the lab
	// never pulls it.
	Ref string `yaml:"ref"`
	// Command is the entry command and its arguments; it must listen on
	// 127.0.0.1:Port (or every address) in the pod.
	Command []string `yaml:"command"`
	// Env is added to the container's environment.
	Env map[string]string `yaml:"env"`
	// Port is where the server listens: 1024 to 65535, not 8080 (NGINX's).
	Port int `yaml:"port"`
	// User runs the command: "uid" or "uid:gid", numbers above 0 (a
	// name could be root inside the image).
	User string `yaml:"user"`
	// Workdir is the working directory; empty is the image's own.
	Workdir string `yaml:"workdir"`
}

// Proxy modes.
const (
	ProxyNone         = "none"
	ProxyBufferingOn  = "buffering-on"
	ProxyBufferingOff = "buffering-off"
	ProxyCustom       = "custom"
)

// Proxy is the front door in front of the server, or nothing.
type Proxy struct {
	// Kind is the front door: nginx (the default), haproxy, apache,
	// caddy, lighttpd or varnish (proxy.Kinds), each from Debian bookworm
	// on the lab's image.
	Kind string `yaml:"kind"`
	// Mode, for nginx: none (the default), buffering-on or buffering-off
	// (the lab's template), or custom (Config). Other kinds take none.
	Mode string `yaml:"mode"`
	// Preset, for the other kinds: one of the door's presets
	// (proxy.Door.Presets; empty: its packaged defaults).
	Preset string `yaml:"preset"`
	// Config is a team's own config file, relative to the stack file and
	// inside its directory, checked by the door's own config check
	// (nginx -t, haproxy -c, apache2 -t, caddy validate, lighttpd -tt,
	// varnishd -C)
	// before anything runs. For nginx, with mode custom: location blocks
	// (the lab's server block, listening on 127.0.0.1:8080, wraps them),
	// server blocks or a whole http block, which listen on 127.0.0.1:8080
	// themselves; proxy_pass http://app; reaches the server from location
	// and server blocks. For the other kinds, instead of a preset: the
	// door's whole config, used verbatim, in the foreground, listening on
	// 127.0.0.1:8080 and forwarding to the server at 127.0.0.1:8000 (an
	// app directory's) or at 127.0.0.1:image.port.
	Config string `yaml:"config"`
}

// Path is one of the app's paths and the status it answers.
type Path struct {
	// Path is absolute, with its query if any ("/report?days=30").
	Path string `yaml:"path"`
	// Status is the status it answers when served; 0 is 200.
	Status int `yaml:"status"`
	// Bytes is the body's size, for the large path only (required there).
	Bytes int64 `yaml:"bytes"`
}

// Paths are the app's paths.
type Paths struct {
	// Fast is the path whose latency is watched (article A's /fast).
	Fast Path `yaml:"fast"`
	// Large is a large response, read slowly by slow readers; required
	// by requires.slow_readers.
	Large *Path `yaml:"large"`
	// Upload takes a POST body, sent slowly by slow uploads; required by
	// requires.slow_uploads.
	Upload *Path `yaml:"upload"`
	// WS is a WebSocket feed: a path that answers the Upgrade with 101
	// and pushes what the app pushes; required by
	// requires.ws_slow_consumers. Letters, digits and "._~/-" in its
	// path, and a query if any; no status or bytes.
	WS *Path `yaml:"ws"`
}

// Limits are per role.
type Limits struct {
	App   *RoleLimits `yaml:"app"`
	Proxy *RoleLimits `yaml:"proxy"`
}

// RoleLimits are one container's.
type RoleLimits struct {
	// CPUs is the CFS quota in cores: 0.1 to 2.
	CPUs float64 `yaml:"cpus"`
	// MemoryMiB is the memory limit: 32 to 4096 MiB.
	MemoryMiB int `yaml:"memory_mib"`
}

// Requires is what the team requires: for each slow-client behaviour, the
// number of concurrent slow clients under which the fast path must stay
// within FastP95Ms (0: not checked), and that bound.
type Requires struct {
	SlowReaders       int `yaml:"slow_readers"`
	SlowUploads       int `yaml:"slow_uploads"`
	SlowHeaders       int `yaml:"slow_headers"`
	SilentConnections int `yaml:"silent_connections"`
	// SlowTLS is slow TLS handshakes (a ClientHello a byte every 500 ms),
	// with the fast path over TLS too: the server terminates TLS itself
	// when proxy.mode is none (app: only, whose server's flags the lab
	// knows), else NGINX does (buffering-on or -off, or location blocks
	// of the team's own config).
	SlowTLS int `yaml:"slow_tls"`
	// H2SlowReaders is slow HTTP/2 readers: connections to NGINX's TLS
	// listener (ALPN h2), each reading 2 streams of paths.large at 2 MiB/s
	// a stream, with the fast path over HTTP/1.1 on the same listener. It
	// needs NGINX in front (buffering-on or -off, or location blocks of
	// the team's own config): the servers a stack file starts speak HTTP/1.1.
	H2SlowReaders int `yaml:"h2_slow_readers"`
	// WSSlowConsumers is slow consumers of paths.ws: WebSockets read at
	// slow_read_kib_s (2 MiB/s) through an 8 KiB receive buffer, whatever
	// the feed pushes, each held for the fast path's whole window. It
	// needs an ASGI app (app.interface asgi) or a team's image, directly
	// or behind NGINX (which passes the Upgrade on at paths.ws).
	WSSlowConsumers int `yaml:"ws_slow_consumers"`
	// SlowReadKiBs is the slow readers' pace in KiB/s; 0 is
	// DefaultSlowReadKiBs, article A's 2 MiB/s. Hundreds of readers read
	// slowly: the check's last step reads at most MaxTotalReadKiBs.
	SlowReadKiBs int `yaml:"slow_read_kib_s"`
	// FastP95Ms bounds the fast path's p95 at every step up to a
	// requirement; 0 is DefaultFastP95Ms.
	FastP95Ms float64 `yaml:"fast_p95_ms"`
	// ClientLatencyMs delays every byte between the lab's clients and
	// your entry point this long each way, the fast path's and the slow
	// readers' alike, give or take a fifth (Toxiproxy's latency toxic on
	// a hop, which also paces the readers): 0 (none) or one of
	// ClientLatenciesMs, the lab's latency columns. The baseline and every
	// slow-reader step run through it, so fast_p95_ms bounds the fast path
	// with your clients' round trip in it. Slow readers only: with
	// another behaviour above 0 it is refused.
	ClientLatencyMs int `yaml:"client_latency_ms"`
	// Resets cuts clients off part-way and checks that your stack lets
	// go of them: "download" cuts slow_readers downloads of paths.large,
	// "upload" slow_uploads bodies sent to paths.upload, at most
	// MaxResetClients of either, at ResetCutBytes (Toxiproxy's
	// limit_data on a hop, which then closes both its sockets), all at
	// once, 2 s into the transfer at 2 MiB/s (the lab's pace, whatever
	// slow_read_kib_s says; client_latency_ms does not apply). Before
	// its count of descriptors the lab fetches the path whole as many
	// times at once, so that what your app opens on first use and keeps
	// is not taken for a leak. The check passes when every client was
	// cut there, no fast request after the cut failed and their p95 is
	// within fast_p95_ms, and your server (and front door) hold no more
	// descriptors, nor NGINX from the lab's template a temp file, at the
	// end than before the load: a worker still held by a cut client
	// holds its socket. Each value at most once.
	Resets []string `yaml:"resets"`
}

// The values requires.resets takes: the lab's reset columns (package
// engine's ResetMidDownload and ResetMidUpload).
const (
	ResetDownload = "download"
	ResetUpload   = "upload"
)

// ResetCutBytes is where a reset cuts a client: the bytes the hop relays
// on its stream, headers included; ResetSlackBytes how far from it a
// client may have moved its body and still count as cut there (package
// engine's ResetCutBytes and CutSlackBytes; its tests hold them equal).
// paths.large must be longer than both, or a download would end whole.
const (
	ResetCutBytes   = 4 << 20
	ResetSlackBytes = 256 << 10
)

// MaxResetClients bounds the clients a reset cuts at once, all through
// one hop (a requirement above it is cut at it): 4 readers behind NGINX
// buffering on were all cut where the hop cuts (3 runs), as were 2
// readers or uploads on every path measured (directly, NGINX, HAProxy; 5
// runs each), but at 8 behind NGINX 2 readers got 3.40 to 3.47 MB
// before the hop closed, 0.7 MB short of its count (3 of 3 runs; at 16,
// 10 of 16), a cut that is not the fault the step is about
// (reports/measurements.md, stop 70).
const MaxResetClients = 4

// ClientLatenciesMs are the one-way delays requires.client_latency_ms
// takes: the lab's latency columns' (package engine's Latency50 and
// Latency150; its tests hold them equal).
var ClientLatenciesMs = []int{50, 150}

// ReadKiBs is SlowReadKiBs or its default.
func (r Requires) ReadKiBs() int {
	if r.SlowReadKiBs == 0 {
		return DefaultSlowReadKiBs
	}
	return r.SlowReadKiBs
}

// DefaultFastP95Ms is the matrix's stall line: a fast path over a second
// at p95 is stalled.
const DefaultFastP95Ms = 1000

// P95Ms is FastP95Ms or its default.
func (r Requires) P95Ms() float64 {
	if r.FastP95Ms == 0 {
		return DefaultFastP95Ms
	}
	return r.FastP95Ms
}

// Load reads, decodes and validates the stack file at path; every
// problem is named, all at once.
func Load(path string) (File, error) {
	b, err := readFileAt(path)
	if err != nil {
		return File{}, fmt.Errorf("stack file: %w", err)
	}
	f, err := Parse(b, filepath.Dir(path))
	if err != nil {
		return File{}, fmt.Errorf("stack file %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// Parse decodes b strictly (unknown keys and a second document are
// errors) and validates it, relative paths against dir.
func Parse(b []byte, dir string) (File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("not a stack file: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return File{}, errors.New("a second YAML document: want one stack per file")
	}
	f.Dir, f.Source = dir, b
	tree, err := f.check()
	f.tree = tree
	return f, err
}
