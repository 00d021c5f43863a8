package nginxconf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderCarriesArticleSettings(t *testing.T) {
	for _, on := range []bool{true, false} {
		conf, err := New(WithBuffering(on)).Render()
		require.NoError(t, err)
		want := "proxy_buffering off;"
		if on {
			want = "proxy_buffering on;"
		}
		assert.Contains(t, conf, want)
		for _, s := range []string{
			"proxy_buffer_size 16k;", "proxy_buffers 4 16k;", "proxy_busy_buffers_size 32k;",
			"proxy_max_temp_file_size 32m;", "proxy_temp_file_write_size 64k;",
			"proxy_http_version 1.1;", "listen 127.0.0.1:8080;", "server 127.0.0.1:8000;",
		} {
			assert.Contains(t, conf, s)
		}
	}
}

func TestRenderDiffersOnlyInBuffering(t *testing.T) {
	on, err := New(WithBuffering(true)).Render()
	require.NoError(t, err)
	off, err := New(WithBuffering(false)).Render()
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(on, "proxy_buffering on;", "proxy_buffering off;", 1), off)
}

func TestRenderRequestBufferingAndGzip(t *testing.T) {
	def, err := New().Render()
	require.NoError(t, err)
	assert.Contains(t, def, "proxy_request_buffering on;")
	assert.Contains(t, def, fmt.Sprintf("client_max_body_size %dm;", ClientMaxBodyBytes>>20))
	assert.Contains(t, def, "gzip off;")
	assert.NotContains(t, def, "gzip_types")
	off, err := New(WithRequestBuffering(false)).Render()
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(def, "proxy_request_buffering on;", "proxy_request_buffering off;", 1), off)
	gz, err := New(WithGzip(true)).Render()
	require.NoError(t, err)
	assert.Contains(t, gz, "gzip on;")
	assert.Contains(t, gz, "gzip_types text/event-stream;")
}

