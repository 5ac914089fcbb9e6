package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"
)

// ReadSecret reads the shared secret from a file; surrounding whitespace (the newline `echo` adds) is
// dropped. The content never appears in errors.
func ReadSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("webhook: a secret file is required (--webhook-secret-file)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	secret := bytes.TrimSpace(data)
	if len(secret) == 0 {
		return nil, fmt.Errorf("webhook secret: %s is empty", path)
	}
	return secret, nil
}

// Server serves Path on one address.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Server timeouts. GitHub and GitLab give up on a delivery after 10 s, so a request still sending its
// headers or body after these is not theirs; the read timeout also bounds how long a slow sender holds
// one of the MaxInFlight slots. The write timeout runs from the end of the headers, so it covers the
// body, the sync budget and the answer.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 20 * time.Second
	writeTimeout      = readTimeout + syncBudget + 10*time.Second
	idleTimeout       = time.Minute
	maxHeaderBytes    = 64 << 10
)

// Listen reads the secret, binds addr and serves in the background; errors (bad secret or limits,
// address in use) come back before anything is served.
func Listen(addr, secretFile string, limits Limits, repos GitRepos, log *zap.Logger) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	secret, err := ReadSecret(secretFile)
	if err != nil {
		return nil, err
	}
	h, err := New(secret, repos, limits, log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	s := &Server{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
			WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("webhook server stopped", zap.Error(err))
		}
	}()
	log.Info("webhook listening", zap.String("address", s.addr.String()), zap.String("path", Path),
		zap.Int64("maxBody", h.limits.MaxBody), zap.Int("maxInFlight", h.limits.MaxInFlight))
	return s, nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.addr }

// Shutdown stops accepting deliveries and waits for those in flight, up to ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
