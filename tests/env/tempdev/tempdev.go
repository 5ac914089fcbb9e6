// Package tempdev runs the Temporal dev server (the `temporal` CLI v1.5.1) with its state in a SQLite file
// in WAL mode (5–7× faster fan-out than the default pragmas) or in memory, its Web UI unless headless, and
// the search attributes it is given: Flotilla's for `make up` and most tests, none or others where a test
// stands in for an operator's own server.
package tempdev

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/flotilla-gitops/flotilla/tests/env/proc"
)

// Options configure the server. Zero ports mean free loopback ports.
type Options struct {
	Bin, Dir string
	DBFile   string
	// InMemory keeps the state in memory instead of DBFile: it is lost when the server stops, so such a
	// server cannot Restart. The server serves every request through one SQLite connection, and with a
	// file every commit waits on the disk: with another process writing to the same disk, starts,
	// signals and terminations took 6–11× longer in a file (p99 2.3 s) than in memory (p99 0.27 s).
	InMemory     bool
	IP           string
	Port, UIPort int
	Headless     bool
	Namespace    string
	// MoreNamespaces are registered at start beside Namespace, each with SearchAttributes: a server shared
	// by tests that each take a namespace of their own.
	MoreNamespaces   []string
	SearchAttributes map[string]string
	DynamicConfig    map[string]string
	LogFile, PIDFile string
	// Detached keeps the server running after this process exits (`make up`).
	Detached bool
}

// Server is a running dev server.
type Server struct {
	o           Options
	p           *proc.Process
	metricsPort int
}

// Start starts the server and waits until its namespace answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.DBFile == "" && !o.InMemory {
		o.DBFile = filepath.Join(o.Dir, "temporal.db")
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.Dir, "temporal.log")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Server{o: o}
	mayMove := o.Port == 0 && (o.UIPort == 0 || o.Headless)
	if err := s.pickPorts(); err != nil {
		return nil, err
	}
	return s, s.start(ctx, mayMove)
}

// pickPorts picks free loopback ports for the zero ones.
func (s *Server) pickPorts() error {
	var err error
	if s.o.Port == 0 {
		if s.o.Port, err = proc.FreePort(); err != nil {
			return err
		}
	}
	if s.o.UIPort == 0 && !s.o.Headless {
		if s.o.UIPort, err = proc.FreePort(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) args() ([]string, error) {
	o := s.o
	httpPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	metricsPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	s.metricsPort = metricsPort
	args := []string{"server", "start-dev", "--ip", o.IP, "--port", strconv.Itoa(o.Port),
		"--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--namespace", o.Namespace, "--log-level", "warn"}
	if !o.InMemory {
		args = append(args, "--db-filename", o.DBFile, "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal")
	}
	for _, ns := range o.MoreNamespaces {
		args = append(args, "--namespace", ns)
	}
	if o.Headless {
		args = append(args, "--headless")
	} else {
		args = append(args, "--ui-port", strconv.Itoa(o.UIPort), "--ui-ip", o.IP)
	}
	keys := make([]string, 0, len(o.SearchAttributes))
	for k := range o.SearchAttributes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--search-attribute", k+"="+o.SearchAttributes[k])
	}
	for k, v := range o.DynamicConfig {
		args = append(args, "--dynamic-config-value", k+"="+v)
	}
	return args, nil
}

// startAttempts bounds how often a start is retried after the server died while starting. Ports are
// picked free and then handed to the server, and the dev server picks more of its own (history, matching,
// membership) the same way, so on a busy machine another process can take one in between and the server
// exits at once. A start-up panic ("connection refused") seen once in a benchmark fits that cause, though
// it was not reproduced. Whatever killed it, a new attempt on new ports costs seconds.
const startAttempts = 3

func (s *Server) start(ctx context.Context, mayMove bool) error {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var died bool
		if died, err = s.startOnce(ctx); err == nil || !died || !mayMove {
			return err
		}
		s.o.Port, s.o.UIPort = 0, 0
		if err := s.pickPorts(); err != nil {
			return err
		}
	}
	return err
}

// startOnce starts the process and waits until it is ready; died says the process exited before that.
func (s *Server) startOnce(ctx context.Context) (died bool, err error) {
	args, err := s.args()
	if err != nil {
		return false, err
	}
	p, err := proc.Start(proc.Spec{Detached: s.o.Detached, Name: "temporal dev server", Path: s.o.Bin, Args: args, LogFile: s.o.LogFile, PIDFile: s.o.PIDFile})
	if err != nil {
		return false, err
	}
	s.p = p
	// Generous: the limit only catches a server that never comes up, not a slow start on a loaded machine.
	return p.AwaitReady(ctx, 3*time.Minute, 200*time.Millisecond, s.ready)
}

// ready is true once everything the server runs answers: the frontend serves the namespace and, with the
// UI on, the UI's own API answers 200. The UI server dials the frontend when it starts; if that was before
// the frontend listened, its connection sits in gRPC back-off for seconds and every API call answers 503
// meanwhile, so a UI that merely listens is not ready.
func (s *Server) ready(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return err
	}
	if s.o.Headless {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	u := s.UIAddress() + "/api/v1/namespaces/" + url.PathEscape(s.o.Namespace) + "/workflows?pageSize=1"
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("web UI: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("web UI answers %d: %s", resp.StatusCode, body)
	}
	return nil
}

func (s *Server) ping(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := client.DialContext(cctx, client.Options{HostPort: s.Address(), Namespace: s.o.Namespace, Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WorkflowService().DescribeNamespace(cctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.o.Namespace})
	return err
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return fmt.Sprintf("%s:%d", s.o.IP, s.o.Port) }

// UIAddress is the Web UI's URL, or "" when headless.
func (s *Server) UIAddress() string {
	if s.o.Headless {
		return ""
	}
	return fmt.Sprintf("http://%s:%d", s.o.IP, s.o.UIPort)
}

// MetricsURL is the server's Prometheus endpoint (its `action` counter approximates billable actions).
func (s *Server) MetricsURL() string {
	return fmt.Sprintf("http://%s:%d/metrics", s.o.IP, s.metricsPort)
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.p.PID() }

// Exited says whether the server has exited, and how.
func (s *Server) Exited() (bool, error) {
	if s.p.Alive() {
		return false, nil
	}
	return true, s.p.Wait()
}

// Stop stops the server gracefully.
func (s *Server) Stop() error { return s.p.Stop(10 * time.Second) }

// Kill stops the server with SIGKILL.
func (s *Server) Kill() error { return s.p.Kill() }

// StartAgain starts a server that was stopped or killed on the same ports and database, and waits until
// it is ready: a crash (Kill) and its recovery, with whatever pause the caller chooses between them.
func (s *Server) StartAgain(ctx context.Context) error {
	if s.o.InMemory {
		return fmt.Errorf("a dev server with its state in memory cannot start again: it would come back empty")
	}
	if s.p != nil && s.p.Alive() {
		return fmt.Errorf("the dev server is still running (pid %d)", s.p.PID())
	}
	return s.start(ctx, false)
}

// Restart stops the server and starts it again on the same ports and database.
func (s *Server) Restart(ctx context.Context) error {
	if s.o.InMemory {
		return fmt.Errorf("a dev server with its state in memory cannot restart: it would come back empty")
	}
	if err := s.Stop(); err != nil {
		return err
	}
	return s.start(ctx, false)
}
