package proxy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/fixtures"
	"wsgilab/nginxconf"
)

// Every preset of every door renders with the lab's addresses in it.
func TestRenderEveryPreset(t *testing.T) {
	for _, kind := range Kinds() {
		d := Doors[kind]
		assert.Equal(t, kind, d.Kind())
		for _, p := range d.Presets() {
			assert.NotEmpty(t, p.Source, "%s %s names no source", kind, p.ID)
			c := New(kind, p.ID)
			c.Upstream = "127.0.0.1:8123"
			if kind == KindNginx {
				c = Nginx(nginxconf.New())
				c.Upstream = "127.0.0.1:8123"
			}
			text, err := c.Render()
			require.NoError(t, err, "%s %s", kind, p.ID)
			assert.Contains(t, text, "8123", "%s %s forwards elsewhere", kind, p.ID)
			// The listen address is in the config or, for Varnish, on
			// the command line.
			assert.Contains(t, text+strings.Join(d.Run(c, d.ConfPath()), " "), "8080", "%s %s listens elsewhere", kind, p.ID)
			if dir := os.Getenv("LAB_PROXY_DUMP"); dir != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, kind+"-"+p.ID), []byte(text), 0o644))
			}
		}
	}
}

// Every door's package is in the image's recipe, so a door the lab
// declares is a door the image has.
func TestPackagesInImage(t *testing.T) {
	b, err := fixtures.Image.ReadFile("image/packages.txt")
	require.NoError(t, err)
	pkgs := strings.Fields(regexp.MustCompile(`(?m)#.*$`).ReplaceAllString(string(b), ""))
	for _, kind := range Kinds() {
		assert.Contains(t, pkgs, Doors[kind].Package(), "door %s", kind)
	}
}

func TestPresetsDiffer(t *testing.T) {
	for kind, want := range map[string][2]string{
		KindHAProxy:  {"bufreq", "option http-buffer-request"},
		KindCaddy:    {"buffered", "buffer_responses"},
		KindLighttpd: {"stream-2", "server.stream-response-body = 2"},
	} {
		def, err := New(kind, "").Render()
		require.NoError(t, err)
		other, err := New(kind, want[0]).Render()
		require.NoError(t, err)
		assert.NotContains(t, def, want[1])
		assert.Contains(t, other, want[1])
	}
}

func TestValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{New("squid", ""), `kind "squid": want one of ["apache" "caddy" "haproxy" "lighttpd" "nginx" "varnish"]`},
		{New(KindCaddy, "huge"), `caddy preset "huge": want one of ["defaults" "buffered"]`},
		{Config{Kind: KindHAProxy, Listen: "8080", Upstream: DefaultUpstream}, `Listen "8080" is not host:port`},
		{Config{Kind: KindHAProxy, Listen: DefaultListen, Upstream: "127.0.0.1:0"}, `Upstream "127.0.0.1:0" has no port`},
		{Config{Kind: KindHAProxy, Listen: DefaultListen, Upstream: "127.0.0.1:80;x"}, `is not host:port`},
	} {
		_, err := tc.c.Render()
		require.Error(t, err, "%+v", tc.c)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestCustomIsVerbatim(t *testing.T) {
	c := New(KindHAProxy, "")
	c.Custom = "frontend x\n"
	text, err := c.Render()
	require.NoError(t, err)
	assert.Equal(t, "frontend x\n", text)
}

func TestShellQuotes(t *testing.T) {
	d := Doors[KindLighttpd]
	cmd := Shell(d, New(KindLighttpd, ""), d.Run(New(KindLighttpd, ""), d.ConfPath()))
	require.Len(t, cmd, 3)
	assert.True(t, strings.HasPrefix(cmd[2], `printf '%s' "$LAB_PROXY_CONF" > '/tmp/lighttpd.conf' && mkdir -p '/tmp/lighttpd-upload' && exec 'lighttpd' '-D'`), cmd[2])
}
