// Package chartrepo serves a Helm chart repository over HTTPS on loopback, with basic auth, for tests, the
// benchmark and `make up`: charts are packaged (chartutil.Save) and indexed (repo.IndexDirectory) by the
// Helm SDK itself, so what a client reads is what `helm repo index` would publish. It counts the GETs of
// each path, so a caller can prove a chart was fetched once, and can be made to fail.
package chartrepo

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// Options configure a Server.
type Options struct {
	// Dir holds the archives and index.yaml; a temporary directory, removed by Close, when empty.
	Dir string
	// Addr is where to listen; 127.0.0.1 on a free port when empty.
	Addr string
	// Username and Password require basic auth on every request when Username is set.
	Username, Password string
	// AbsoluteURLs writes absolute chart URLs into index.yaml; by default they are relative to the
	// repository, as `helm repo index` writes them without --url.
	AbsoluteURLs bool
	// PKI is the server's certificate and its CA; a fresh one when nil. A server started again with the
	// same one stays trusted by the clients configured for it (`make up`'s worker).
	PKI *testpki.PKI
	Log *zap.Logger
}

// Server is a running chart repository.
type Server struct {
	// URL is the repository's base URL (https://127.0.0.1:port), what fleet.yaml's helm.repo names.
	URL string
	// CAPEM is the certificate authority that signed the server's certificate.
	CAPEM []byte

	o       Options
	tempDir bool
	srv     *http.Server
	addr    string

	mu        sync.Mutex
	listener  net.Listener
	gets      map[string]int
	failWith  int
	published map[string]Published
	conns     map[net.Conn]bool
}

// Published is one chart archive the server holds.
type Published struct {
	Name, Version string
	// Path is the archive's URL path on the server (/name-version.tgz).
	Path string
	// Digest is the archive's "sha256:<hex>".
	Digest string
	Data   []byte
}

// Start listens and serves until Close.
func Start(o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	s := &Server{o: o, gets: map[string]int{}, published: map[string]Published{}, conns: map[net.Conn]bool{}}
	if s.o.Dir == "" {
		dir, err := os.MkdirTemp("", "chartrepo")
		if err != nil {
			return nil, err
		}
		s.o.Dir, s.tempDir = dir, true
	} else if err := os.MkdirAll(s.o.Dir, 0o755); err != nil {
		return nil, err
	}
	pki := o.PKI
	if pki == nil {
		var err error
		if pki, err = testpki.New(); err != nil {
			return nil, err
		}
	}
	tlsConfig, err := pki.ServerConfig()
	if err != nil {
		return nil, err
	}
	s.CAPEM = pki.CAPEM
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("chart repository: listening on %s: %w", addr, err)
	}
	s.addr = l.Addr().String()
	s.URL = "https://" + s.addr
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: zap.NewStdLog(o.Log.Named("chartrepo-http")), ConnState: s.track}
	if _, err := writeIndex(s.o.Dir, s.baseURL()); err != nil {
		l.Close()
		return nil, err
	}
	s.startServing(l)
	return s, nil
}

func (s *Server) startServing(l net.Listener) {
	s.listener = l
	go func() { _ = s.srv.ServeTLS(l, "", "") }()
}

// Close stops serving and removes the directory if Start made it.
func (s *Server) Close() error {
	err := s.srv.Close()
	if s.tempDir {
		err = errors.Join(err, os.RemoveAll(s.o.Dir))
	}
	return err
}

// Down closes the listener and every open connection, so that requests fail (a repository that is down:
// connection refused) until Up.
func (s *Server) Down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	err := s.listener.Close()
	s.listener = nil
	for c := range s.conns {
		_ = c.Close()
	}
	return err
}

func (s *Server) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew:
		s.conns[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
	}
}

// Up listens again on the same address after Down.
func (s *Server) Up() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return nil
	}
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("chart repository: listening again on %s: %w", s.addr, err)
	}
	s.startServing(l)
	return nil
}

// Fail makes every request answer status (after authentication), 0 to serve normally again.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	s.failWith = status
	s.mu.Unlock()
}

