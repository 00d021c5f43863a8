package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"wsgilab/bench/internal/load"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/stackfile"
	"wsgilab/bench/internal/verdict"
	"wsgilab/nginxconf"
)

// A stack check puts a team's stack file (package stackfile) through the
// matrix's columns its requirements name: its server is one more matrix
// row, on one path (direct, NGINX from the lab's template, or the team's
// own NGINX config), stepped 0, then as a bracket of each requirement,
// then cut by each of its resets (labrun's RunStack).

// StackBehaviour is one required slow-client behaviour: a matrix column.
type StackBehaviour struct {
	Column Column
	// Noun names its clients in sentences ("slow readers").
	Noun     string
	Required int
	// ReadRate is a slow reader's or WebSocket consumer's pace in bytes
	// per second (the stack file's requires.slow_read_kib_s; 0 for the
	// other behaviours).
	ReadRate float64
}

// Steps are b's steps (stackfile.Steps): one client at a time up to the
// requirement plus one, geometric past 16.
func (b StackBehaviour) Steps() []int { return stackfile.Steps(b.Required, b.limit()) }

// limit is the most clients a step of b runs.
func (b StackBehaviour) limit() int {
	c := Condition{}
	b.Column.Apply(&c, 1)
	return c.maxSlowClients()
}

// StackCheck is a stack file made conditions.
type StackCheck struct {
	File stackfile.File
	// Row is the stack's server as a matrix row; Server.Image is empty
	// until the app image is known (WithImage).
	Row  Row
	Info stackfile.ServerInfo
	Path Path
	// Target are its paths and statuses.
	Target Target
	// AppLimits and ProxyLimits are the file's, nil for article A's.
	AppLimits, ProxyLimits *podspec.Limits
	Behaviours             []StackBehaviour
	// TLSPath is Path with TLS at its entry point (tlsTwin), for the slow
	// TLS handshakes; zero unless the file requires them.
	TLSPath Path
	// H2Path is Path with TLS and HTTP/2 at NGINX's listener (h2Twin),
	// for the slow HTTP/2 readers; zero unless the file requires them.
	H2Path Path
	// Resets are its required resets (requires.resets), in stackResets'
	// order.
	Resets []StackReset
	// ExpectFails marks an example stack meant to fail a requirement:
	// its verdicts fail all the same, and say that they were meant to.
	ExpectFails bool
}

// StackReset is one required reset: a reset column's fault on the
// stack's row and path, cutting Clients of its behaviour at once: the
// behaviour's requirement, at most stackfile.MaxResetClients.
type StackReset struct {
	// Column is ResetMidDownload or ResetMidUpload, taking every row.
	Column Column
	// Noun names its clients in sentences ("slow readers").
	Noun    string
	Clients int
}

// stackResets are the resets a stack file can require
// (stackfile.ResetDownload, ResetUpload): their columns, nouns and
// clients, in the order they run.
var stackResets = []struct {
	value string
	col   Column
	noun  string
	n     func(stackfile.Requires) int
}{
	{stackfile.ResetDownload, ResetMidDownload, "slow readers", func(r stackfile.Requires) int { return r.SlowReaders }},
	{stackfile.ResetUpload, ResetMidUpload, "slow uploads", func(r stackfile.Requires) int { return r.SlowUploads }},
}

// StackOption sets a stack check up (CheckStack).
type StackOption func(*StackCheck)

// ExpectFails is an example stack meant to fail (fixtures/stacks/sync.yaml).
func ExpectFails() StackOption { return func(sc *StackCheck) { sc.ExpectFails = true } }

// stackColumns are the columns a stack file can require, with their
// nouns, in the order of its requires block.
var stackColumns = []struct {
	col  Column
	noun string
	req  func(stackfile.Requires) int
}{
	{SlowRead, "slow readers", func(r stackfile.Requires) int { return r.SlowReaders }},
	{SlowUpload, "slow uploads", func(r stackfile.Requires) int { return r.SlowUploads }},
	{SlowHeaders, "slow-header clients", func(r stackfile.Requires) int { return r.SlowHeaders }},
	{Silent, "silent connections", func(r stackfile.Requires) int { return r.SilentConnections }},
	{SlowTLS, "slow TLS handshakes", func(r stackfile.Requires) int { return r.SlowTLS }},
	{H2SlowRead, "slow HTTP/2 readers", func(r stackfile.Requires) int { return r.H2SlowReaders }},
	{WSSlowConsumer, "slow WebSocket consumers", func(r stackfile.Requires) int { return r.WSSlowConsumers }},
}

