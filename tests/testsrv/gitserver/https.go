package gitserver

import (
	"crypto/subtle"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// HTTPS serves the repositories of a folder with git's smart HTTP protocol over TLS, behind basic auth.
type HTTPS struct {
	// URL is the server's base, https://<ip>:<port>; a repository folder <root>/<name> is URL/<name>.
	URL string
	// CA is the PEM certificate of the authority that signed the server's certificate: trust it to connect.
	CA []byte

	srv     *http.Server
	refused atomic.Int64
}

// StartHTTPS serves the repositories under root on a loopback port. A request without the username and
// password is refused with 401.
func StartHTTPS(root, username, password string) (*HTTPS, error) {
	return StartHTTPSOn("127.0.0.1", root, username, password)
}

// StartHTTPSOn is StartHTTPS on a port of the host's address ip, which its certificate names: the
// docker-compose test serves on the Docker bridge, for workers in containers.
func StartHTTPSOn(ip, root, username, password string) (*HTTPS, error) {
	pki, err := testpki.NewNamed(ip)
	if err != nil {
		return nil, err
	}
	return StartHTTPSWith(HTTPSOptions{Addr: net.JoinHostPort(ip, "0"), Root: root, Username: username, Password: password, PKI: pki})
}

// HTTPSOptions configure StartHTTPSWith.
type HTTPSOptions struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr               string
	Root               string
	Username, Password string
	PKI                *testpki.PKI
}

// StartHTTPSWith serves as StartHTTPS does on a given address and certificate, so that a server killed and
// started again is found where it was and stays trusted by the clients given its CA.
func StartHTTPSWith(o HTTPSOptions) (*HTTPS, error) {
	execPath, err := gitExecPath()
	if err != nil {
		return nil, err
	}
	root, username, password := o.Root, o.Username, o.Password
	tlsConfig, err := o.PKI.ServerConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	pki := o.PKI
	s := &HTTPS{URL: "https://" + ln.Addr().String(), CA: pki.CAPEM}
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
		TLSConfig:         tlsConfig,
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
