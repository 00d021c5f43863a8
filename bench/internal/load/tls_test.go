package load

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"wsgilab/bench/internal/tlsca"
)

// tlsSpec is one slow TLS client's run against addr, no /fast requests.
func tlsSpec(addr string, holdFor, gap time.Duration) Spec {
	spec := NewSpec("http://"+addr, "t", WithDownloads(1), WithSlowKind(KindTLS), WithTLSURL("https://"+addr))
	spec.HoldFor, spec.HeaderGap, spec.FastCount = holdFor, gap, 0
	return spec
}

// TestSlowHelloIsPaced: against a raw listener, the slow TLS client sends
// a handshake record's first bytes one at a time, HeaderGap apart, never
// the whole hello within its hold, and the connection is held to its end.
func TestSlowHelloIsPaced(t *testing.T) {
	type arrival struct {
		b  byte
		at time.Time
	}
	got := make(chan []arrival, 1)
	addr := rawServer(t, func(c *net.TCPConn) {
		var as []arrival
		buf := make([]byte, 64)
		for {
			n, err := c.Read(buf)
			for _, b := range buf[:n] {
				as = append(as, arrival{b, time.Now()})
			}
			if err != nil {
				got <- as
				return
			}
		}
	})
	const gap, holdFor = 50 * time.Millisecond, 600 * time.Millisecond
	res, err := Run(context.Background(), tlsSpec(addr, holdFor, gap))
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeHeld, d.Outcome(), "%+v", d)
	assert.True(t, d.Served())
	assert.False(t, d.Complete())
	as := <-got
	require.NotEmpty(t, as)
	assert.EqualValues(t, len(as), d.Bytes, "the bytes the server read are the bytes sent")
	// One byte now, then one a gap: 13 at most in 600 ms, and at least
	// half of them on a loaded machine.
	assert.LessOrEqual(t, len(as), int(holdFor/gap)+1)
	assert.GreaterOrEqual(t, len(as), int(holdFor/gap)/2)
	assert.Greater(t, d.Expected, int64(100), "a ClientHello is longer than its hold lets through")
	assert.Equal(t, byte(tlsRecordHandshake), as[0].b, "a handshake record")
	assert.Equal(t, byte(3), as[1].b, "TLS's major version")
	var gaps []time.Duration
	for i := 1; i < len(as); i++ {
		gaps = append(gaps, as[i].at.Sub(as[i-1].at))
	}
	slices.Sort(gaps)
	med := gaps[len(gaps)/2]
	assert.True(t, med > gap*7/10 && med < 2*gap, "the median gap between bytes, %v, is HeaderGap's %v", med, gap)
}

// TestSlowHelloIsAcceptedWhole: sent fast enough to end within its hold,
// the hello is one a TLS server (crypto/tls with the lab's test CA)
// parses as a ClientHello for the URL's host, and answers.
func TestSlowHelloIsAcceptedWhole(t *testing.T) {
	ca, err := tlsca.New(0, "localhost")
	require.NoError(t, err)
	cfg, err := ca.ServerConfig()
	require.NoError(t, err)
	hellos := make(chan *tls.ClientHelloInfo, 1)
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		hellos <- h
		return nil, nil
	}
	addr := rawServer(t, func(c *net.TCPConn) {
		defer c.Close()
		_ = tls.Server(c, cfg).Handshake() // fails once the client closes
	})
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	spec := tlsSpec("localhost:"+port, 30*time.Second, time.Millisecond)
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.Equal(t, OutcomeStatus, d.Outcome(), "the server's ServerHello: %+v", d)
	assert.Equal(t, d.Expected, d.Bytes, "the whole hello")
	select {
	case h := <-hellos:
		assert.Equal(t, "localhost", h.ServerName)
		assert.Contains(t, h.SupportedVersions, uint16(tls.VersionTLS13))
	default:
		t.Fatal("the server parsed no ClientHello")
	}
}

// TestSlowTLSSpecValidate: a slow TLS client needs an https:// target and
// a HeaderGap within its hold.
func TestSlowTLSSpecValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Spec)
		want string
	}{
		"no url":   {func(s *Spec) { s.TLSURL = "" }, "TLSURL"},
		"http url": {func(s *Spec) { s.TLSURL = "http://127.0.0.1:1" }, "TLSURL"},
		"gap":      {func(s *Spec) { s.HeaderGap = 0 }, "HeaderGap"},
	} {
		t.Run(name, func(t *testing.T) {
			s := tlsSpec("127.0.0.1:1", time.Second, 10*time.Millisecond)
			require.NoError(t, s.Validate())
			tc.mod(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