// NewStackCheck makes f's check. f must be valid (stackfile.Load); a
// custom NGINX config is read here.
func NewStackCheck(f stackfile.File) (StackCheck, error) {
	if err := f.Validate(); err != nil {
		return StackCheck{}, err
	}
	sc := StackCheck{File: f}
	var srv podspec.Server
	if a := f.App; a != nil {
		srv = podspec.Server{Cmd: a.Command(podspec.AppPort), Dir: stackfile.AppRoot, Env: env(a.Env)}
		sc.Info = stackfile.ReadServer(a.Server)
	} else {
		im := f.Image
		srv = podspec.Server{Image: im.Ref, Cmd: im.Command, Dir: im.Workdir, User: im.User, Port: im.Port, Env: env(im.Env)}
		sc.Info = stackfile.ReadServer(im.Command)
	}
	srv.ID = "stack-" + f.Name
	// The pod is ready once the fast path answers as the file says.
	srv.ReadyPath, srv.ReadyStatus = f.Paths.Fast.Path, f.Paths.Fast.Status
	sc.Row = Row{ID: f.Name, Server: srv, Concurrency: sc.Info.Capacity, Basis: sc.Info.Basis}

	switch kind := f.Proxy.DoorKind(); {
	case f.Proxy.None():
		sc.Path = Direct
	case kind == proxy.KindNginx && f.Proxy.Mode == stackfile.ProxyBufferingOn:
		sc.Path = NginxOn
	case kind == proxy.KindNginx && f.Proxy.Mode == stackfile.ProxyBufferingOff:
		sc.Path = NginxOff
	default:
		var own []byte
		if f.Proxy.Config != "" {
			var err error
			if own, err = f.ReadConfig(); err != nil {
				return StackCheck{}, fmt.Errorf("stack file %s: proxy.config %q: want the file as it was checked: %w", f.Name, f.Proxy.Config, err)
			}
		}
		if kind == proxy.KindNginx {
			c := nginxconf.New()
			c.Custom = string(own)
			sc.Path = NginxPath("nginx-custom", c)
			break
		}
		sc.Path = doorPath(kind, f.Proxy.Preset)
		if own != nil {
			c := *sc.Path.Proxy
			c.Custom = string(own)
			sc.Path = Path{ID: kind + "-custom", Proxy: &c}
		}
	}
	if f.Requires.WSSlowConsumers > 0 {
		// The team says its server takes WebSockets at paths.ws; the
		// check's WebSocket check (labrun) asks it before any step.
		sc.Path = withWebSocket(sc.Path, f.Paths.WS.Path)
		sc.Row.WebSocket = true
	}
	// The door forwards to the server's own port, in the config it is
	// checked with as in the one it runs.
	if sc.Path.Proxy != nil {
		sc.Path.Proxy = forwardingTo(*sc.Path.Proxy, srv)
	}
	if f.Requires.SlowTLS > 0 {
		p, err := tlsTwin(sc.Path)
		if err == nil {
			_, err = p.server(srv)
		}
		if err == nil && p.Proxy != nil {
			err = p.Proxy.Validate()
		}
		if err != nil {
			return StackCheck{}, fmt.Errorf("stack file %s: requires.slow_tls %d: want a path the lab can put TLS on: %w", f.Name, f.Requires.SlowTLS, err)
		}
		sc.TLSPath = p
	}
	if f.Requires.H2SlowReaders > 0 {
		p, err := h2Twin(sc.Path)
		if err == nil {
			err = p.Proxy.Validate()
		}
		if err != nil {
			return StackCheck{}, fmt.Errorf("stack file %s: requires.h2_slow_readers %d: want a path that speaks HTTP/2: %w", f.Name, f.Requires.H2SlowReaders, err)
		}
		sc.H2Path = p
	}

	p := f.Paths
	sc.Target = Target{FastPath: p.Fast.Path, FastStatus: p.Fast.Status}
	if p.Large != nil {
		sc.Target.LargePath, sc.Target.LargeBytes = p.Large.Path, p.Large.Bytes
	}
	if p.Upload != nil {
		sc.Target.UploadPath, sc.Target.UploadStatus = p.Upload.Path, p.Upload.Status
	}
	if p.WS != nil {
		sc.Target.WSPath = p.WS.Path
	}
	lim := func(l *stackfile.RoleLimits) *podspec.Limits {
		if l == nil {
			return nil
		}
		return &podspec.Limits{CPUs: l.CPUs, Memory: int64(l.MemoryMiB) << 20}
	}
	sc.AppLimits, sc.ProxyLimits = lim(f.Limits.App), lim(f.Limits.Proxy)

	for _, sc2 := range stackColumns {
		if n := sc2.req(f.Requires); n > 0 {
			b := StackBehaviour{Column: sc2.col, Noun: sc2.noun, Required: n}
			if sc2.col.ID == SlowRead.ID || sc2.col.ID == WSSlowConsumer.ID {
				b.ReadRate = float64(f.Requires.ReadKiBs()) * 1024
			}
			sc.Behaviours = append(sc.Behaviours, b)
		}
	}
	for _, r := range stackResets {
		if slices.Contains(f.Requires.Resets, r.value) {
			col := r.col
			col.Server = nil // the stack's row, which no matrix column lists
			sc.Resets = append(sc.Resets, StackReset{Column: col, Noun: r.noun, Clients: min(r.n(f.Requires), stackfile.MaxResetClients)})
		}
	}
	if sc.Row.Concurrency == 0 { // none the lab can read: from the requirement
		for _, b := range sc.Behaviours {
			sc.Row.Concurrency = max(sc.Row.Concurrency, b.Required)
		}
		sc.Row.Basis += "; taken from the largest requirement"
	}
	return sc, nil
}

