package load

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"slices"
	"sync/atomic"
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

// tlsServer is server's mux behind TLS, under a CA of its own; it counts
// the handshakes it completed.
func tlsServer(t *testing.T, size int) (url string, ca *tlsca.CA, handshakes *atomic.Int64) {
	srv, _ := server(t, size)
	srv.Close()
	ca, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	conf, err := ca.ServerConfig()
	require.NoError(t, err)
	handshakes = new(atomic.Int64)
	conf.VerifyConnection = func(tls.ConnectionState) error { handshakes.Add(1); return nil }
	s := httptest.NewUnstartedServer(srv.Config.Handler)
	s.TLS = conf
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.URL, ca, handshakes
}

// TestRunOverTLS: /fast, its baseline and a paced download go over TLS
// to an https URL, each on a connection of its own that handshakes in
// full under the CA the spec names, and the download is paced as over
// plain TCP; another CA's server is refused, and an https URL without
// CAPEM is refused before anything is sent.
func TestRunOverTLS(t *testing.T) {
	const size = 256 << 10
	u, ca, handshakes := tlsServer(t, size)
	spec := NewSpec(u, "t", WithDownloads(1), WithBaseline(3))
	spec.CAPEM = string(ca.CertPEM)
	spec.LargeSize, spec.DownloadRate = size, 2<<20 // 125 ms
	spec.FastCount, spec.FastRate = 4, 40
	res, err := Run(context.Background(), spec)
	require.NoError(t, err)
	d := res.Downloads[0]
	assert.True(t, d.Complete(), "%+v", d)
	assert.InDelta(t, 0.125, d.Completion.Seconds(), 0.05, "paced completion")
	assert.Equal(t, 2*DefaultReceiveBuffer, d.ReceiveBufferGranted, "the TLS connection's own socket")
	for _, p := range res.Fast {
		assert.True(t, p.OK(res.Spec), "%+v", p)
	}
	require.Len(t, res.Baseline, 3)
	for _, p := range res.Baseline {
		assert.Empty(t, p.Error)
		assert.Greater(t, p.Bytes, int64(12), "the raw exchange's header and body, decrypted")
	}
	assert.EqualValues(t, 1+4+3, handshakes.Load(), "one full handshake a connection")

	other, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	spec.CAPEM, spec.Downloads, spec.BaselineRequests = string(other.CertPEM), 0, 0
	res, err = Run(context.Background(), spec)
	require.NoError(t, err)
	for _, p := range res.Fast {
		assert.Contains(t, p.Error, "tls handshake: tls: failed to verify certificate")
	}

	spec.CAPEM = ""
	_, err = Run(context.Background(), spec)
	assert.ErrorContains(t, err, "is https: want CAPEM")
	spec.CAPEM = "not a certificate"
	_, err = Run(context.Background(), spec)
	assert.ErrorContains(t, err, "CAPEM holds no PEM certificate")
}

// TestPlainOnlyKinds: a slow client that writes plain TCP refuses an
// https URL, naming the field.
func TestPlainOnlyKinds(t *testing.T) {
	ca, err := tlsca.New(0, "127.0.0.1")
	require.NoError(t, err)
	for kind, field := range map[string]string{KindUpload: "UploadURL", KindHeaders: "FastURL", KindIdle: "FastURL"} {
		spec := NewSpec("https://127.0.0.1:1", "t", WithDownloads(1), WithSlowKind(kind))
		spec.CAPEM, spec.UploadURL = string(ca.CertPEM), "https://127.0.0.1:1/upload"
		err := spec.Validate()
		assert.ErrorContains(t, err, field+" https://", kind)
		assert.ErrorContains(t, err, "want an http:// URL", kind)
	}
	spec := NewSpec("https://127.0.0.1:1", "t")
	spec.CAPEM = string(ca.CertPEM)
	spec.Stream = &StreamSpec{URL: "https://127.0.0.1:1/events", Events: 1, Timeout: time.Second}
	assert.ErrorContains(t, spec.plainOnly(), "Stream.URL https://127.0.0.1:1/events is https")
}
