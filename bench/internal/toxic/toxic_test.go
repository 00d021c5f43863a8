package toxic

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHopRefusesBadSettings: each bad setting is named with what is
// accepted (package hop's Serve validates first, before anything
// listens).
func TestHopRefusesBadSettings(t *testing.T) {
	ok := Hop{Listen: "127.0.0.1:0", Upstream: "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		hop  Hop
		want string
	}{
		{"listen", Hop{Listen: "nowhere", Upstream: ok.Upstream}, `hop listen "nowhere": want host:port`},
		{"buffer", Hop{Listen: ok.Listen, Upstream: ok.Upstream, UpstreamReceiveBuffer: -1}, "upstream_receive_buffer -1"},
		{"sndbuf", Hop{Listen: ok.Listen, Upstream: ok.Upstream, DownstreamSendBuffer: -1}, "downstream_send_buffer -1: want 0 (the kernel's) or a size in bytes"},
		{"type", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "jitter", Stream: Downstream}}}, `type "jitter": want one of bandwidth, latency, limit_data, reset_peer, slicer, slow_close, timeout`},
		{"stream", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: "both"}}}, `latency stream "both"`},
		{"attribute", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: Downstream, Attributes: map[string]int64{"rate": 1}}}}, `latency_downstream attribute "rate": want latency, jitter`},
		{"negative", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "limit_data", Stream: Downstream, Attributes: map[string]int64{"bytes": -1}}}}, "limit_data_downstream attribute bytes -1"},
		{"twice", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "latency", Stream: Downstream}, {Type: "latency", Stream: Downstream}}}, `hop toxic 2: a second toxic named "latency_downstream"`},
		{"unpaced", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "bandwidth", Stream: Downstream}}}, "hop toxic 1: bandwidth_downstream rate 0: want a rate above 0 KB/s"},
		{"slicer-zero", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Name: "cut", Type: "slicer", Stream: Downstream}}}, "cut (slicer) average_size 0, size_variation 0: want average_size above 0"},
		{"slicer-wide", Hop{Listen: ok.Listen, Upstream: ok.Upstream, Toxics: []Toxic{{Type: "slicer", Stream: Downstream,
			Attributes: map[string]int64{"average_size": 64, "size_variation": 64}}}}, "size_variation 64: want average_size above 0 and size_variation below it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.hop.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.NoError(t, ok.Validate())
}
