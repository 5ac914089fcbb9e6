// Package tempserver runs Temporal's own server binary (bin/temporal-server, go.temporal.io/server), the
// one operators deploy, for tests that need what the CLI's dev server cannot do: above all a frontend
// that serves TLS and requires client certificates. All four services run in one process on loopback
// ports, with SQLite in a file of the server's directory, and the process is stopped by PID.
package tempserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// Options configure the server.
type Options struct {
	// Bin is the temporal-server binary; Dir holds its configuration, database and log.
	Bin, Dir string
	// Namespace is created once the server answers; empty: "default".
	Namespace string
	// MTLS, when set, makes the frontend serve the PKI's server certificate and refuse any client without
	// a certificate its CA signed. Nil: plain gRPC, as the dev server.
	MTLS *testpki.PKI
	// LogFile is where the server logs; empty: Dir/temporal-server.log.
	LogFile string
}

// Server is a running temporal-server.
type Server struct {
	o     Options
	p     *proc.Process
	ports ports
	// caFile, certFile and keyFile are the CA and the client certificate this package connects with
	// (readiness, the namespace); the system worker inside the server presents the same certificate.
	caFile, certFile, keyFile string
	// serverCertFile and serverKeyFile are the frontend's.
	serverCertFile, serverKeyFile string
}

// ports are the loopback ports of the four services: each has a gRPC port and a membership (ringpop) port.
type ports struct {
	frontend, frontendHTTP, frontendMembership int
	history, historyMembership                 int
	matching, matchingMembership               int
	worker, workerMembership                   int
}

// Start starts the server and returns once its frontend serves the namespace.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.Dir, "temporal-server.log")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{o: o}
	if o.MTLS != nil {
		if err := s.writeCertificates(); err != nil {
			return nil, err
		}
	}
	return s, s.start(ctx)
}

// writeCertificates writes the CA, the frontend's certificate and the client certificate the system
// worker and this package present.
func (s *Server) writeCertificates() error {
	dir := filepath.Join(s.o.Dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var err error
	if s.caFile, s.serverCertFile, s.serverKeyFile, err = s.o.MTLS.WriteFiles(dir); err != nil {
		return err
	}
	cert, key, err := s.o.MTLS.IssueClient("temporal-system")
	if err != nil {
		return err
	}
	s.certFile, s.keyFile = filepath.Join(dir, "system.crt"), filepath.Join(dir, "system.key")
	if err := os.WriteFile(s.certFile, cert, 0o600); err != nil {
		return err
	}
	return os.WriteFile(s.keyFile, key, 0o600)
}

// startAttempts bounds how often a start is retried after the server died while starting: the nine ports
// are picked free and then handed to the server, and another process may take one in between.
const startAttempts = 3

func (s *Server) start(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var died bool
		if died, err = s.startOnce(ctx); err == nil || !died {
			return err
		}
	}
	return err
}

