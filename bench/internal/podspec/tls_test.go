package podspec

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

// ServeTLS adds each server's own TLS flags before its app word (uWSGI:
// its HTTPS socket in place of the plain one), and refuses a server whose
// flags it does not know, or one that serves TLS already.
func TestServeTLS(t *testing.T) {
	uw, err := UWSGI(2, BodyFile, 0)
	require.NoError(t, err)
	for _, tc := range []struct {
		s    Server
		want []string
	}{
		{GunicornSync(2), []string{"--certfile", nginxconf.TLSCert, "--keyfile", nginxconf.TLSKey, "app:application"}},
		{Uvicorn(2), []string{"--ssl-certfile", nginxconf.TLSCert, "--ssl-keyfile", nginxconf.TLSKey, "asgiapp:app"}},
	} {
		s, err := ServeTLS(tc.s)
		require.NoError(t, err)
		assert.Equal(t, tc.s.ID+"-tls", s.ID)
		assert.Equal(t, tc.want, s.Cmd[len(s.Cmd)-len(tc.want):])
		_, err = ServeTLS(s)
		assert.ErrorContains(t, err, "serves TLS already")
	}
	s, err := ServeTLS(uw)
	require.NoError(t, err)
	assert.Contains(t, s.Cmd, "127.0.0.1:8000,"+nginxconf.TLSCert+","+nginxconf.TLSKey)
	assert.NotContains(t, s.Cmd, "--http-socket")
	assert.True(t, ServesTLS(uw))
	_, err = ServeTLS(s)
	assert.ErrorContains(t, err, "serves TLS already", "uWSGI's too")
	// A stack's server keeps its image, directory, user, port and
	// readiness.
	st := Server{ID: "stack-shop", Cmd: []string{"python3", "-m", "gunicorn", "--bind", "127.0.0.1:9000", "shop:app"},
		Image: "team:1", Dir: "/srv/app", User: "1000:1000", Port: 9000, ReadyPath: "/healthz", ReadyStatus: 204, Env: []string{"A=1"}}
	s, err = ServeTLS(st)
	require.NoError(t, err)
	want := st
	want.ID, want.Cmd = "stack-shop-tls", []string{"python3", "-m", "gunicorn", "--bind", "127.0.0.1:9000", "--certfile", nginxconf.TLSCert, "--keyfile", nginxconf.TLSKey, "shop:app"}
	assert.Equal(t, want, s)
	_, err = ServeTLS(Server{ID: "own", Cmd: []string{"./serve.sh"}})
	assert.ErrorContains(t, err, "want Gunicorn (python3 -m gunicorn)")
}

// A pod's TLS is whole or refused: the entry point Config.TLS names is
// the one that terminates TLS, and URL says https there only.
func TestPodTLS(t *testing.T) {
	direct, err := ServeTLS(GunicornSync(2))
	require.NoError(t, err)
	c := New("lab:1", WithServer(direct), WithTLS(true))
	require.NoError(t, c.Validate())
	assert.Equal(t, "https://127.0.0.1:8000/fast", c.URL("/fast"))

	ng := proxy.Nginx(nginxconf.New(nginxconf.WithTLS(true)))
	c = New("lab:1", WithProxy(&ng), WithTLS(true))
	require.NoError(t, c.Validate())
	assert.Equal(t, "https://127.0.0.1:8080/fast", c.URL("/fast"))
	assert.Equal(t, "http://127.0.0.1:8000/fast", c.AppURL("/fast"), "NGINX forwards plain HTTP")

	for name, tc := range map[string]struct {
		c    Config
		want string
	}{
		"TLS without a TLS server":  {New("lab:1", WithTLS(true)), "want podspec.ServeTLS(server)"},
		"a TLS server without TLS":  {New("lab:1", WithServer(direct)), "own TLS is true"},
		"NGINX TLS, pod plain":      {New("lab:1", WithProxy(&ng)), "front door's TLS is true"},
		"pod TLS, NGINX plain":      {New("lab:1", WithProxy(ptr(proxy.Nginx(nginxconf.New()))), WithTLS(true)), "front door's TLS is false"},
		"a TLS server behind NGINX": {New("lab:1", WithServer(direct), WithProxy(&ng), WithTLS(true)), "forwards plain HTTP"},
	} {
		assert.ErrorContains(t, tc.c.Validate(), tc.want, name)
	}
}

func ptr[T any](v T) *T { return &v }

// WritingTLS's script writes the certificate and the key (mode 0600, the
// umask the key's alone) and then execs the command; an unset variable
// stops it, naming what is missing, before the command runs.
func TestWritingTLS(t *testing.T) {
	dir := t.TempDir()
	argv := WritingTLS([]string{"sh", "-c", `touch "$1"/ran && umask`, "sh", dir})
	require.Equal(t, []string{"sh", "-c"}, argv[:2])
	script := strings.ReplaceAll(argv[2], nginxconf.TLSDir, dir+"/tls")
	run := func(env ...string) (string, error) {
		cmd := exec.Command("sh", append([]string{"-c", script}, argv[3:]...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(TLSCertEnv+"=CERT", TLSKeyEnv+"=KEY")
	require.NoError(t, err, out)
	for name, want := range map[string]string{"server.crt": "CERT\n", "server.key": "KEY\n"} {
		b, err := os.ReadFile(filepath.Join(dir, "tls", name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
	}
	fi, err := os.Stat(filepath.Join(dir, "tls", "server.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.FileExists(t, filepath.Join(dir, "ran"))
	assert.NotEqual(t, "0077", strings.TrimSpace(out), "the command runs under the container's own umask")

	require.NoError(t, os.Remove(filepath.Join(dir, "ran")))
	out, err = run(TLSCertEnv + "=CERT")
	assert.Error(t, err)
	assert.Contains(t, out, "the pod's TLS key")
	assert.NoFileExists(t, filepath.Join(dir, "ran"), "the command never ran")
}
