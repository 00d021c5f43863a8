package stackfile

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

// Bounds of a stack file's fields.
const (
	// MaxClients bounds the slow uploads required: the check steps to
	// the requirement plus one, and 16 uploads of article A's 2 MiB/s are
	// what the machine carries.
	MaxClients = 15
	// MaxH2Readers bounds the slow HTTP/2 readers required: the check
	// steps to the requirement plus one, and 8 connections of 2 streams
	// are the matrix's 16 readers of 2 MiB/s.
	MaxH2Readers = 7
	// MaxSlowReaders bounds the slow readers required, and MaxHeldClients
	// the slow headers and silent connections: past 15 the check steps
	// geometrically, its last step the next doubling past the
	// requirement (1,024 readers, 8,192 held connections at most).
	MaxSlowReaders = 1000
	MaxHeldClients = 5000
	// ReaderStepLimit and HeldStepLimit are the most slow readers and
	// held connections a step runs (package engine's MaxDownloads and
	// MaxHeldConns; its tests hold them equal).
	ReaderStepLimit = 1024
	HeldStepLimit   = 10000
	// DefaultSlowReadKiBs is requires.slow_read_kib_s's default, article
	// A's 2 MiB/s; MaxTotalReadKiBs bounds what the check's largest step
	// reads in all (16 readers at 2 MiB/s), so that hundreds of readers
	// read slowly, as mobile readers do.
	DefaultSlowReadKiBs = 2048
	MaxTotalReadKiBs    = 32768
	// MaxReadSeconds bounds how long a slow reader takes to read
	// paths.large at its pace, within the client's 60 s download timeout.
	MaxReadSeconds = 50
	MaxP95Ms       = 60_000
	MinCPUs        = 0.1
	MaxCPUs        = 2
	MinMemMiB      = 32
	MaxMemMiB      = 4096
	// ProxyListen is where NGINX listens in the pod, custom configs too.
	ProxyListen = "127.0.0.1:8080"
	// MaxLargeBytes bounds paths.large.bytes: a slow reader reads it at
	// 2 MiB/s within MaxReadSeconds.
	MaxLargeBytes = 100 << 20
)

// Programs are the servers an app directory can run under.
var Programs = []string{"gunicorn", "uwsgi", "uvicorn"}

// configFlags load a server's settings from a file, where the lab reads
// them from the command only (its capacity, its bounds).
var configFlags = map[string][]string{
	"gunicorn": {"-c", "--config"},
	"uwsgi":    {"--ini", "--xml", "--yaml", "--yml", "--json", "--sqlite3", "--include", "--inherit", "--set"},
}

// bindFlags are the flags the lab sets itself, per program.
var bindFlags = map[string][]string{
	"gunicorn": {"-b", "--bind", "--chdir", "--daemon", "-D"},
	"uwsgi":    {"--http", "--http-socket", "--socket", "-s", "--https", "--module", "--wsgi-file", "-w", "--daemonize"},
	"uvicorn":  {"--host", "--port", "--uds", "--fd", "--app-dir"},
}

// tlsFlags turn a server's own TLS on: the lab sets them itself, for
// requires.slow_tls only (podspec.ServeTLS), so that the other
// behaviours run over the plain HTTP they are judged as.
var tlsFlags = map[string][]string{
	"gunicorn": {"--certfile", "--keyfile", "--ca-certs", "--ssl-version", "--cert-reqs", "--do-handshake-on-connect", "--ciphers"},
	"uwsgi":    {"--https-socket", "--https2", "--ssl-socket"},
	"uvicorn":  {"--ssl-certfile", "--ssl-keyfile", "--ssl-keyfile-password", "--ssl-version", "--ssl-cert-reqs", "--ssl-ca-certs", "--ssl-ciphers"},
}

var (
	nameRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	moduleRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$`)
	envRe    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	userRe   = regexp.MustCompile(`^([0-9]+)(:([0-9]+))?$`)
	wsPathRe = regexp.MustCompile(`^/[A-Za-z0-9._~/-]*(\?[A-Za-z0-9._~=&%+-]*)?$`)
	refRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$`)
)

