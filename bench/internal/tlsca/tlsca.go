// Package tlsca makes the lab's TLS material at test time: a certificate
// authority and a server certificate it signs, both ECDSA P-256, made in
// memory with crypto/x509 for one series. No private key is ever committed
// to the repository: each series makes its own, and the server's key is
// written only into the directory a pod mounts (WriteServer).
package tlsca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultValidity is how long a series' certificates are valid: a series
// lasts hours at most (make repro's -timeout is 6 h).
const DefaultValidity = 24 * time.Hour

// Files a WriteServer directory holds; a pod's server reads them by these
// names.
const (
	CertFile = "server.crt" // the server's certificate, then the CA's
	KeyFile  = "server.key" // the server's private key, mode 0600
	CAFile   = "ca.crt"     // the CA's certificate, for clients
)

// CA is a series' certificate authority and the server certificate it
// signed.
type CA struct {
	// CertPEM is the CA's certificate; Pool holds it, for clients.
	CertPEM []byte
	Pool    *x509.CertPool
	// ServerCertPEM is the server's certificate followed by the CA's (a
	// chain, as NGINX's ssl_certificate and Gunicorn's --certfile take it);
	// ServerKeyPEM its PKCS #8 private key.
	ServerCertPEM, ServerKeyPEM []byte
	// Names are the server certificate's DNS names and IP addresses, as
	// New was given them.
	Names []string

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// New makes a CA and a server certificate for names: DNS names or IP
// addresses (127.0.0.1 and localhost are what a pod's client dials),
// valid from an hour ago for validity (DefaultValidity when 0).
func New(validity time.Duration, names ...string) (*CA, error) {
	if len(names) == 0 {
		return nil, errors.New("tlsca: no server name: want at least one DNS name or IP address")
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " /*") {
			return nil, fmt.Errorf("tlsca: server name %q: want a DNS name or an IP address", n)
		}
	}
	if validity < 0 {
		return nil, fmt.Errorf("tlsca: validity %v: want above 0 (or 0 for %v)", validity, DefaultValidity)
	}
	if validity == 0 {
		validity = DefaultValidity
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsca: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "wsgilab test CA", Organization: []string{"wsgilab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("tlsca: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("tlsca: CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsca: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0], Organization: []string{"wsgilab"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	addNames(tmpl, names)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("tlsca: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tlsca: server key: %w", err)
	}
	ca := &CA{
		CertPEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		ServerKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		Pool:         x509.NewCertPool(),
		Names:        names,
		cert:         caCert,
		key:          caKey,
	}
	ca.ServerCertPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.CertPEM...)
	ca.Pool.AddCert(caCert)
	return ca, nil
}

// Issue signs a further certificate with the CA, valid as long as the
// CA: for a client (TLS client auth) named cn in the organizations orgs,
// which Kubernetes reads as user and groups, and for a server as well
// when names (DNS names or IP addresses) are given. It returns the
// certificate and its PKCS #8 key, both PEM.
func (c *CA) Issue(cn string, orgs []string, names ...string) (certPEM, keyPEM []byte, err error) {
	if c.key == nil {
		return nil, nil, errors.New("tlsca: Issue wants a CA made by New")
	}
	if cn == "" {
		return nil, nil, errors.New("tlsca: Issue: an empty common name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsca: key of %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    c.cert.NotBefore,
		NotAfter:     c.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	addNames(tmpl, names)
	if len(names) > 0 {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsca: certificate of %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsca: key of %s: %w", cn, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// addNames puts names on tmpl: IP addresses as such, the rest as DNS
// names.
func addNames(tmpl *x509.Certificate, names []string) {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
}

// serial is a random 128-bit serial number, as RFC 5280 allows up to 20
// octets.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil { // crypto/rand does not fail on Linux
		panic(err)
	}
	return n
}

// ServerConfig is a tls.Config that serves the server certificate: for
// Go listeners in the lab's own tests.
func (c *CA) ServerConfig() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(c.ServerCertPEM, c.ServerKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsca: server key pair: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ClientConfig is a tls.Config that trusts only this CA, for serverName.
func (c *CA) ClientConfig(serverName string) *tls.Config {
	return &tls.Config{RootCAs: c.Pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// WriteServer writes the server's files (CertFile, KeyFile, CAFile) into
// dir, which must exist: the key with mode 0600, the certificates 0644.
// Each file is written whole under a temporary name, then renamed, so a
// reader never sees half of one.
func (c *CA) WriteServer(dir string) error {
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{{CertFile, c.ServerCertPEM, 0o644}, {KeyFile, c.ServerKeyPEM, 0o600}, {CAFile, c.CertPEM, 0o644}} {
		tmp, err := os.CreateTemp(dir, "."+f.name+".*")
		if err != nil {
			return fmt.Errorf("tlsca: %w", err)
		}
		_, err = tmp.Write(f.data)
		err = errors.Join(err, tmp.Chmod(f.mode), tmp.Close())
		if err == nil {
			err = os.Rename(tmp.Name(), filepath.Join(dir, f.name))
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("tlsca: write %s: %w", f.name, err)
		}
	}
	return nil
}
