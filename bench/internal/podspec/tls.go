package podspec

import (
	"fmt"
	"slices"
	"strings"

	"wsgilab/nginxconf"
)

// A pod whose entry point speaks TLS (Config.TLS): NGINX terminates it
// (nginxconf.Config.TLS), or, directly, the server does itself
// (ServeTLS). Its files are made for the series at test time (package
// tlsca) and reach the container that terminates TLS through the
// environment (TLSCertEnv, TLSKeyEnv), written to nginxconf.TLSDir at its
// start (WritingTLS), as the proxy's config does: no bind mount ties the
// lab to a local engine, and no key is ever on the host's disk.
const (
	TLSCertEnv = "LAB_TLS_CERT"
	TLSKeyEnv  = "LAB_TLS_KEY"
)

// WithTLS makes the pod's entry point speak TLS.
func WithTLS(on bool) Option { return func(c *Config) { c.TLS = on } }

// ServesTLS is whether ServeTLS knows s's flags: Gunicorn's (any worker
// class), Uvicorn's and uWSGI's, as the lab's command lines (and a stack
// file's app) start them.
func ServesTLS(s Server) bool { _, err := ServeTLS(s); return err == nil }

// ServeTLS is server s terminating TLS itself on its own port with the
// pod's files: Gunicorn's --certfile and --keyfile (the handshake then
// runs in the worker that accepted the connection), or Uvicorn's
// --ssl-certfile and --ssl-keyfile (in its event loop). Its id gains
// -tls. It fails on a server whose flags it does not know.
func ServeTLS(s Server) (Server, error) {
	if servingTLS(s) {
		return Server{}, fmt.Errorf("podspec: TLS: server %s serves TLS already", s.ID)
	}
	var flags []string
	switch {
	case len(s.Cmd) >= 3 && s.Cmd[0] == "python3" && s.Cmd[2] == "gunicorn":
		flags = []string{"--certfile", nginxconf.TLSCert, "--keyfile", nginxconf.TLSKey}
	case len(s.Cmd) >= 3 && s.Cmd[0] == "python3" && s.Cmd[2] == "uvicorn":
		flags = []string{"--ssl-certfile", nginxconf.TLSCert, "--ssl-keyfile", nginxconf.TLSKey}
	case SpeaksHTTP2(s):
		// Hypercorn's TLS listener offers h2 and http/1.1 by ALPN.
		flags = []string{"--certfile", nginxconf.TLSCert, "--keyfile", nginxconf.TLSKey}
	case len(s.Cmd) >= 1 && s.Cmd[0] == "uwsgi" && slices.Contains(s.Cmd, "--http-socket"):
		// uWSGI's own HTTPS socket (Debian builds it with OpenSSL) in
		// place of its plain one: address,certificate,key.
		cmd := slices.Clone(s.Cmd)
		i := slices.Index(cmd, "--http-socket")
		if i+1 >= len(cmd) {
			return Server{}, fmt.Errorf("podspec: TLS: server %s: --http-socket has no address", s.ID)
		}
		cmd[i], cmd[i+1] = "--https-socket", cmd[i+1]+","+nginxconf.TLSCert+","+nginxconf.TLSKey
		return s.withTLS(cmd), nil
	default:
		return Server{}, fmt.Errorf("podspec: TLS: server %s: want Gunicorn (python3 -m gunicorn), Uvicorn (python3 -m uvicorn), Hypercorn (python3 -m hypercorn) or uWSGI with --http-socket, whose TLS flags the lab knows, or NGINX in front", s.ID)
	}
	return s.withTLS(slices.Insert(slices.Clone(s.Cmd), len(s.Cmd)-1, flags...)), nil
}

// SpeaksHTTP2 is whether s speaks HTTP/2 itself on its TLS listener:
// Hypercorn (python3 -m hypercorn, through h2), alone of the lab's
// servers.
func SpeaksHTTP2(s Server) bool {
	return len(s.Cmd) >= 3 && s.Cmd[0] == "python3" && s.Cmd[2] == "hypercorn"
}

// withTLS is s, all else kept (its image, directory, user, port and
// readiness), running cmd and named <id>-tls.
func (s Server) withTLS(cmd []string) Server {
	s.ID, s.Cmd, s.Env = s.ID+"-tls", cmd, slices.Clone(s.Env)
	return s
}

// servingTLS is whether s's command line names the pod's key file.
func servingTLS(s Server) bool {
	return slices.ContainsFunc(s.Cmd, func(a string) bool { return strings.Contains(a, nginxconf.TLSKey) })
}

// WritingTLS is cmd run after the TLS files are written from the
// environment into nginxconf.TLSDir, the key with mode 0600 (the umask is
// the key's alone: the server's own files keep theirs); a variable unset
// or empty stops the container, naming it, before cmd starts. The mode
// does not hide the key inside the pod: every container runs as the same
// nobody in one PID namespace, so each could read it through /proc, and
// the environment carries it. It is a key of one series, trusted only by
// that series' CA and served on loopback.
func WritingTLS(cmd []string) []string {
	script := fmt.Sprintf(`mkdir -p %[1]s && printf '%%s\n' "${%[2]s:?the pod's TLS certificate}" > %[3]s && (umask 077 && printf '%%s\n' "${%[4]s:?the pod's TLS key}" > %[5]s) && exec "$@"`,
		nginxconf.TLSDir, TLSCertEnv, nginxconf.TLSCert, TLSKeyEnv, nginxconf.TLSKey)
	return append([]string{"sh", "-c", script, "sh"}, cmd...)
}

// validateTLS checks that the pod's TLS is whole: the entry point that
// Config.TLS says speaks TLS is the one configured to, and nothing else
// is.
func (c Config) validateTLS() error {
	switch {
	case c.Proxy != nil && c.Proxy.TLS() != c.TLS:
		return fmt.Errorf("podspec: TLS %v but the %s front door's TLS is %v: want both, or neither", c.TLS, c.Proxy.Kind, c.Proxy.TLS())
	case c.Proxy != nil && servingTLS(c.Server):
		return fmt.Errorf("podspec: server %s serves TLS behind a front door, which forwards plain HTTP: want the server without TLS", c.Server.ID)
	case c.Proxy == nil && c.TLS != servingTLS(c.Server):
		return fmt.Errorf("podspec: TLS %v but server %s's own TLS is %v: want podspec.ServeTLS(server) for a direct TLS pod", c.TLS, c.Server.ID, servingTLS(c.Server))
	case c.TLS && c.Proxy == nil && !strings.HasSuffix(c.Server.ID, "-tls"):
		return fmt.Errorf("podspec: server %s serves TLS but its id does not say so: want podspec.ServeTLS(server)", c.Server.ID)
	}
	return nil
}