func (s *Server) pickPorts() error {
	for _, p := range []*int{&s.ports.frontend, &s.ports.frontendHTTP, &s.ports.frontendMembership, &s.ports.history, &s.ports.historyMembership,
		&s.ports.matching, &s.ports.matchingMembership, &s.ports.worker, &s.ports.workerMembership} {
		var err error
		if *p, err = proc.FreePort(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) configFile() string { return filepath.Join(s.o.Dir, "config.yaml") }

// config is the server's configuration, in the keys of go.temporal.io/server/common/config (see its
// config_template_embedded.yaml). One SQLite file holds both the default and the visibility store, as
// in the dev server; "setup" has the server create the schema in a new file. The system worker (the
// server's own workflows: namespace deletion, scheduler, …) dials the frontend like any client, so with
// mTLS it needs a client certificate too: global.tls.systemWorker. Internode traffic stays plain: it
// never leaves the process's loopback ports and is not what the test is about. No dynamic config: the
// defaults serve Flotilla, the search attributes the worker creates included.
func (s *Server) config() string {
	p := s.ports
	var tlsConf string
	if s.o.MTLS != nil {
		tlsConf = fmt.Sprintf(`
  tls:
    frontend:
      server:
        certFile: %[1]q
        keyFile: %[2]q
        requireClientAuth: true
        clientCaFiles: [%[3]q]
    systemWorker:
      certFile: %[4]q
      keyFile: %[5]q
      client:
        serverName: 127.0.0.1
        rootCaFiles: [%[3]q]`, s.serverCertFile, s.serverKeyFile, s.caFile, s.certFile, s.keyFile)
	}
	return fmt.Sprintf(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: sqlite
  visibilityStore: sqlite
  numHistoryShards: 1
  datastores:
    sqlite:
      sql:
        pluginName: sqlite
        databaseName: %[1]q
        connectAddr: localhost
        connectProtocol: tcp
        connectAttributes:
          mode: rwc
          setup: "true"
          journal_mode: wal
          synchronous: "1"
          busy_timeout: "10000"
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1%[2]s
services:
  frontend:
    rpc: {grpcPort: %[3]d, httpPort: %[4]d, membershipPort: %[5]d, bindOnIP: 127.0.0.1}
  history:
    rpc: {grpcPort: %[6]d, membershipPort: %[7]d, bindOnIP: 127.0.0.1}
  matching:
    rpc: {grpcPort: %[8]d, membershipPort: %[9]d, bindOnIP: 127.0.0.1}
  worker:
    rpc: {grpcPort: %[10]d, membershipPort: %[11]d, bindOnIP: 127.0.0.1}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:%[3]d
      httpAddress: 127.0.0.1:%[4]d
dcRedirectionPolicy:
  policy: noop
archival:
  history: {state: disabled}
  visibility: {state: disabled}
namespaceDefaults:
  archival:
    history: {state: disabled}
    visibility: {state: disabled}
`, filepath.Join(s.o.Dir, "temporal.db"), tlsConf, p.frontend, p.frontendHTTP, p.frontendMembership, p.history, p.historyMembership,
		p.matching, p.matchingMembership, p.worker, p.workerMembership)
}

// startOnce starts the process on fresh ports and waits until it is ready; died says the process exited
// before that.
func (s *Server) startOnce(ctx context.Context) (died bool, err error) {
	if err := s.pickPorts(); err != nil {
		return false, err
	}
	if err := os.WriteFile(s.configFile(), []byte(s.config()), 0o644); err != nil {
		return false, err
	}
	// --allow-no-auth: the server has no authorizer (anyone the frontend lets in may do anything), which
	// is what the test wants, since mTLS alone decides who connects; without the flag the server logs a
	// warning that future versions will refuse to start.
	p, err := proc.Start(proc.Spec{Name: "temporal-server", Path: s.o.Bin, Dir: s.o.Dir,
		Args: []string{"--config-file", s.configFile(), "--allow-no-auth", "start"}, LogFile: s.o.LogFile})
	if err != nil {
		return false, err
	}
	s.p = p
	// Generous: the limit only catches a server that never comes up, not a slow start on a loaded machine.
	return p.AwaitReady(ctx, 3*time.Minute, 250*time.Millisecond, s.ready)
}

// ready is true once the frontend answers a health check and serves the namespace, which it is asked to
// register the first time it does not know it.
func (s *Server) ready(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := s.Dial(cctx, "")
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.CheckHealth(cctx, &client.CheckHealthRequest{}); err != nil {
		return err
	}
	_, err = c.WorkflowService().DescribeNamespace(cctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.o.Namespace})
	var nf *serviceerror.NamespaceNotFound
	if !errors.As(err, &nf) {
		return err
	}
	// A day is the least retention the server accepts outside its dev mode.
	_, err = c.WorkflowService().RegisterNamespace(cctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: s.o.Namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("registering namespace %s: %w", s.o.Namespace, err)
	}
	return errors.New("namespace registered, not yet served")
}

// Dial connects to the frontend as this package does, with the system's client certificate under mTLS,
// to namespace (empty: the server's namespace).
func (s *Server) Dial(ctx context.Context, namespace string) (client.Client, error) {
	if namespace == "" {
		namespace = s.o.Namespace
	}
	opts := client.Options{HostPort: s.Address(), Namespace: namespace, Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	if s.o.MTLS != nil {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: s.o.MTLS.Pool(), Certificates: []tls.Certificate{cert}}
	}
	return client.DialContext(ctx, opts)
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return fmt.Sprintf("127.0.0.1:%d", s.ports.frontend) }

// CAFile is the PEM file of the CA that signed the frontend's certificate and whose client certificates
// it accepts; empty without mTLS.
func (s *Server) CAFile() string { return s.caFile }

// PID is the server's process ID.
func (s *Server) PID() int { return s.p.PID() }

// Stop stops the server gracefully.
func (s *Server) Stop() error { return s.p.Stop(10 * time.Second) }
