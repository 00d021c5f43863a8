package load

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"time"
)

// The slow TLS client (KindTLS): it opens a TCP connection to a TLS
// listener and sends a real ClientHello one byte every HeaderGap, so a
// server that handshakes in its worker (Gunicorn's sync worker with
// --certfile) waits in that handshake, as it waits for slow headers. The
// hello is crypto/tls's own, for the URL's host name, so what the server
// has read by any moment is a prefix of a handshake it would accept.

// tlsRecordHandshake is a TLS record's content type for handshake
// messages (RFC 8446, 5.1); tlsRecordHeader is a record's header length.
const (
	tlsRecordHandshake = 0x16
	tlsRecordHeader    = 5
)

// clientHello is the first record a crypto/tls client sends to
// serverName: its ClientHello, whole. The handshake runs over a pipe whose
// far end reads that record and closes.
func clientHello(serverName string) ([]byte, error) {
	c, s := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}).Handshake()
		c.Close()
	}()
	defer func() { s.Close(); <-done }()
	s.SetDeadline(time.Now().Add(5 * time.Second))
	rec := make([]byte, tlsRecordHeader)
	if _, err := io.ReadFull(s, rec); err != nil {
		return nil, fmt.Errorf("load: ClientHello: %w", err)
	}
	if rec[0] != tlsRecordHandshake {
		return nil, fmt.Errorf("load: ClientHello: record type %#x, want a handshake (%#x)", rec[0], tlsRecordHandshake)
	}
	rec = append(rec, make([]byte, binary.BigEndian.Uint16(rec[3:5]))...)
	if _, err := io.ReadFull(s, rec[tlsRecordHeader:]); err != nil {
		return nil, fmt.Errorf("load: ClientHello: %w", err)
	}
	return rec, nil
}

// checkTLSURL names a TLSURL that is not an https:// URL.
func checkTLSURL(u string) error {
	if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
		return fmt.Errorf("load: TLSURL %q: want an https:// URL", u)
	}
	return nil
}

// slowHello holds a connection to TLSURL's host (port 443 unless it names
// one) for HoldFor, sending its
// ClientHello a byte every HeaderGap (the first at once); a hello sent
// whole before HoldFor is over is then left to the server. Whatever the
// server does meanwhile ends the hold early and is recorded: it sends a
// record (Status -1: an alert, or its ServerHello to a whole hello),
// closes (EOF) or resets the connection. Bytes counts the hello's bytes
// sent, Expected its length.
func slowHello(ctx context.Context, spec *Spec, id string, runStart time.Time) Download {
	d := Download{ID: id, Kind: KindTLS, Start: time.Since(runStart)}
	u, err := url.Parse(spec.TLSURL)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	hello, err := clientHello(u.Hostname())
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.Expected = int64(len(hello))
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "443")
	}
	conn, _, began := dialHeld(ctx, spec, u.String(), &d)
	if conn == nil {
		return d
	}
	defer conn.Close()
	// The server's side: its first byte, its close or its reset.
	ended := make(chan serverEnd, 1)
	go func() {
		if _, err := bufio.NewReaderSize(conn, 16).ReadByte(); err != nil {
			ended <- serverEnd{err: err}
			return
		}
		ended <- serverEnd{status: -1}
	}()
	d.holdSending(ctx, spec, conn, began, ended, func() error {
		if d.Bytes == d.Expected {
			return nil
		}
		n, err := conn.Write(hello[d.Bytes : d.Bytes+1])
		d.Bytes += int64(n)
		return err
	})
	return d
}

// clientTLS is CAPEM's client config (TrustOnly): nil when CAPEM is
// empty.
func (s Spec) clientTLS() (*tls.Config, error) {
	if s.CAPEM == "" {
		return nil, nil
	}
	c, err := TrustOnly(s.CAPEM)
	if err != nil {
		return nil, fmt.Errorf("load: CAPEM %w", err)
	}
	return c, nil
}

// TrustOnly is an HTTP/1.1 client config that trusts only the
// certificates of caPEM (a pod's CA), or an error when it holds none.
// Each connection handshakes in full (no session cache), as a new client
// does.
func TrustOnly(caPEM string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, errors.New("holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}, nil
}

// dialURL connects to u's host with dialer under ctx's deadline; an
// https URL's connection is then TLS under tc (for u's host name), its
// handshake done before it returns.
func dialURL(ctx context.Context, u *url.URL, dialer *net.Dialer, tc *tls.Config) (net.Conn, error) {
	https := u.Scheme == "https"
	if https && tc == nil {
		return nil, fmt.Errorf("connect: %s is https, and no CAPEM says whom to trust", u)
	}
	conn, err := dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if !https {
		return conn, nil
	}
	c := tc.Clone()
	c.ServerName = u.Hostname()
	t := tls.Client(conn, c)
	if err := t.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return t, nil
}
