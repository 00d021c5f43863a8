package engine

import (
	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

// The front doors beyond article A's NGINX (issue 29): each proxy at its
// packaged defaults and, where it has one, at its documented setting for
// buffering responses, plus two NGINX presets teams meet without choosing
// them. A path's id is its door's name (proxy.Config.Name).
var (
	HAProxy          = doorPath(proxy.KindHAProxy, "")
	Apache           = doorPath(proxy.KindApache, "")
	Caddy            = doorPath(proxy.KindCaddy, "")
	CaddyBuffered    = doorPath(proxy.KindCaddy, "buffered")
	Lighttpd         = doorPath(proxy.KindLighttpd, "")
	LighttpdStream2  = doorPath(proxy.KindLighttpd, "stream-2")
	NginxIngress     = NginxPath("nginx-ingress", nginxconf.New(nginxconf.WithBuffering(false), nginxconf.WithBuffers(nginxconf.IngressNginxBuffers)))
	NginxReadAhead1M = NginxPath("nginx-1m", nginxconf.New(nginxconf.WithBuffering(true), nginxconf.WithBuffers(nginxconf.OneMiBBuffers)))

	// FrontDoors are the matrix's paths beyond MatrixPaths, under its slow
	// readers.
	FrontDoors = []Path{HAProxy, Apache, Caddy, CaddyBuffered, Lighttpd, LighttpdStream2, NginxIngress, NginxReadAhead1M}
)

// doorPath is the path through kind at preset (empty: its defaults).
func doorPath(kind, preset string) Path {
	c := proxy.New(kind, preset)
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return Path{ID: c.Name(), Proxy: &c}
}
