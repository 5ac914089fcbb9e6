package gitserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"sync/atomic"
	"time"
)

// HTTPS serves the repositories of a folder with git's smart HTTP protocol over TLS, behind basic auth.
type HTTPS struct {
	// URL is the server's base, https://127.0.0.1:<port>; a repository folder <root>/<name> is URL/<name>.
	URL string
	// CA is the PEM certificate of the authority that signed the server's certificate: trust it to connect.
	CA []byte

	srv     *http.Server
	refused atomic.Int64
}

// StartHTTPS serves the repositories under root on a loopback port. A request without the username and
// password is refused with 401.
func StartHTTPS(root, username, password string) (*HTTPS, error) {
	execPath, err := gitExecPath()
	if err != nil {
		return nil, err
	}
	caPEM, cert, err := newServerCert()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &HTTPS{URL: "https://" + ln.Addr().String(), CA: caPEM}
	backend := &cgi.Handler{
		Path: filepath.Join(execPath, "git-http-backend"),
		Dir:  root,
		Env:  append([]string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...),
	}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(username)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
				s.refused.Add(1)
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication failed", http.StatusUnauthorized)
				return
			}
			if r.URL.Query().Get("service") == "git-receive-pack" || filepath.Base(r.URL.Path) == "git-receive-pack" {
				http.Error(w, "read-only", http.StatusForbidden)
				return
			}
			backend.ServeHTTP(w, r)
		}),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// A client that does not trust the CA ends its handshake: that is a test's point, not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go func() { _ = s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// RepoURL is the clone URL of the repository folder <root>/<name>.
func (s *HTTPS) RepoURL(name string) string { return s.URL + "/" + name }

// Refused counts the requests refused with 401.
func (s *HTTPS) Refused() int64 { return s.refused.Load() }

// Close stops the server and closes its connections.
func (s *HTTPS) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// newServerCert generates a CA and a certificate it signs for 127.0.0.1, ::1 and localhost.
func newServerCert() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gitserver test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, err
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}
