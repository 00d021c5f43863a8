package podspec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/proxy"
	"wsgilab/bench/internal/toxic"
)

// WithHops puts each hop where the pod's addresses say: the client's
// before the entry point, the app's between the front door and the
// server, which the front door then forwards to.
func TestWithHopsWiresThePath(t *testing.T) {
	door := proxy.New(proxy.KindNginx, "")
	c := New("img", WithProxy(&door), WithHops(&Hops{Client: &toxic.Hop{}, App: &toxic.Hop{UpstreamReceiveBuffer: 8192}}))
	require.NoError(t, c.Validate())
	assert.Equal(t, toxic.Hop{Listen: ClientHopListen, Upstream: proxy.DefaultListen}, *c.Hops.Client)
	assert.Equal(t, toxic.Hop{Listen: AppHopListen, Upstream: "127.0.0.1:8000", UpstreamReceiveBuffer: 8192}, *c.Hops.App)
	assert.Equal(t, AppHopListen, c.Proxy.Upstream, "the front door forwards to the app's hop")
	assert.Equal(t, proxy.DefaultUpstream, door.Upstream, "the caller's front door is left alone")
	assert.Equal(t, Limits{CPUs: DefaultHopCPUs, Memory: DefaultHopMemory}, c.Hops.Limits)
	assert.Equal(t, "http://"+ClientHopListen+"/fast", c.HopURL("/fast"))
	assert.Equal(t, "http://"+proxy.DefaultListen+"/fast", c.URL("/fast"), "the entry point is still the front door")
	assert.Len(t, c.Hops.List(), 2)

	direct := New("img", WithHops(&Hops{Client: &toxic.Hop{}}))
	require.NoError(t, direct.Validate())
	assert.Equal(t, "127.0.0.1:8000", direct.Hops.Client.Upstream)
	assert.Equal(t, direct.URL("/x"), New("img").URL("/x"))
	assert.Equal(t, "http://"+ClientHopListen+"/x", direct.HopURL("/x"))
	assert.Equal(t, New("img").URL("/x"), New("img").HopURL("/x"), "no client hop: the entry point itself")

	gone := New("img", WithProxy(&door), WithHops(&Hops{App: &toxic.Hop{}}), WithHops(nil))
	require.NoError(t, gone.Validate())
	assert.Nil(t, gone.Hops)
	assert.Equal(t, proxy.DefaultUpstream, gone.Proxy.Upstream, "without its hop the front door forwards to the server again")
}

// Hops that do not sit where the pod's addresses say, or are malformed,
// are refused with the setting and what is wanted.
func TestHopsRefused(t *testing.T) {
	door := proxy.New(proxy.KindNginx, "")
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"empty", New("img", WithHops(&Hops{})), "hops with neither a client nor an app hop"},
		{"app-direct", New("img", WithHops(&Hops{App: &toxic.Hop{}})), "an app hop sits between the front door and the server: this pod has no front door"},
		{"order", New("img", WithHops(&Hops{Client: &toxic.Hop{}}), WithProxy(&door)), "client hop 127.0.0.1:8070 -> 127.0.0.1:8000: want 127.0.0.1:8070 -> 127.0.0.1:8080 (give WithHops after the server and the front door)"},
		{"app-order", New("img", WithHops(&Hops{App: &toxic.Hop{}}), WithProxy(&door)), "the front door forwards to 127.0.0.1:8000, not to the app hop at 127.0.0.1:8071"},
		{"toxic", New("img", WithHops(&Hops{Client: &toxic.Hop{Toxics: []toxic.Toxic{{Type: "bandwidth", Stream: toxic.Downstream}}}})), "podspec: client hop: toxic: hop toxic 1: bandwidth_downstream rate 0"},
		{"port", New("img", WithServer(Server{ID: "s", Cmd: []string{"x"}, Port: 8070}), WithHops(&Hops{App: nil, Client: &toxic.Hop{}})), "server port 127.0.0.1:8070 is a hop's listen address: want another (the hops take 127.0.0.1:8070 and 127.0.0.1:8071)"},
		{"custom", New("img", WithProxy(&proxy.Config{Kind: proxy.KindHAProxy, Listen: proxy.DefaultListen, Upstream: proxy.DefaultUpstream, Custom: "frontend x"}), WithHops(&Hops{App: &toxic.Hop{}})), "an app hop behind a team's own haproxy config, which forwards where it says: want a preset front door"},
		{"limits", New("img", WithHops(&Hops{Client: &toxic.Hop{}, Limits: Limits{CPUs: 0.01, Memory: 64 << 20}})), "hop CPUs 0.01 gives a quota"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
