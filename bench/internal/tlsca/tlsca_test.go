package tlsca

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandshake: a Go client that trusts only the CA completes a
// handshake with a listener serving the server certificate, under each
// of its names; one that trusts another CA, or asks for another name, is
// refused.
func TestHandshake(t *testing.T) {
	ca, err := New(0, "127.0.0.1", "localhost")
	require.NoError(t, err)
	srv, err := ca.ServerConfig()
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = io.WriteString(c, "ok")
			}()
		}
	}()
	dial := func(cfg *tls.Config) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = io.ReadAll(c)
		return err
	}
	assert.NoError(t, dial(ca.ClientConfig("127.0.0.1")))
	assert.NoError(t, dial(ca.ClientConfig("localhost")))
	var unknown x509.HostnameError
	assert.ErrorAs(t, dial(ca.ClientConfig("example.org")), &unknown)

	other, err := New(0, "127.0.0.1")
	require.NoError(t, err)
	var untrusted x509.UnknownAuthorityError
	assert.ErrorAs(t, dial(other.ClientConfig("127.0.0.1")), &untrusted)
}

// TestCertificates: the CA may sign servers only, the server certificate
// is for serving only, both expire after the validity asked for, and the
// chain is the server's certificate, then the CA's.
func TestCertificates(t *testing.T) {
	ca, err := New(2*time.Hour, "wsgilab.test")
	require.NoError(t, err)
	var certs []*x509.Certificate
	for rest := ca.ServerCertPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		certs = append(certs, c)
	}
	require.Len(t, certs, 2)
	leaf, root := certs[0], certs[1]
	assert.True(t, root.IsCA)
	assert.True(t, root.MaxPathLenZero)
	assert.False(t, leaf.IsCA)
	assert.Equal(t, []string{"wsgilab.test"}, leaf.DNSNames)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	assert.WithinDuration(t, time.Now().Add(2*time.Hour), leaf.NotAfter, time.Minute)
	assert.True(t, leaf.NotBefore.Before(time.Now()))
	_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "wsgilab.test"})
	assert.NoError(t, err)
}

// TestRefusesBadInput: each malformed argument is named.
func TestRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		validity time.Duration
		names    []string
		want     string
	}{
		{0, nil, "no server name"},
		{0, []string{""}, `server name ""`},
		{0, []string{"*.example.org"}, `server name "*.example.org"`},
		{-time.Hour, []string{"localhost"}, "validity -1h0m0s"},
	} {
		_, err := New(c.validity, c.names...)
		if assert.Error(t, err, "%v %v", c.validity, c.names) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

// TestWriteServer: the files are whole, the key readable by its owner
// alone, and no temporary file is left behind.
func TestWriteServer(t *testing.T) {
	ca, err := New(0, "127.0.0.1")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, ca.WriteServer(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{CertFile, KeyFile, CAFile}, names)
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	cert, err := os.ReadFile(filepath.Join(dir, CertFile))
	require.NoError(t, err)
	key, err := os.ReadFile(filepath.Join(dir, KeyFile))
	require.NoError(t, err)
	_, err = tls.X509KeyPair(cert, key)
	assert.NoError(t, err)

	assert.ErrorContains(t, ca.WriteServer(filepath.Join(dir, "missing")), "tlsca:")
}

// TestIssue: a further certificate carries the user (CN) and groups (O)
// Kubernetes reads from a client certificate, verifies against the CA for
// client auth, and for serving as well only when names are given.
func TestIssue(t *testing.T) {
	ca, err := New(time.Hour, "wsgilab.test")
	require.NoError(t, err)
	parse := func(certPEM, keyPEM []byte, err error) *x509.Certificate {
		t.Helper()
		require.NoError(t, err)
		_, err = tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err, "the key matches its certificate")
		b, _ := pem.Decode(certPEM)
		require.NotNil(t, b)
		c, err := x509.ParseCertificate(b.Bytes)
		require.NoError(t, err)
		return c
	}
	client := parse(ca.Issue("system:node:n1", []string{"system:nodes"}))
	assert.Equal(t, "system:node:n1", client.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, client.Subject.Organization)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, client.ExtKeyUsage)
	_, err = client.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)
	_, err = client.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.Error(t, err, "a client certificate serves nothing")

	server := parse(ca.Issue("kube-apiserver", nil, "10.0.0.1", "kubernetes.default"))
	_, err = server.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "kubernetes.default"})
	assert.NoError(t, err)
	assert.Equal(t, "10.0.0.1", server.IPAddresses[0].String())

	_, _, err = ca.Issue("", nil)
	assert.ErrorContains(t, err, "empty common name")
	_, _, err = (&CA{}).Issue("x", nil)
	assert.ErrorContains(t, err, "made by New")
}
