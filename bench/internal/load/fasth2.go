package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/net/http2"
)

// The /fast requester over HTTP/2 (Spec.FastH2): a second series beside
// the HTTP/1.1 one, for a path whose entry point speaks HTTP/2. Each
// request is a new connection carrying one stream, as each HTTP/1.1
// request is a new connection: TLS with ALPN h2 on an https FastURL, h2c
// by prior knowledge on an http one. So it pays what a new HTTP/2 client
// pays (the handshake, the preface and both SETTINGS) and shares no
// connection, no stream limit and no flow-control window with the slow
// clients or with its own earlier requests.

// h2Fast speaks HTTP/2 on the connections fastH2Request dials itself
// (NewClientConn): it keeps no pool, and asks for no compression, so the
// body's length is the server's.
var h2Fast = &http2.Transport{DisableCompression: true}

// fastH2Due is request k's slot in the HTTP/2 series: half an interval
// after the HTTP/1.1 series' request k, so the two never start together.
func fastH2Due(fastStart time.Time, k int, interval time.Duration) time.Time {
	return fastStart.Add(time.Duration(k)*interval + interval/2)
}

// fastH2Request sends the HTTP/2 series' request seq at due. The lag
// watch follows the HTTP/1.1 series only: this one's lag is recorded, not
// judged.
func fastH2Request(ctx context.Context, spec *Spec, seq int, runStart, due time.Time) FastRequest {
	began := time.Now()
	p := FastRequest{Seq: seq, Scheduled: due.Sub(runStart), Lag: began.Sub(due)}
	ctx, cancel := context.WithTimeout(ctx, spec.FastTimeout)
	defer cancel()
	status, n, err := h2Exchange(ctx, spec.FastURL, spec)
	p.Latency = time.Since(began)
	p.settle(spec, status, n, err)
	return p
}

// h2Exchange GETs rawURL as the one stream of a new HTTP/2 connection
// and reads the whole body; it returns the status and the body's length.
// A server that does not speak HTTP/2 there fails at connect, by name
// (dialH2).
func h2Exchange(ctx context.Context, rawURL string, spec *Spec) (int, int64, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, 0, err
	}
	conn, err := dialH2(ctx, u, plainDialer, spec.tlsConf)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	defer cutOnStop(ctx, conn)()
	cc, err := h2Fast.NewClientConn(conn)
	if err != nil {
		return 0, 0, fmt.Errorf("connect: %w", err)
	}
	defer cc.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return 0, 0, fmt.Errorf("receive header: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return resp.StatusCode, n, fmt.Errorf("receive body: %w", err)
	}
	return resp.StatusCode, n, nil
}

// H2CTransport speaks HTTP/2 by prior knowledge to http URLs, a new
// connection a request: for an entry point that takes HTTP/2 only
// (Spec.H2Only), as the pod's readiness asks it.
func H2CTransport() http.RoundTripper {
	return &h2cOnce{}
}

// h2cOnce dials a new connection for each request and closes it after.
type h2cOnce struct{}

func (h2cOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	u := *req.URL
	conn, err := dialH2(req.Context(), &u, plainDialer, nil)
	if err != nil {
		return nil, err
	}
	cc, err := h2Fast.NewClientConn(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		cc.Close()
		return nil, err
	}
	resp.Body = closingBody{resp.Body, cc}
	return resp, nil
}

// closingBody closes its connection with itself.
type closingBody struct {
	io.ReadCloser
	cc *http2.ClientConn
}

func (b closingBody) Close() error { err := b.ReadCloser.Close(); b.cc.Close(); return err }
