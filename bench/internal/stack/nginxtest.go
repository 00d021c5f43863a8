package stack

import (
	"time"

	"wsgilab/bench/internal/proxy"
	"wsgilab/nginxconf"
)

// DefaultNginxTestWait bounds a door's own config check (nginx -t and the
// others').
const DefaultNginxTestWait = 30 * time.Second

// NginxTest is ProxyCheck of NGINX with c: a team's config that NGINX
// refuses is refused with NGINX's own words before any pod starts.
func NginxTest(s *Session, ref string, c nginxconf.Config) error {
	return ProxyCheck(s, ref, proxy.Nginx(c))
}