// Validate names every malformed field, its value and what is accepted.
func (f File) Validate() error {
	_, err := f.check()
	return err
}

// check validates f, and returns its app directory as read (f's own when
// Parse read it already, so it is read once).
func (f File) check() (*Tree, error) {
	var tree *Tree
	var errs []error
	bad := func(field string, value any, want string) {
		errs = append(errs, fmt.Errorf("%s %s: want %s", field, show(value), want))
	}
	if !nameRe.MatchString(f.Name) {
		bad("name", f.Name, "1 to 40 of a-z, 0-9 and '-', starting with a letter or digit")
	}
	switch {
	case (f.App == nil) == (f.Image == nil):
		bad("app/image", fmt.Sprintf("%d of them", count(f.App != nil, f.Image != nil)), "exactly one: app (a directory run on the lab's image) or image (your own)")
	case f.App != nil:
		tree = f.App.validate(f.Dir, f.tree, f.Limits.appMemoryMiB(), bad)
	default:
		f.Image.validate(f.Limits.appMemoryMiB(), bad)
	}
	f.Proxy.validate(f.Dir, bad)
	f.Paths.validate(f.Requires, bad)
	for role, l := range map[string]*RoleLimits{"app": f.Limits.App, "proxy": f.Limits.Proxy} {
		if l == nil {
			continue
		}
		if l.CPUs < MinCPUs || l.CPUs > MaxCPUs {
			bad("limits."+role+".cpus", l.CPUs, fmt.Sprintf("%g to %d cores", MinCPUs, MaxCPUs))
		}
		if l.MemoryMiB < MinMemMiB || l.MemoryMiB > MaxMemMiB {
			bad("limits."+role+".memory_mib", l.MemoryMiB, fmt.Sprintf("%d to %d", MinMemMiB, MaxMemMiB))
		}
	}
	if f.Limits.Proxy != nil && f.Proxy.None() {
		bad("limits.proxy", "set", "no proxy limits when proxy.mode is none")
	}
	r := f.Requires
	required := false
	for field, b := range map[string][2]int{"slow_readers": {r.SlowReaders, MaxSlowReaders}, "slow_uploads": {r.SlowUploads, MaxClients},
		"slow_headers": {r.SlowHeaders, MaxHeldClients}, "silent_connections": {r.SilentConnections, MaxHeldClients},
		"slow_tls": {r.SlowTLS, MaxHeldClients}, "h2_slow_readers": {r.H2SlowReaders, MaxH2Readers}, "ws_slow_consumers": {r.WSSlowConsumers, MaxClients}} {
		if n, most := b[0], b[1]; n < 0 || n > most {
			bad("requires."+field, n, fmt.Sprintf("0 (not checked) to %d concurrent slow clients", most))
		}
		required = required || b[0] > 0
	}
	rate := r.ReadKiBs()
	last := LastStep(r.SlowReaders, ReaderStepLimit)
	switch {
	case r.SlowReadKiBs < 0 || r.SlowReadKiBs > DefaultSlowReadKiBs:
		bad("requires.slow_read_kib_s", r.SlowReadKiBs, fmt.Sprintf("0 (the default, %d) to %d KiB/s", DefaultSlowReadKiBs, DefaultSlowReadKiBs))
	case r.SlowReaders <= 0 || r.SlowReaders > MaxSlowReaders:
		// no readers to pace, or already refused
	case last*rate > MaxTotalReadKiBs:
		bad("requires.slow_read_kib_s", rate, fmt.Sprintf("at most %d KiB/s for %d slow readers: the check's last step, %d readers, may read %d KiB/s in all",
			MaxTotalReadKiBs/last, r.SlowReaders, last, MaxTotalReadKiBs))
	case f.Paths.Large != nil && f.Paths.Large.Bytes > int64(rate)*1024*MaxReadSeconds:
		bad("requires.slow_read_kib_s", rate, fmt.Sprintf("at least %d KiB/s: a slow reader reads paths.large (%d bytes) within %d s",
			(f.Paths.Large.Bytes+1024*MaxReadSeconds-1)/(1024*MaxReadSeconds), f.Paths.Large.Bytes, MaxReadSeconds))
	}
	if r.SlowTLS > 0 {
		switch kind := f.Proxy.DoorKind(); {
		case kind != proxy.KindNginx:
			bad("requires.slow_tls", r.SlowTLS, fmt.Sprintf("0 behind %s: the lab terminates TLS in NGINX (proxy.kind nginx) or in your server itself (proxy.mode none)", kind))
		case f.Proxy.None() && f.App == nil:
			bad("requires.slow_tls", r.SlowTLS, "0 with image: and proxy.mode none: the lab knows the TLS flags of the servers it starts from app: only; put NGINX in front (proxy.mode buffering-on)")
		}
	}
	if r.H2SlowReaders > 0 {
		switch kind := f.Proxy.DoorKind(); {
		case f.Proxy.None():
			bad("requires.h2_slow_readers", r.H2SlowReaders, "0 with proxy.mode none: your server cannot speak HTTP/2 here (the lab starts Gunicorn, uWSGI and Uvicorn, which speak HTTP/1.1); put NGINX in front (proxy.mode buffering-on)")
		case kind != proxy.KindNginx:
			bad("requires.h2_slow_readers", r.H2SlowReaders, fmt.Sprintf("0 behind %s: the lab serves HTTP/2 from NGINX's TLS listener (proxy.kind nginx)", kind))
		}
	}
	if r.WSSlowConsumers > 0 {
		switch kind := f.Proxy.DoorKind(); {
		case !f.Proxy.None() && kind != proxy.KindNginx:
			bad("requires.ws_slow_consumers", r.WSSlowConsumers, fmt.Sprintf("0 behind %s: the lab passes WebSockets on through NGINX (proxy.kind nginx), or none (proxy.mode none)", kind))
		case f.App != nil && f.App.iface() != "asgi":
			bad("requires.ws_slow_consumers", r.WSSlowConsumers, "0 for a WSGI app: WSGI has no WebSockets; an ASGI app (app.interface asgi) under Uvicorn, or your own image, takes them")
		}
	}
	if ms := r.ClientLatencyMs; ms != 0 {
		others := r.SlowUploads + r.SlowHeaders + r.SilentConnections + r.SlowTLS + r.H2SlowReaders + r.WSSlowConsumers
		switch {
		case !slices.Contains(ClientLatenciesMs, ms):
			bad("requires.client_latency_ms", ms, fmt.Sprintf("0 (none) or one of %v ms each way, the lab's latency columns", ClientLatenciesMs))
		case r.SlowReaders <= 0 || others > 0:
			bad("requires.client_latency_ms", ms, "0 unless slow_readers is the only behaviour above 0: the delay's hop paces slow readers alone")
		case !wholeKBs(int64(rate) * 1024):
			bad("requires.slow_read_kib_s", rate, "with client_latency_ms, a pace the hop holds in whole KB/s of 1,000 bytes within 0.1 % (125, 250, 500, 1000 or 2048 do)")
		case r.P95Ms() <= float64(2*ms):
			bad("requires.fast_p95_ms", r.FastP95Ms, fmt.Sprintf("above the round trip client_latency_ms makes, %d ms", 2*ms))
		}
	}
	r.validateResets(f.Paths, bad)
	if !required {
		bad("requires", "no behaviour above 0", "at least one of slow_readers, slow_uploads, slow_headers, silent_connections, slow_tls, h2_slow_readers, ws_slow_consumers above 0")
	}
	if r.FastP95Ms < 0 || r.FastP95Ms > MaxP95Ms {
		bad("requires.fast_p95_ms", r.FastP95Ms, fmt.Sprintf("0 (the default, %d) to %d", DefaultFastP95Ms, MaxP95Ms))
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return tree, errors.Join(errs...)
}

// validateResets checks requires.resets: known values, each once, with
// clients to cut and, for downloads, a body longer than the cut.
func (r Requires) validateResets(p Paths, bad func(string, any, string)) {
	seen := map[string]bool{}
	for _, v := range r.Resets {
		clients, field := 0, ""
		switch v {
		case ResetDownload:
			clients, field = r.SlowReaders, "slow_readers"
		case ResetUpload:
			clients, field = r.SlowUploads, "slow_uploads"
		default:
			bad("requires.resets", v, fmt.Sprintf("%q (cut the slow readers' downloads) or %q (the slow uploads' bodies)", ResetDownload, ResetUpload))
			continue
		}
		switch {
		case seen[v]:
			bad("requires.resets", v, "each value at most once")
		case clients <= 0:
			bad("requires.resets", v, fmt.Sprintf("with %s 1 or more: its clients are the ones cut, up to %d at once (got %d)", field, MaxResetClients, clients))
		case v == ResetDownload && p.Large != nil && p.Large.Bytes <= ResetCutBytes+ResetSlackBytes:
			bad("paths.large.bytes", p.Large.Bytes, fmt.Sprintf("more than %d with requires.resets %s: the hop cuts each download at %d bytes (4 MiB), give or take %d", ResetCutBytes+ResetSlackBytes, v, ResetCutBytes, ResetSlackBytes))
		}
		seen[v] = true
	}
}

// wholeKBs reports whether rate (bytes/s) lies within 0.1 % of whole KB/s
// of 1,000 bytes, the unit Toxiproxy paces in (package engine's
// MaxToxiproxyRateError).
func wholeKBs(rate int64) bool {
	kbs := (rate + 500) / 1000
	return kbs > 0 && math.Abs(float64(kbs*1000)/float64(rate)-1) <= 0.001
}

// validate checks a, its directory tree (read from dir unless given), and
// returns the tree.
func (a *App) validate(dir string, tree *Tree, memMiB int, bad func(string, any, string)) *Tree {
	var err error
	if tree == nil {
		tree, err = readTree(dir, a.Dir)
	}
	switch {
	case inside(a.Dir) != nil:
		bad("app.dir", a.Dir, "a directory inside the stack file's directory, as a relative path (a stack file and its directory are untrusted input)")
	case errors.Is(err, errNoDir):
		bad("app.dir", a.Dir, "a directory that exists inside the stack file's directory")
	case err != nil:
		bad("app.dir", a.Dir, fmt.Sprintf("only files, directories and links to files inside it, at most %d files and directories and %d MiB (a stack directory is untrusted input): %v",
			MaxAppFiles, MaxAppBytes>>20, err))
	}
	if !moduleRe.MatchString(a.Module) {
		bad("app.module", a.Module, `an import path "package.module:callable", e.g. "shop.wsgi:application"`)
	} else if tree != nil {
		mod := strings.ReplaceAll(strings.SplitN(a.Module, ":", 2)[0], ".", "/")
		if !tree.Has(mod+".py") && !tree.Has(mod+"/__init__.py") {
			bad("app.module", a.Module, fmt.Sprintf("a module in app.dir (%s.py or %s/__init__.py not found among the files it copies: dot files and __pycache__ are left out)", mod, mod))
		}
	}
	iface := a.iface()
	if iface != "wsgi" && iface != "asgi" {
		bad("app.interface", a.Interface, `"wsgi" (the default) or "asgi"`)
	}
	if len(a.Server) == 0 || !slices.Contains(Programs, a.Server[0]) {
		first := ""
		if len(a.Server) > 0 {
			first = a.Server[0]
		}
		bad("app.server[0]", first, fmt.Sprintf("one of %q, then its arguments", Programs))
	} else {
		prog := a.Server[0]
		for _, arg := range a.Server[1:] {
			flag, _, _ := strings.Cut(arg, "=")
			if slices.Contains(bindFlags[prog], flag) {
				bad("app.server", arg, fmt.Sprintf("no %s: the lab binds %s to the pod's address and names the app from app.module", flag, prog))
			}
			if slices.Contains(tlsFlags[prog], flag) {
				bad("app.server", arg, fmt.Sprintf("no %s: the lab sets %s's TLS itself, with a certificate of its own, when requires.slow_tls asks for it", flag, prog))
			}
			if slices.Contains(configFlags[prog], flag) {
				bad("app.server", arg, fmt.Sprintf("no %s: the lab reads the server's settings from app.server, where they are bounded; a settings file's would not be", flag))
			}
		}
		validCounts("app.server", a.Server, memMiB, bad)
		info := ReadServer(a.Server)
		switch {
		case iface == "wsgi" && prog == "uvicorn":
			bad("app.server[0]", prog, `gunicorn or uwsgi for a WSGI app (uvicorn serves interface: asgi)`)
		case iface == "asgi" && prog == "uwsgi":
			bad("app.server[0]", prog, `gunicorn (with -k uvicorn.workers.UvicornWorker) or uvicorn for an ASGI app`)
		case iface == "asgi" && prog == "gunicorn" && info.Class != "uvicorn":
			bad("app.server", info.Class+" worker class", "--worker-class uvicorn.workers.UvicornWorker for an ASGI app under gunicorn")
		}
	}
	validEnv("app.env", a.Env, bad)
	return tree
}

func (a *App) iface() string {
	if a.Interface == "" {
		return "wsgi"
	}
	return a.Interface
}

func (im *Image) validate(memMiB int, bad func(string, any, string)) {
	if !refRe.MatchString(im.Ref) {
		bad("image.ref", im.Ref, `an image reference on the engine, e.g. "team/app:1.4" (the lab never pulls)`)
	}
	if len(im.Command) == 0 || im.Command[0] == "" {
		bad("image.command", im.Command, "the server's command and arguments, e.g. [gunicorn, -b, 0.0.0.0:8000, app:app]")
	} else {
		validCounts("image.command", im.Command, memMiB, bad)
	}
	if im.Port < 1024 || im.Port > 65535 || fmt.Sprintf("127.0.0.1:%d", im.Port) == ProxyListen {
		bad("image.port", im.Port, "the port the command listens on, 1024 to 65535 but 8080 (NGINX's)")
	}
	if !nonRoot(im.User) {
		bad("image.user", im.User, `a numeric, non-root user: "uid" or "uid:gid", neither 0 (a name could be root inside the image)`)
	}
	if im.Workdir != "" && !filepath.IsAbs(im.Workdir) {
		bad("image.workdir", im.Workdir, "an absolute path, or nothing for the image's own")
	}
	validEnv("image.env", im.Env, bad)
}

// nonRoot is whether user is "uid" or "uid:gid", numbers above 0.
func nonRoot(user string) bool {
	m := userRe.FindStringSubmatch(user)
	if m == nil {
		return false
	}
	for _, id := range []string{m[1], m[3]} {
		if id == "" {
			continue
		}
		if n, err := strconv.Atoi(id); err != nil || n <= 0 {
			return false
		}
	}
	return true
}

func validEnv(field string, env map[string]string, bad func(string, any, string)) {
	for k := range env {
		switch {
		case !envRe.MatchString(k) || strings.HasPrefix(k, "LAB_"):
			bad(field, k, "variable names of A-Z, a-z, 0-9 and '_', not starting with a digit nor LAB_ (the lab's own)")
		case isServerEnv(k):
			bad(field, k, fmt.Sprintf("none of %s: the lab reads the server's concurrency and bind from its command", strings.Join(serverEnv, ", ")))
		}
	}
}

func (p Proxy) mode() string {
	if p.Mode == "" {
		return ProxyNone
	}
	return p.Mode
}

// DoorKind is p's front door: nginx unless another is named.
func (p Proxy) DoorKind() string {
	if p.Kind == "" {
		return proxy.KindNginx
	}
	return p.Kind
}

// None is whether nothing sits in front of the server.
func (p Proxy) None() bool { return p.DoorKind() == proxy.KindNginx && p.mode() == ProxyNone }

func (p Proxy) validate(dir string, bad func(string, any, string)) {
	d, ok := proxy.Doors[p.DoorKind()]
	if !ok {
		bad("proxy.kind", p.Kind, fmt.Sprintf("one of %q", proxy.Kinds()))
		return
	}
	own := false
	if p.DoorKind() == proxy.KindNginx {
		modes := []string{ProxyNone, ProxyBufferingOn, ProxyBufferingOff, ProxyCustom}
		if !slices.Contains(modes, p.mode()) {
			bad("proxy.mode", p.Mode, fmt.Sprintf("one of %q", modes))
			return
		}
		if p.Preset != "" {
			bad("proxy.preset", p.Preset, "no preset for nginx: proxy.mode picks its settings")
		}
		if p.Kind != "" && p.mode() == ProxyNone {
			bad("proxy.mode", p.Mode, fmt.Sprintf("with kind nginx, one of %q", modes[1:]))
		}
		if own = p.mode() == ProxyCustom; !own && p.Config != "" {
			bad("proxy.config", p.Config, "only with mode: custom")
		}
	} else {
		ids := proxy.PresetIDs(d)
		if p.Mode != "" {
			bad("proxy.mode", p.Mode, fmt.Sprintf("no mode for %s: a preset (%q), or the team's own config", p.Kind, ids))
		}
		if p.Preset != "" {
			if !slices.Contains(ids, p.Preset) {
				bad("proxy.preset", p.Preset, fmt.Sprintf("one of %s's presets %q", p.Kind, ids))
			}
			if p.Config != "" {
				bad("proxy.config", p.Config, "either a preset or the team's own config, not both")
			}
		}
		own = p.Config != ""
	}
	if !own {
		return
	}
	what := "an NGINX config file"
	if p.DoorKind() != proxy.KindNginx {
		what = "a " + p.Kind + " config file"
	}
	b, err := readInside(dir, p.Config, MaxConfigBytes)
	switch {
	case inside(p.Config) != nil:
		bad("proxy.config", p.Config, what+" inside the stack file's directory, as a relative path (a stack file and its directory are untrusted input)")
	case err != nil:
		bad("proxy.config", p.Config, fmt.Sprintf("%s of at most %d KiB that exists inside the stack file's directory (%v)", what, MaxConfigBytes>>10, err))
	case len(strings.TrimSpace(string(b))) == 0 && p.DoorKind() == proxy.KindNginx:
		bad("proxy.config", p.Config, "a file with location blocks, server blocks or an http block, not an empty one")
	case len(strings.TrimSpace(string(b))) == 0:
		bad("proxy.config", p.Config, "the door's whole config, listening on 127.0.0.1:8080, not an empty file")
	}
}

func (ps Paths) validate(r Requires, bad func(string, any, string)) {
	check := func(field string, p Path) {
		if !strings.HasPrefix(p.Path, "/") || strings.ContainsAny(p.Path, " \t\r\n#") {
			bad(field+".path", p.Path, "an absolute path with its query if any, no spaces nor fragment")
		}
		if p.Status != 0 && (p.Status < 200 || p.Status > 299) {
			bad(field+".status", p.Status, "a 2xx status, or 0 for 200")
		}
	}
	check("paths.fast", ps.Fast)
	if ps.Fast.Bytes != 0 {
		bad("paths.fast.bytes", ps.Fast.Bytes, "nothing: the fast path's body may have any length")
	}
	if ps.Large != nil {
		check("paths.large", *ps.Large)
		if ps.Large.Status != 0 && ps.Large.Status != 200 {
			bad("paths.large.status", ps.Large.Status, "200 (a download is a 200 with its whole body)")
		}
		if ps.Large.Bytes < 1<<20 || ps.Large.Bytes > MaxLargeBytes {
			bad("paths.large.bytes", ps.Large.Bytes, fmt.Sprintf("the body's exact size, 1 MiB to %d bytes", MaxLargeBytes))
		}
	} else if r.SlowReaders > 0 || r.H2SlowReaders > 0 {
		bad("paths.large", "missing", "a large path (path, bytes) when requires.slow_readers or h2_slow_readers is above 0")
	}
	if ps.Upload != nil {
		check("paths.upload", *ps.Upload)
		if ps.Upload.Bytes != 0 {
			bad("paths.upload.bytes", ps.Upload.Bytes, "nothing: the lab sends 16 MiB bodies")
		}
	} else if r.SlowUploads > 0 {
		bad("paths.upload", "missing", "an upload path when requires.slow_uploads is above 0")
	}
	if ps.WS != nil {
		loc, _, _ := strings.Cut(ps.WS.Path, "?")
		others := []string{ps.Fast.Path}
		for _, p := range []*Path{ps.Large, ps.Upload} {
			if p != nil {
				others = append(others, p.Path)
			}
		}
		switch {
		case !wsPathRe.MatchString(ps.WS.Path):
			bad("paths.ws.path", ps.WS.Path, `an absolute path of letters, digits and "._~/-", with a query of those and "=&%+" if any (it becomes an NGINX location)`)
		case !nginxconf.MatchedAsWritten(loc):
			bad("paths.ws.path", ps.WS.Path, `a path as NGINX matches it: no "//", and no "." or ".." segment`)
		case slices.ContainsFunc(others, func(o string) bool { p, _, _ := strings.Cut(o, "?"); return p == loc }):
			bad("paths.ws.path", ps.WS.Path, "a path of its own, not the fast, large or upload path's: behind NGINX it gets a location of its own, which passes the Upgrade on and would take those requests from the lab's")
		}
		if ps.WS.Status != 0 || ps.WS.Bytes != 0 {
			bad("paths.ws", fmt.Sprintf("status %d, bytes %d", ps.WS.Status, ps.WS.Bytes), "a path only: a WebSocket answers 101, and a feed has no length")
		}
	} else if r.WSSlowConsumers > 0 {
		bad("paths.ws", "missing", "a WebSocket path (path) when requires.ws_slow_consumers is above 0")
	}
}

// appMemoryMiB is the app container's memory limit: the file's, or
// article A's.
func (l Limits) appMemoryMiB() int {
	if l.App != nil && l.App.MemoryMiB > 0 {
		return l.App.MemoryMiB
	}
	return DefaultAppMemoryMiB
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// show is a value as an error quotes it.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v)
}

// LinearSteps is how far a stack check steps one slow client at a time.
const LinearSteps = 16

// Steps are a stack check's steps for required slow clients: 1, 2, … up
// to the requirement plus one while that is at most LinearSteps; past it
// they double from LinearSteps (32, 64, …), the requirement itself is a
// step, and the last is the next doubling past it, within limit (the
// most clients a step runs): a bracket, as slowhttptest's, which the
// check searches from the requirement (labrun's RunStack). 0 requires
// none.
func Steps(required, limit int) []int {
	if required <= 0 {
		return nil
	}
	var out []int
	for n := 1; n <= min(required+1, LinearSteps); n++ {
		out = append(out, n)
	}
	if required < LinearSteps {
		return out
	}
	for n := 2 * LinearSteps; n < required; n *= 2 {
		out = append(out, n)
	}
	if required > out[len(out)-1] {
		out = append(out, required)
	}
	next := LinearSteps
	for next <= required {
		next *= 2
	}
	if next <= limit {
		out = append(out, next)
	}
	return out
}

// LastStep is the last of Steps(required, limit), 0 for none.
func LastStep(required, limit int) int {
	if s := Steps(required, limit); len(s) > 0 {
		return s[len(s)-1]
	}
	return 0
}
