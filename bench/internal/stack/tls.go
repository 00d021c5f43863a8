package stack

import (
	"fmt"
	"sync"

	"wsgilab/bench/internal/podspec"
	"wsgilab/bench/internal/tlsca"
)

// TLSNames are the names a pod's server certificate is valid for: what
// its client dials.
var TLSNames = []string{"127.0.0.1", "localhost"}

// sessionCA is one series' certificate authority, made on first use.
type sessionCA struct {
	once sync.Once
	ca   *tlsca.CA
	err  error
}

func (s *sessionCA) get() (*tlsca.CA, error) {
	s.once.Do(func() {
		s.ca, s.err = tlsca.New(tlsca.DefaultValidity, TLSNames...)
		if s.err != nil {
			s.err = fmt.Errorf("stack: the series' TLS certificates: %w", s.err)
		}
	})
	return s.ca, s.err
}

// CAPEM is the certificate a client of this pod trusts, nil unless the
// pod speaks TLS (podspec.Config.TLS): the series' CA.
func (p *Pod) CAPEM() []byte {
	if !p.Config.TLS {
		return nil
	}
	ca, err := p.session.tls.get()
	if err != nil {
		return nil
	}
	return ca.CertPEM
}

// tlsEnv is the environment that carries the series' server certificate
// and key to the container that terminates TLS (podspec.WritingTLS).
func (p *Pod) tlsEnv() ([]string, error) {
	ca, err := p.session.tls.get()
	if err != nil {
		return nil, err
	}
	return []string{podspec.TLSCertEnv + "=" + string(ca.ServerCertPEM), podspec.TLSKeyEnv + "=" + string(ca.ServerKeyPEM)}, nil
}
