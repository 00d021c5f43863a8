package podspec

import (
	"errors"
	"fmt"
	"net/url"

	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/toxic"
)

// A pod's Toxiproxy hops (package toxic): user-space TCP proxies that
// relay one hop of the pod's path and add faults to it, all in one
// container of their own (RoleHop), with its own limits. They need no
// capability: Toxiproxy shapes the bytes it relays itself, where netem
// would need NET_ADMIN in the pod's namespace.
const (
	// ClientHopListen is where the client's hop listens: a connection
	// there reaches the pod's entry point through it (HopURL).
	ClientHopListen = "127.0.0.1:8070"
	// AppHopListen is where the front door's hop listens: the front door
	// forwards to it, and it to the server.
	AppHopListen = "127.0.0.1:8071"
	// DefaultHopCPUs and DefaultHopMemory limit the hops' container: the
	// client's and NGINX's share of a core, and half the client's memory.
	// Relaying two of article A's paced downloads, the hop used 4.7 to
	// 7.5 % of a core and at most 19.4 MiB (reports/measurements.md,
	// stop 67).
	DefaultHopCPUs   = 0.20
	DefaultHopMemory = 64 << 20
)

// Hops are a pod's Toxiproxy hops. WithHops puts them on the pod's path;
// Validate checks that they sit where the pod's addresses say.
type Hops struct {
	// Client, when set, sits between the client and the pod's entry
	// point: it listens on ClientHopListen and relays to the entry point.
	Client *toxic.Hop `json:"client,omitempty"`
	// App, when set, sits between the front door and the server (a pod
	// with a front door only): it listens on AppHopListen, which the
	// front door forwards to, and relays to the server.
	App *toxic.Hop `json:"app,omitempty"`
	// Limits limit the hops' container.
	Limits Limits `json:"limits"`
}

// List is the hops that are set, client first.
func (h Hops) List() []toxic.Hop {
	var out []toxic.Hop
	for _, x := range []*toxic.Hop{h.Client, h.App} {
		if x != nil {
			out = append(out, *x)
		}
	}
	return out
}

// WithHops puts h's hops on the pod's path, after the server and the
// front door are set (WithServer, WithProxy): each hop's Listen and
// Upstream are filled from the pod's addresses, and an app hop's front
// door forwards to it. Limits of zero are DefaultHopCPUs and
// DefaultHopMemory. nil removes them, and a front door that forwarded to
// the app's hop forwards to the server again.
func WithHops(h *Hops) Option {
	return func(c *Config) {
		if h == nil {
			if c.Proxy != nil && c.Proxy.Upstream == AppHopListen {
				c.Proxy = forwardTo(*c.Proxy, c.serverAddr())
			}
			c.Hops = nil
			return
		}
		hs := *h
		if hs.Limits == (Limits{}) {
			hs.Limits = Limits{CPUs: DefaultHopCPUs, Memory: DefaultHopMemory}
		}
		if hs.Client != nil {
			x := *hs.Client
			x.Listen, x.Upstream = ClientHopListen, c.entryAddr()
			hs.Client = &x
		}
		if hs.App != nil {
			x := *hs.App
			x.Listen, x.Upstream = AppHopListen, c.serverAddr()
			hs.App = &x
			if c.Proxy != nil {
				c.Proxy = forwardTo(*c.Proxy, AppHopListen)
			}
		}
		c.Hops = &hs
	}
}

// forwardTo is p forwarding to addr, its NGINX settings too, a copy of
// the caller's.
func forwardTo(p proxy.Config, addr string) *proxy.Config {
	p.Upstream = addr
	if p.Nginx != nil {
		n := *p.Nginx
		n.Upstream = addr
		p.Nginx = &n
	}
	return &p
}

// HopURL is path through the client's hop: the entry point as a client
// beyond that hop reaches it; URL when the pod has no client hop.
func (c Config) HopURL(path string) string {
	if c.Hops == nil || c.Hops.Client == nil {
		return c.URL(path)
	}
	return ThroughClientHop(c.URL(path))
}

// ThroughClientHop is u, a URL at a pod's entry point, reached through
// the pod's client hop instead: its host is ClientHopListen. A u that is
// not a URL is returned as it is (the pods' own URLs always are).
func ThroughClientHop(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Host = ClientHopListen
	return p.String()
}

// entryAddr is the pod's entry point's host:port.
func (c Config) entryAddr() string {
	if c.Proxy != nil {
		return c.Proxy.Listen
	}
	return c.serverAddr()
}

// serverAddr is the server's host:port.
func (c Config) serverAddr() string { return fmt.Sprintf("127.0.0.1:%d", c.Server.ListenPort()) }

// validateHops names the first hop that is malformed or does not sit
// where the pod's addresses say (WithHops given before the server or the
// front door it relays to).
func (c Config) validateHops() error {
	h := c.Hops
	if h == nil {
		return nil
	}
	if h.Client == nil && h.App == nil {
		return errors.New("podspec: hops with neither a client nor an app hop: want one at least, or no hops")
	}
	taken := map[string]string{c.serverAddr(): "server port"}
	if c.Proxy != nil {
		taken[c.Proxy.Listen] = c.Proxy.Kind + " front door's listen address"
	}
	for _, hop := range []string{ClientHopListen, AppHopListen} {
		if what, ok := taken[hop]; ok {
			return fmt.Errorf("podspec: %s %s is a hop's listen address: want another (the hops take %s and %s)", what, hop, ClientHopListen, AppHopListen)
		}
	}
	for _, x := range []struct {
		name, listen, upstream string
		hop                    *toxic.Hop
	}{{"client", ClientHopListen, c.entryAddr(), h.Client}, {"app", AppHopListen, c.serverAddr(), h.App}} {
		if x.hop == nil {
			continue
		}
		if err := x.hop.Validate(); err != nil {
			return fmt.Errorf("podspec: %s hop: %w", x.name, err)
		}
		if x.hop.Listen != x.listen || x.hop.Upstream != x.upstream {
			return fmt.Errorf("podspec: %s hop %s -> %s: want %s -> %s (give WithHops after the server and the front door)",
				x.name, x.hop.Listen, x.hop.Upstream, x.listen, x.upstream)
		}
	}
	if h.App != nil {
		switch {
		case c.Proxy == nil:
			return errors.New("podspec: an app hop sits between the front door and the server: this pod has no front door")
		case c.Proxy.Custom != "" || c.Proxy.Nginx != nil && c.Proxy.Nginx.Custom != "":
			return fmt.Errorf("podspec: an app hop behind a team's own %s config, which forwards where it says: want a preset front door", c.Proxy.Kind)
		case c.Proxy.Upstream != AppHopListen:
			return fmt.Errorf("podspec: the front door forwards to %s, not to the app hop at %s (give WithHops after WithProxy)", c.Proxy.Upstream, AppHopListen)
		}
	}
	return nil
}
