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

// Listen reads the secret, binds addr and serves in the background; errors (bad secret, address in use)
// come back before anything is served.
func Listen(addr, secretFile string, repos GitRepos, log *zap.Logger) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	secret, err := ReadSecret(secretFile)
	if err != nil {
		return nil, err
	}
	h, err := New(secret, repos, log)
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
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("webhook server stopped", zap.Error(err))
		}
	}()
	log.Info("webhook listening", zap.String("address", s.addr.String()), zap.String("path", Path))
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
