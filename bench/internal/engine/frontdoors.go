package engine

import (
	"wsgilab/bench/internal/podspec"
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
	Varnish          = doorPath(proxy.KindVarnish, "")
	// HAProxyBufReq is HAProxy with option http-buffer-request, which
	// changes only how it takes a request body (UploadDoors).
	HAProxyBufReq = doorPath(proxy.KindHAProxy, "bufreq")

	// FrontDoors are the matrix's paths beyond MatrixPaths, under its slow
	// readers (every row), slow headers and silent connections (the sync
	// row: Column.Only).
	FrontDoors = []Path{HAProxy, Apache, Caddy, CaddyBuffered, Lighttpd, LighttpdStream2, NginxIngress, NginxReadAhead1M, Varnish}

	// UploadDoors are the front doors under slow uploads (the sync row):
	// HAProxy at its defaults and with its documented request buffering,
	// and lighttpd, whose default (server.stream-request-body 0) takes a
	// whole body before it connects.
	UploadDoors = []Path{HAProxy, HAProxyBufReq, Lighttpd}
)

// onlySync runs paths on the sync row only (gunicorn-sync-2, the matrix's first),
// where the front doors' verdicts are.
func onlySync(paths []Path) map[string][]string {
	m := map[string][]string{}
	for _, p := range paths {
		m[p.ID] = []string{podspec.GunicornSync(2).ID}
	}
	return m
}

// doorPath is the path through kind at preset (empty: its defaults).
func doorPath(kind, preset string) Path {
	c := proxy.New(kind, preset)
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return Path{ID: c.Name(), Proxy: &c}
}