func env(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// WithImage is sc with its app running imageRef (the image built from an
// app directory; a team's own image is set already).
func (sc StackCheck) WithImage(imageRef string) StackCheck {
	sc.Row.Server.Image = imageRef
	return sc
}

// StackBaselineID and StackStepID are a stack check's condition ids.
func StackBaselineID(name string) string { return "stack-" + name + "-baseline" }
func StackStepID(name string, col Column, n int) string {
	return fmt.Sprintf("stack-%s-%s-%d", name, col.ID, n)
}

// Baseline is the check's step 0: the fast path alone.
func (sc StackCheck) Baseline() Condition {
	return sc.condition(StackBaselineID(sc.File.Name), SlowRead, 0)
}

// BaselineOf is b's step 0, the fast path alone on b's path: the
// check's Baseline, but for slow TLS handshakes, whose path is TLSPath
// (stack-<name>-slow-tls-0): /fast over TLS with no slow client, so that
// what TLS alone costs is never read as the slow clients' doing.
func (sc StackCheck) BaselineOf(b StackBehaviour) Condition {
	if sc.PathOf(b).ID == sc.Path.ID {
		return sc.Baseline()
	}
	return sc.condition(StackStepID(sc.File.Name, b.Column, 0), b.Column, 0)
}

// PathOf is the path b's steps run on (pathFor).
func (sc StackCheck) PathOf(b StackBehaviour) Path { return sc.pathFor(b.Column) }

// pathFor is the path col's steps run on: TLSPath for slow TLS
// handshakes, H2Path for slow HTTP/2 readers, else Path.
func (sc StackCheck) pathFor(col Column) Path {
	switch col.ID {
	case SlowTLS.ID:
		return sc.TLSPath
	case H2SlowRead.ID:
		return sc.H2Path
	}
	return sc.Path
}

// Step is n slow clients of b.
func (sc StackCheck) Step(b StackBehaviour, n int) Condition {
	c := sc.condition(StackStepID(sc.File.Name, b.Column, n), b.Column, n)
	if b.ReadRate > 0 {
		c.ReadRate = b.ReadRate
	}
	if n > MatrixStepLimit {
		// Past the matrix's clients, as the scale table's: a client of
		// at most a core, with the memory and the paced opening that
		// thousands of held connections need.
		c.ClientCPUs = min(c.ClientCPUs, MaxClientCPUs)
		if load.Holds(c.SlowKind) && n > MaxScaleReaders {
			c.ClientMemory, c.ConnectRate = ConnClientMemory, ConnRate
		}
	}
	return c
}

// ResetStep is r's step: its clients cut at once, on the stack's path.
// They move at the lab's pace (2 MiB/s), not slow_read_kib_s, so the cut
// comes 2 s in, with the fast path's window left to show what it left.
func (sc StackCheck) ResetStep(r StackReset) Condition {
	return sc.condition(StackStepID(sc.File.Name, r.Column, r.Clients), r.Column, r.Clients)
}

// condition is the matrix's cell of the stack's row on its path under n
// of col's clients, aimed at the team's paths and limits.
func (sc StackCheck) condition(id string, col Column, n int) Condition {
	c, _ := cell(id, col, sc.Row, sc.pathFor(col), n) // every stack column takes every row
	c.AppLimits, c.ProxyLimits = sc.AppLimits, sc.ProxyLimits
	t := sc.Target
	c.Target = &t
	if n > 0 && (col.ID == SlowRead.ID || col.ID == H2SlowRead.ID || col.ID == ResetMidDownload.ID) {
		c.BodyBytes = t.LargeBytes
	}
	if ms := sc.File.Requires.ClientLatencyMs; ms > 0 && col.ID == SlowRead.ID {
		// The baseline and the slow readers through the team's round
		// trip: the latency column's hop (Fault.Fast), which paces the
		// readers at the stack's own rate.
		c.Fault = LatencyFaultID(ms)
		c.ReadRate = float64(sc.File.Requires.ReadKiBs()) * 1024
	}
	if col.ID == WSSlowConsumer.ID {
		// The team's own feed, not the lab's numbered /ws: its consumers
		// read whatever it pushes, held for the fast path's window.
		c.SlowKind, c.BodyBytes = load.KindWSFeed, 0
	}
	return c
}

// StackVerdictID is the claim (and subtest) of the requirement of the
// stack name under column.
func StackVerdictID(name, column string) string {
	return fmt.Sprintf("stack-%s-%s-requirement", name, column)
}

// Verdicts are the check's requirements, one per behaviour (the fast
// path holds its bound at every step up to the requirement), then each
// reset's (ResetVerdicts).
func (sc StackCheck) Verdicts() []verdict.Verdict {
	vs := sc.BehaviourVerdicts()
	for _, r := range sc.Resets {
		vs = append(vs, sc.ResetVerdicts(r)...)
	}
	return vs
}

// BehaviourVerdicts are the behaviours' requirements, one each, in
// order (FoldStack reads their claims so).
func (sc StackCheck) BehaviourVerdicts() []verdict.Verdict {
	var vs []verdict.Verdict
	for _, b := range sc.Behaviours {
		var steps []string
		for _, n := range b.Steps() {
			steps = append(steps, sc.Step(b, n).ID)
		}
		vs = append(vs, verdict.Verdict{ID: StackVerdictID(sc.File.Name, b.Column.ID), Kind: verdict.Lab, Unit: "slow clients",
			Text: fmt.Sprintf("%s: the fast path %s stays under %g ms p95, nothing failing, with up to %d %s",
				sc.File.Name, sc.File.Paths.Fast.Path, sc.File.Requires.P95Ms(), b.Required, b.Noun),
			Check:       verdict.StackRequirement(sc.BaselineOf(b).ID, steps, b.Steps(), b.Required, sc.File.Requires.P95Ms()),
			ExpectFails: sc.ExpectFails})
	}
	return vs
}

// ResetVerdicts are r's verdicts (verdict.StackCutVerdicts), the fast
// path after the cut bounded by the stack's fast_p95_ms. An example meant
// to fail (ExpectFails) is meant to fail a behaviour: its resets must
// hold all the same.
func (sc StackCheck) ResetVerdicts(r StackReset) []verdict.Verdict {
	c := sc.ResetStep(r)
	return verdict.StackCutVerdicts(sc.File.Name, r.Column.ID, c.ID, sc.Target.FastPath, r.Clients, sc.File.Requires.P95Ms(),
		c.Path.Proxy != nil, r.Column.ID == ResetMidDownload.ID && templateSpills(c.Path))
}

// templateSpills reports whether p's front door is NGINX from the lab's
// template, which spills responses to the temp path the sampler watches
// (proxy.Door.SpillDir). A team's own config may put them elsewhere, and
// another door's spill directory holds no responses (lighttpd's is for
// uploads): no temp-file verdict there, rather than one that holds on
// nothing.
func templateSpills(p Path) bool {
	if p.Proxy == nil || p.Proxy.Kind != proxy.KindNginx || p.Proxy.Nginx == nil || p.Proxy.Nginx.Custom != "" {
		return false
	}
	d, err := p.Proxy.Door()
	return err == nil && d.SpillDir(*p.Proxy) != ""
}

// steps are b's steps as capacity steps, the baseline first: the matrix's
// view of the check (matrix.json's stack rows).
func (sc StackCheck) steps(b StackBehaviour) []CapacityStep {
	out := []CapacityStep{{Row: sc.Row.ID, Column: b.Column.ID, Clients: 0, Condition: sc.BaselineOf(b)}}
	for _, n := range b.Steps() {
		out = append(out, CapacityStep{Row: sc.Row.ID, Column: b.Column.ID, Clients: n, Condition: sc.Step(b, n)})
	}
	return out
}

// tlsTwin is path p with TLS at its entry point: the server's own
// directly (DirectTLS), or NGINX's, its settings (a team's location
// blocks too) kept; another front door has none the lab can set.
func tlsTwin(p Path) (Path, error) {
	switch {
	case p.TLS:
		return p, nil
	case p.Proxy == nil:
		return DirectTLS, nil
	case p.Proxy.Kind != proxy.KindNginx:
		return Path{}, fmt.Errorf("the lab terminates TLS in NGINX or in the server itself, not in %s", p.Proxy.Kind)
	}
	c := *p.Proxy
	n := nginxconf.New()
	if c.Nginx != nil {
		n = *c.Nginx
	}
	n.TLS = true
	c.Nginx = &n
	return Path{ID: strings.Replace(p.ID, "nginx", "nginx-tls", 1), Proxy: &c, TLS: true}, nil
}

// withWebSocket is path p passing the WebSocket Upgrade on at wsPath
// (its query left out): NGINX from the lab's template gets its WebSocket
// location; a direct path needs none, and a team's own NGINX config
// passes it on itself, or the stack's WebSocket check says it does not.
func withWebSocket(p Path, wsPath string) Path {
	if p.Proxy == nil || p.Proxy.Nginx == nil || p.Proxy.Nginx.Custom != "" {
		return p
	}
	c := *p.Proxy
	n := *c.Nginx
	n.WebSocketPath, _, _ = strings.Cut(wsPath, "?")
	c.Nginx = &n
	p.Proxy = &c
	return p
}

// h2Twin is path p with TLS and HTTP/2 at NGINX's listener, its
// settings kept; the servers a stack file starts speak HTTP/1.1, and no
// other front door has a listener the lab can set.
func h2Twin(p Path) (Path, error) {
	switch {
	case p.HTTP2:
		return p, nil
	case p.Proxy == nil:
		return Path{}, errors.New("the servers a stack file starts (Gunicorn, uWSGI, Uvicorn) speak HTTP/1.1: put NGINX in front (proxy.mode buffering-on)")
	case p.Proxy.Kind != proxy.KindNginx:
		return Path{}, fmt.Errorf("the lab serves HTTP/2 from NGINX's listener, not from %s", p.Proxy.Kind)
	}
	t, err := tlsTwin(p)
	if err != nil {
		return Path{}, err
	}
	c := *t.Proxy
	n := *c.Nginx
	n.HTTP2 = true
	c.Nginx = &n
	return Path{ID: strings.Replace(p.ID, "nginx", "nginx-h2", 1), Proxy: &c, TLS: true, HTTP2: true}, nil
}
