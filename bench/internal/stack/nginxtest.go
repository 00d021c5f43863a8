package stack

import (
	"fmt"
	"strings"
	"time"

	"wsgilab/bench/internal/podspec"
	"wsgilab/nginxconf"
)

// DefaultNginxTestWait bounds nginx -t.
const DefaultNginxTestWait = 30 * time.Second

// NginxTest renders c and runs nginx -t on it in a container of the lab
// image ref, hardened as the proxy role runs (read-only root, its /tmp),
// before any pod starts: a team's config that NGINX refuses is refused
// with NGINX's own words.
func NginxTest(s *Session, ref string, c nginxconf.Config) error {
	conf, err := c.Render()
	if err != nil {
		return err
	}
	code, out, err := runOnce(s, podspec.RoleProxy, "nginx-test", ref,
		nginxCommand("-t"),
		[]string{"LAB_NGINX_CONF=" + conf}, DefaultNginxTestWait)
	if err != nil {
		return fmt.Errorf("stack: nginx -t: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("stack: nginx -t refuses the config (exit %d): %s", code, strings.TrimSpace(out))
	}
	return nil
}