func TestRenderRejectsMalformedSettings(t *testing.T) {
	cases := map[string]struct {
		opt  Option
		want string
	}{
		"listen without port":   {func(c *Config) { c.Listen = "127.0.0.1" }, "Listen"},
		"upstream port 0":       {func(c *Config) { c.Upstream = "127.0.0.1:0" }, "Upstream"},
		"relative temp path":    {func(c *Config) { c.TempPath = "tmp/x" }, "TempPath"},
		"temp path injection":   {func(c *Config) { c.TempPath = "/tmp/x; user root" }, "TempPath"},
		"worker processes zero": {WithWorkerProcesses("0"), "WorkerProcesses"},
		"worker connections 8":  {WithWorkerConnections(8), "WorkerConnections"},
		"backlog negative":      {WithListenBacklog(-1), "ListenBacklog"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.opt).Render()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A team's config replaces the lab's server block, or with an http block
// of its own the whole http context; the main context stays the lab's.
func TestCustom(t *testing.T) {
	servers := "server {\n    listen 127.0.0.1:8080;\n    location / { proxy_pass http://app; }\n}\n"
	c := New(WithBuffering(true))
	c.Custom = servers
	out, err := c.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"upstream app {", "proxy_temp_path /tmp/nginx-proxy-temp;", servers, "pid /tmp/nginx.pid;"} {
		if !strings.Contains(out, want) {
			t.Errorf("server blocks: rendered config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "proxy_buffering on") {
		t.Errorf("the lab's server block is still there:\n%s", out)
	}
	if c.CustomHTTP() {
		t.Error("server blocks taken for an http block")
	}

	loc := "        location / {\n            proxy_pass http://app;\n            proxy_buffering on;\n        }\n"
	c.Custom = "# ours\n" + loc
	if !c.CustomLocation() || c.CustomServers() {
		t.Fatal("location blocks not recognised")
	}
	out, err = c.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listen 127.0.0.1:8080;", loc, "upstream app {"} {
		if !strings.Contains(out, want) {
			t.Errorf("location blocks: rendered config lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "location /") != 1 {
		t.Errorf("location blocks: the lab's location / is still there:\n%s", out)
	}

	c.Custom = "# ours\n\nhttp {\n    server { listen 127.0.0.1:8080; }\n}\n"
	if !c.CustomHTTP() {
		t.Fatal("an http block after comments not recognised")
	}
	out, err = c.Render()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "http {") != 1 || strings.Contains(out, "upstream app") || !strings.Contains(out, "events {") {
		t.Errorf("http block: want the lab's main context and the team's http context only:\n%s", out)
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "16k": 16 << 10, "32m": 32 << 20, "1024m": 1 << 30, "1g": 1 << 30, "4096": 4096} {
		got, err := Bytes(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, bad := range []string{"", "4 16k", "32mb", "-1", "m", "99999999999999999999g"} {
		_, err := Bytes(bad)
		assert.Error(t, err, bad)
	}
}

// worker_connections and the listen backlog are NGINX's connection
// limits: the default renders NGINX's own, a moved one renders itself.
func TestRenderConnectionLimits(t *testing.T) {
	def, err := New().Render()
	require.NoError(t, err)
	assert.Contains(t, def, "worker_connections 1024;")
	assert.Contains(t, def, "listen 127.0.0.1:8080;")
	moved, err := New(WithWorkerConnections(256), WithListenBacklog(16)).Render()
	require.NoError(t, err)
	assert.Contains(t, moved, "worker_connections 256;")
	assert.Contains(t, moved, "listen 127.0.0.1:8080 backlog=16;")
}

// TestRenderTLS: TLS and http2 change only the listen line and add the
// certificate's two lines; a custom server block, which has its own
// listen line, refuses them.
func TestRenderTLS(t *testing.T) {
	plain, err := New().Render()
	require.NoError(t, err)
	for _, tc := range []struct {
		opts   []Option
		listen string
	}{
		{[]Option{WithTLS(true)}, "listen 127.0.0.1:8080 ssl;"},
		{[]Option{WithTLS(true), WithHTTP2(true)}, "listen 127.0.0.1:8080 ssl http2;"},
		{[]Option{WithHTTP2(true)}, "listen 127.0.0.1:8080 http2;"},
	} {
		conf, err := New(tc.opts...).Render()
		require.NoError(t, err)
		want := strings.Replace(plain, "listen 127.0.0.1:8080;", tc.listen, 1)
		if strings.Contains(tc.listen, "ssl") {
			want = strings.Replace(want, tc.listen, tc.listen+"\n        ssl_certificate "+TLSCert+";\n        ssl_certificate_key "+TLSKey+";", 1)
		}
		assert.Equal(t, want, conf, tc.listen)
	}
	_, err = New(WithTLS(true), func(c *Config) { c.Custom = "server {\n listen 127.0.0.1:8080;\n}" }).Render()
	require.ErrorContains(t, err, "custom server or http block")
	_, err = New(WithTLS(true), func(c *Config) { c.Custom = "location / { proxy_pass http://app; }" }).Render()
	require.NoError(t, err)
}

// TestRenderWebSocket: WithWebSocket adds an exact location for its
// path passing the Upgrade on, before the lab's location / (or a team's
// locations), and leaves the rest as it was; a custom server block,
// which has its own locations, is refused, and so is a path NGINX would
// read as config (a team's path is untrusted).
func TestRenderWebSocket(t *testing.T) {
	plain, err := New().Render()
	require.NoError(t, err)
	conf, err := New(WithWebSocket("/ws")).Render()
	require.NoError(t, err)
	ws := conf[strings.Index(conf, "location = /ws {"):strings.Index(conf, "location / {")]
	for _, line := range []string{"proxy_pass http://app;", "proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;", `proxy_set_header Connection "upgrade";`} {
		assert.Contains(t, ws, line)
	}
	assert.NotContains(t, plain, "location /ws")
	assert.Equal(t, plain, strings.Replace(conf, conf[strings.Index(conf, "        # WebSockets"):strings.Index(conf, "        location / {")], "", 1))
	_, err = New(WithWebSocket("/ws"), func(c *Config) { c.Custom = "location / { proxy_pass http://app; }" }).Render()
	require.NoError(t, err)
	_, err = New(WithWebSocket("/ws"), func(c *Config) { c.Custom = "server {\n listen 127.0.0.1:8080;\n}" }).Render()
	require.ErrorContains(t, err, "WebSocketPath adds a location")
	conf, err = New(WithWebSocket("/api/v1/feed")).Render()
	require.NoError(t, err)
	assert.Contains(t, conf, "location = /api/v1/feed {")
	for _, bad := range []string{"ws", "/feed?x=1", "/feed { return 200; } location /x", "/feed;", "/a b", `/"q"`, "//feed", "/a/../feed", "/./feed", "/feed/.."} {
		_, err = New(WithWebSocket(bad)).Render()
		assert.ErrorContains(t, err, "WebSocketPath", bad)
	}
}
