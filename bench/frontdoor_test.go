package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/stack"
	"wsgilab/nginxconf"
)

// Every front door's own config check accepts every preset the lab
// renders for it, run as the proxy role runs (read-only root, its /tmp,
// nobody, no network): a template a door no longer parses fails here,
// before any pod of it starts. Subtests are kind-preset.
func TestFrontDoorPresetsPassOwnCheck(t *testing.T) {
	for _, kind := range proxy.Kinds() {
		d := proxy.Doors[kind]
		for _, p := range d.Presets() {
			t.Run(kind+"-"+p.ID, func(t *testing.T) {
				c := proxy.New(kind, p.ID)
				if kind == proxy.KindNginx {
					c = proxy.Nginx(nginxconf.New())
				}
				require.NoError(t, stack.ProxyCheck(lab.Session, lab.Image, c))
			})
		}
	}
}

// A broken config of a front door is refused by the door's own check,
// quoting its own words, and nothing else starts: the check is what a
// team's own file goes through before a run. Subtests are the kinds.
var brokenDoorConfigs = []struct {
	kind, conf string
	words      []string
}{
	{proxy.KindHAProxy, "defaults\n    mode http\n    timeout clinet 5s\nfrontend lab\n    bind 127.0.0.1:8080\n    default_backend app\nbackend app\n    server app 127.0.0.1:8000\n",
		[]string{"haproxy -c refuses the config", "timeout", "clinet"}},
	{proxy.KindCaddy, "{\n\tadmin off\n}\nhttp://:8080 {\n\treverse_proxy 127.0.0.1:8000 {\n\t\tbufer_responses\n\t}\n}\n",
		[]string{"caddy validate refuses the config", "bufer_responses"}},
	{proxy.KindLighttpd, "server.port = 8080\nserver.document-root = \"/tmp\"\nproxy.server = (\n",
		[]string{"lighttpd -tt refuses the config"}},
	{proxy.KindVarnish, "vcl 4.1;\nbackend app { .host = \"127.0.0.1\"; .port = \"8000\"; }\nsub vcl_recv { retrun (pass); }\n",
		[]string{"varnishd -C refuses the config", "retrun"}},
	{proxy.KindApache, "", // the lab's own config with one typo
		[]string{"apache2 -t refuses the config", "Invalid command 'ProxyPas'"}},
}

func TestFrontDoorBrokenConfigRefused(t *testing.T) {
	for _, b := range brokenDoorConfigs {
		t.Run(b.kind, func(t *testing.T) {
			c := proxy.New(b.kind, "")
			c.Custom = b.conf
			if c.Custom == "" {
				text, err := c.Render()
				require.NoError(t, err)
				c.Custom = strings.Replace(text, "ProxyPass /", "ProxyPas /", 1)
			}
			err := stack.ProxyCheck(lab.Session, lab.Image, c)
			require.Error(t, err)
			for _, w := range b.words {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