// Gets is how many GETs of path (as /index.yaml or /web-1.0.0.tgz) were answered, whatever the status.
func (s *Server) Gets(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[path]
}

// Publish packages c into the repository and indexes it, as `helm package` then `helm repo index` would.
// A version already published is replaced.
func (s *Server) Publish(c *chart.Chart) (Published, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := publish(s.o.Dir, s.baseURL(), c)
	if err != nil {
		return Published{}, err
	}
	s.published[p.Path] = p
	return p, nil
}

// PublishDir is Publish for a repository whose server runs in another process (`make up`'s): the server
// reads every file from its directory at each request, and archive and index are each replaced by a
// rename, so it never serves half a file. The index's chart URLs are relative.
func PublishDir(dir string, c *chart.Chart) (Published, error) {
	return publish(dir, "", c)
}

func publish(dir, base string, c *chart.Chart) (Published, error) {
	tmp, err := os.MkdirTemp(dir, ".package")
	if err != nil {
		return Published{}, err
	}
	defer os.RemoveAll(tmp)
	file, err := chartutil.Save(c, tmp)
	if err != nil {
		return Published{}, fmt.Errorf("packaging %s-%s: %w", c.Name(), c.Metadata.Version, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Published{}, err
	}
	name := filepath.Base(file)
	if err := os.Rename(file, filepath.Join(dir, name)); err != nil {
		return Published{}, err
	}
	sum := sha256.Sum256(data)
	p := Published{Name: c.Name(), Version: c.Metadata.Version, Path: "/" + name, Digest: "sha256:" + hex.EncodeToString(sum[:]), Data: data}
	index, err := writeIndex(dir, base)
	if err != nil {
		return Published{}, err
	}
	if !index.Has(p.Name, p.Version) {
		// IndexDirectory skips an archive it cannot load, without a word.
		return Published{}, fmt.Errorf("%s-%s was packaged but not indexed", p.Name, p.Version)
	}
	return p, nil
}

// PutFile serves data at /name, outside the index (IndexDirectory skips what is not a chart): a file a
// chart URL may wrongly point at.
func (s *Server) PutFile(name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeAtomic(filepath.Join(s.o.Dir, filepath.Base(name)), data)
}

// Published lists the archives published so far by path.
func (s *Server) Published(path string) (Published, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.published[path]
	return p, ok
}

func (s *Server) baseURL() string {
	if s.o.AbsoluteURLs {
		return s.URL
	}
	return ""
}

// writeIndex regenerates index.yaml from the archives in dir. Its temporary file is its own, as a
// publisher in another process may index the same directory at the same time.
func writeIndex(dir, base string) (*repo.IndexFile, error) {
	index, err := repo.IndexDirectory(dir, base)
	if err != nil {
		return nil, fmt.Errorf("indexing %s: %w", dir, err)
	}
	index.SortEntries()
	f, err := os.CreateTemp(dir, ".index-*.yaml")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	f.Close()
	if err := index.WriteFile(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	return index, os.Rename(tmp, filepath.Join(dir, "index.yaml"))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	s.mu.Lock()
	if r.Method == http.MethodGet {
		s.gets[p]++
	}
	fail := s.failWith
	s.mu.Unlock()
	status := s.answer(w, r, p, fail)
	s.o.Log.Debug("chart repository request", zap.String("method", r.Method), zap.String("path", p), zap.Int("status", status))
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, p string, fail int) int {
	if s.o.Username != "" {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(s.o.Username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(s.o.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return http.StatusUnauthorized
		}
	}
	if fail != 0 {
		http.Error(w, http.StatusText(fail), fail)
		return fail
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	name := strings.TrimPrefix(p, "/")
	if name == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	data, err := os.ReadFile(filepath.Join(s.o.Dir, name))
	if err != nil {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	sum := sha256.Sum256(data)
	// An ETag lets a client revalidate index.yaml with a 304 instead of reading it again.
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	return http.StatusOK
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
