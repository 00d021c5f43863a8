package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/load"
	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/toxic"
)

// A Toxiproxy-paced twin runs the cell's own pod with a client hop that
// paces at the cell's rate through the lab reader's 8 KiB socket, and
// only its downloads go through the hop, read unpaced; /fast is timed at
// the entry point, as in the cell.
func TestToxiproxyPacedTwin(t *testing.T) {
	for _, c := range PacerCells("direct-2dl", "nginx-off-2dl", "nginx-on-2dl") {
		t.Run(c.ID, func(t *testing.T) {
			require.NoError(t, c.Validate())
			cell := Pick(Under(ArticleA, Stock), strings.TrimSuffix(c.ID, "-toxiproxy"))[0]
			pod := c.Pod("img")
			require.NotNil(t, pod.Hops)
			require.NotNil(t, pod.Hops.Client)
			assert.Nil(t, pod.Hops.App)
			assert.Equal(t, load.DefaultReceiveBuffer, pod.Hops.Client.UpstreamReceiveBuffer)
			assert.Equal(t, []toxic.Toxic{{Name: "pace", Type: "bandwidth", Stream: toxic.Downstream, Attributes: map[string]int64{"rate": 2097}}}, pod.Hops.Client.Toxics)
			want := cell.Pod("img")
			pod.Hops = nil
			if want.Proxy != nil {
				want.Proxy.Upstream = pod.Proxy.Upstream // no app hop: unchanged
			}
			assert.Equal(t, want, pod, "the cell's own pod, less the hop")

			base := cell.Pod("img").URL("")
			twin, lab := c.Load(base, "x"), cell.Load(base, "x")
			assert.True(t, twin.PacedByPath)
			assert.False(t, lab.PacedByPath)
			assert.Equal(t, "http://"+podspec.ClientHopListen+"/large?size=16777216", twin.LargeURL)
			assert.Equal(t, lab.FastURL, twin.FastURL, "/fast at the entry point")
			assert.Equal(t, lab.DownloadRate, twin.DownloadRate)
			require.NoError(t, twin.Validate())
		})
	}
}

// A pacer the lab does not have, or Toxiproxy's on clients that are not
// the lab app's slow readers, is refused with the field and what it takes.
func TestPacerRefused(t *testing.T) {
	cell := Pick(Under(ArticleA, Stock), "direct-2dl")[0]
	for _, tc := range []struct {
		name string
		edit func(*Condition)
		want string
	}{
		{"unknown", func(c *Condition) { c.Pacer = "netem" }, `Pacer "netem": want empty (the lab's own reader) or "toxiproxy"`},
		{"no-downloads", func(c *Condition) { c.Pacer, c.Downloads = PacerToxiproxy, 0 }, "Pacer toxiproxy with SlowKind \"\", 0 downloads: want slow readers (\"read\", 1 or more)"},
		{"uploads", func(c *Condition) { c.Pacer, c.SlowKind = PacerToxiproxy, load.KindUpload }, "Pacer toxiproxy with SlowKind \"upload\""},
		{"team", func(c *Condition) {
			c.Pacer, c.Target = PacerToxiproxy, &Target{FastPath: "/", LargePath: "/big", LargeBytes: 1}
		}, "Pacer toxiproxy with a team's app (Target): want the lab app"},
		{"rounded", func(c *Condition) { c.Pacer, c.ReadRate = PacerToxiproxy, 1500 }, "ReadRate 1500 with Pacer toxiproxy: Toxiproxy paces whole KB/s of 1,000 bytes, 2 KB/s here, 33.3 % off: want a rate within 0.1 % of one (2000 bytes/s is)"},
		{"too-slow", func(c *Condition) { c.Pacer, c.ReadRate = PacerToxiproxy, 400 }, "ReadRate 400 with Pacer toxiproxy: Toxiproxy paces whole KB/s of 1,000 bytes, 0 KB/s here, -100 % off: want a rate within 0.1 % of one (1000 bytes/s is)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cell
			tc.edit(&c)
			err := c.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
