package stack

import (
	"fmt"
	"strings"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/proxy"
)

// ProxyCheck renders c and runs its door's own config check on it
// (haproxy -c, apache2 -t, caddy validate, lighttpd -tt, nginx -t) in a
// container of the lab image ref, hardened as the proxy role runs
// (read-only root, its /tmp, no network), before any pod starts: a config
// the door refuses is refused with the door's own words.
func ProxyCheck(s *Session, ref string, c proxy.Config) error {
	d, err := c.Door()
	if err != nil {
		return err
	}
	conf, err := c.Render()
	if err != nil {
		return err
	}
	check := d.Check(c, d.ConfPath())
	code, out, err := runOnce(s, podspec.RoleProxy, c.Kind+"-check", ref,
		proxy.Shell(d, c, check), append([]string{proxy.EnvVar + "=" + conf}, d.Env()...), DefaultNginxTestWait)
	if err != nil {
		return fmt.Errorf("stack: %s: %w", strings.Join(check, " "), err)
	}
	if code != 0 {
		return fmt.Errorf("stack: %s refuses the config (exit %d): %s", strings.Join(check[:min(2, len(check))], " "), code, strings.TrimSpace(out))
	}
	return nil
}
