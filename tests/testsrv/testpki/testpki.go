// Package testpki issues a throwaway certificate authority and a server certificate for 127.0.0.1 and
// localhost, for the HTTPS servers tests start on loopback.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a CA and one server certificate it signed, all in PEM.
type PKI struct {
	CAPEM, CertPEM, KeyPEM []byte
	// ca and caKey sign client certificates (IssueClient); a PKI read back by Load has neither.
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// New issues a fresh CA and a server certificate for 127.0.0.1, ::1 and localhost. ECDSA keys: they are
// generated in microseconds, where RSA takes long enough to matter on a busy machine.
func New() (*PKI, error) { return NewNamed("127.0.0.1") }

// NewNamed is New with the server certificate's common name, also one of its DNS names when it is not an
// IP address (for a client that checks a server name other than the address it dials), or one of its IP
// addresses when it is one other than loopback (a server that containers reach on the Docker bridge).
func NewNamed(name string) (*PKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "flotilla-test-ca"},
		NotBefore: now, NotAfter: now.Add(24 * time.Hour * 365),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	dns := []string{"localhost"}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}
	if ip := net.ParseIP(name); ip == nil && name != "localhost" {
		dns = append(dns, name)
	} else if ip != nil && !ip.IsLoopback() {
		ips = append(ips, ip)
	}
	p := &PKI{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), ca: caCert, caKey: caKey}
	p.CertPEM, p.KeyPEM, err = p.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips, DNSNames: dns,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// IssueClient issues a client certificate (mTLS) for commonName, signed by the CA, in PEM.
func (p *PKI) IssueClient(commonName string) (certPEM, keyPEM []byte, err error) {
	if p.caKey == nil {
		return nil, nil, fmt.Errorf("testpki: this PKI was loaded from files and cannot sign")
	}
	return p.issue(&x509.Certificate{Subject: pkix.Name{CommonName: commonName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// issue signs tmpl (its subject, usages and names) with a fresh key, valid for a year from an hour ago.
func (p *PKI) issue(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now().Add(-time.Hour)
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial(), now, now.Add(24*time.Hour*365)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// ServerConfig is a TLS configuration that serves the certificate.
func (p *PKI) ServerConfig() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Pool is a certificate pool holding only the CA, for a client that trusts nothing else.
func (p *PKI) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CAPEM)
	return pool
}

// WriteFiles writes ca.crt, server.crt and server.key into dir, for a server started as a process.
func (p *PKI) WriteFiles(dir string) (ca, cert, key string, err error) {
	ca, cert, key = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	for path, data := range map[string][]byte{ca: p.CAPEM, cert: p.CertPEM, key: p.KeyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return "", "", "", fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return ca, cert, key, nil
}

// Load reads the files WriteFiles wrote into dir, so a server started again keeps the CA its clients trust.
func Load(dir string) (*PKI, error) {
	p := &PKI{}
	for name, dst := range map[string]*[]byte{"ca.crt": &p.CAPEM, "server.crt": &p.CertPEM, "server.key": &p.KeyPEM} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		*dst = data
	}
	if _, err := p.ServerConfig(); err != nil {
		return nil, fmt.Errorf("certificate in %s: %w", dir, err)
	}
	return p, nil
}
