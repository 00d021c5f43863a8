package stack

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersions(t *testing.T) {
	good := "python=3.11.2\ngunicorn=23.0.0\ndjango=3.2.25\ngevent=22.10.2\n" +
		"uvicorn=0.17.6\nuvloop=0.17.0\nhttptools=0.1.1\nnginx=nginx version: nginx/1.22.1\nuwsgi=2.0.21-debian\npkg:nginx=1.22.1-9+deb12u11\npkg:python3=3.11.2-1+b1\n" +
		"gunicorn-release:20.1.0=20.1.0\n" +
		"door:apache=Server version: Apache/2.4.71 (Debian)\ndoor:caddy=2.6.2\n" +
		"door:haproxy=HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\n" +
		"door:lighttpd=lighttpd/1.4.69 (ssl) - a light and fast webserver\ndoor:nginx=nginx version: nginx/1.22.1\n" +
		"door:varnish=varnishd (varnish-7.1.1 revision 7cee1c581bead20e88d101ab3d72afb29f14d87a)\n"
	v, err := parseVersions(good)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"apache": "2.4.71", "caddy": "2.6.2", "haproxy": "2.6.12", "lighttpd": "1.4.69", "nginx": "1.22.1", "varnish": "7.1.1"}, v.FrontDoors)
	assert.Equal(t, "1.22.1", v.Nginx)
	assert.Equal(t, "23.0.0", v.Gunicorn)
	assert.Equal(t, "0.17.6", v.Uvicorn)
	assert.Equal(t, "0.17.0", v.Uvloop)
	assert.Equal(t, "1.22.1-9+deb12u11", v.Packages["nginx"])
	assert.Equal(t, map[string]string{"20.1.0": "20.1.0"}, v.GunicornReleases, "bookworm's own Gunicorn, beside the installed one")

	// A release that imports as another (its directory missing: the
	// installed one answers) is refused.
	_, err = parseVersions(strings.Replace(good, "gunicorn-release:20.1.0=20.1.0", "gunicorn-release:20.1.0=23.0.0", 1))
	assert.ErrorContains(t, err, `Gunicorn 20.1.0 from /opt/gunicorn-20.1.0 imported as "23.0.0"`)

	_, err = parseVersions("python=3.11.2\n")
	assert.ErrorContains(t, err, "incomplete")
	_, err = parseVersions("python=3.11.2\ngunicorn=23.0.0\nnginx=nginx version: nginx/1.22.1\npkg:nginx=1\ndoor:caddy=caddy: not found\n")
	assert.ErrorContains(t, err, "front door apache printed no version")
}
