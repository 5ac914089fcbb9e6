// Package registry runs the CNCF distribution registry (bin/registry, built by `make tools`) on loopback
// with TLS and htpasswd basic auth, its storage on the local disk, for the OCI chart tests, the benchmark
// and `make up`. Charts are pushed with the Helm SDK's own registry client, as `helm push` does.
package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/chart"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// Options configure a registry.
type Options struct {
	// Bin is the registry binary (Bin() when empty).
	Bin string
	// Dir holds the configuration, htpasswd, certificates, storage and log. Required.
	Dir string
	// Username and Password are the one account of the registry's htpasswd.
	Username, Password string
	// Port to listen on, on 127.0.0.1; a free one when zero.
	Port             int
	LogFile, PIDFile string
	// Detached keeps the registry running after this process exits (`make up`).
	Detached bool
}

// Registry is a running registry.
type Registry struct {
	// Host is the registry's address, 127.0.0.1:port: charts are oci://<Host>/<repository>.
	Host string
	// CAPEM is the certificate authority that signed the registry's certificate.
	CAPEM              []byte
	Username, Password string

	o Options
	p *proc.Process
}

// Bin is bin/registry of the checkout, or of FLOTILLA_BIN.
func Bin() string {
	if d := os.Getenv("FLOTILLA_BIN"); d != "" {
		return filepath.Join(d, "registry")
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "bin", "registry")
}

// Start starts the registry and returns once it answers /v2/ (with 401: it wants credentials).
func Start(ctx context.Context, o Options) (*Registry, error) {
	if o.Dir == "" {
		return nil, errors.New("registry: Options.Dir is required")
	}
	if o.Bin == "" {
		o.Bin = Bin()
	}
	if _, err := os.Stat(o.Bin); err != nil {
		return nil, fmt.Errorf("registry binary %s missing: run `make tools`", o.Bin)
	}
	if o.Username == "" || o.Password == "" {
		return nil, errors.New("registry: Options.Username and Options.Password are required")
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.Dir, "registry.log")
	}
	if o.Port == 0 {
		port, err := proc.FreePort()
		if err != nil {
			return nil, err
		}
		o.Port = port
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	pki, err := testpki.New()
	if err != nil {
		return nil, err
	}
	_, cert, key, err := pki.WriteFiles(o.Dir)
	if err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	htpasswd := filepath.Join(o.Dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(o.Username+":"+string(hash)+"\n"), 0o600); err != nil {
		return nil, err
	}
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	host := "127.0.0.1:" + strconv.Itoa(o.Port)
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
  secret: %q
  tls:
    certificate: %q
    key: %q
auth:
  htpasswd:
    realm: flotilla-test-registry
    path: %q
`, filepath.Join(o.Dir, "storage"), host, hex.EncodeToString(secret), cert, key, htpasswd)
	configFile := filepath.Join(o.Dir, "config.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "registry", Path: o.Bin, Args: []string{"serve", configFile}, Dir: o.Dir,
		// Without it the registry exports traces to localhost:4318 and logs every failure to do so.
		Env:     []string{"OTEL_TRACES_EXPORTER=none"},
		LogFile: o.LogFile, PIDFile: o.PIDFile, Detached: o.Detached})
	if err != nil {
		return nil, err
	}
	r := &Registry{Host: host, CAPEM: pki.CAPEM, Username: o.Username, Password: o.Password, o: o, p: p}
	if err := r.waitReady(ctx); err != nil {
		_ = p.Kill()
		return nil, err
	}
	return r, nil
}

func (r *Registry) waitReady(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: r.CAPEM}).Pool()}},
		Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get("https://" + r.Host + "/v2/")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		select {
		case <-r.p.Done():
			return fmt.Errorf("registry exited before it answered on %s:\n%s", r.Host, proc.Tail(r.o.LogFile, 20))
		case <-ctx.Done():
			return fmt.Errorf("registry did not answer on %s: %w\n%s", r.Host, ctx.Err(), proc.Tail(r.o.LogFile, 20))
		case <-tick.C:
		}
	}
}

// Stop stops the registry by its PID.
func (r *Registry) Stop() error { return r.p.Stop(10 * time.Second) }

// PID is the registry's process ID.
func (r *Registry) PID() int { return r.p.PID() }

// Pushed is a chart pushed to the registry.
type Pushed struct {
	// Ref is the chart's reference, 127.0.0.1:port/repository/name:version.
	Ref string
	// Digest is the chart layer's "sha256:<hex>", the archive's digest.
	Digest string
	// Manifest is the manifest's digest.
	Manifest string
}

// Push packages c and pushes it to oci://<Host>/<repository>/<name>:<version>, as `helm push` does.
func (r *Registry) Push(c *chart.Chart, repository string) (Pushed, error) {
	data, err := testchart.Package(c)
	if err != nil {
		return Pushed{}, err
	}
	return r.PushArchive(data, fmt.Sprintf("%s/%s/%s:%s", r.Host, repository, c.Name(), c.Metadata.Version))
}

// PushArchive pushes a packaged chart to ref (host/repository/name:tag).
func (r *Registry) PushArchive(data []byte, ref string) (Pushed, error) {
	dir, err := os.MkdirTemp("", "registry-client")
	if err != nil {
		return Pushed{}, err
	}
	defer os.RemoveAll(dir)
	client, err := helmregistry.NewClient(
		helmregistry.ClientOptBasicAuth(r.Username, r.Password),
		helmregistry.ClientOptHTTPClient(&http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: r.CAPEM}).Pool()}}}),
		// Never Login: nothing is written to a credentials file, and this one is thrown away.
		helmregistry.ClientOptCredentialsFile(filepath.Join(dir, "config.json")),
		helmregistry.ClientOptWriter(io.Discard),
	)
	if err != nil {
		return Pushed{}, err
	}
	res, err := client.Push(bytes.Clone(data), ref)
	if err != nil {
		return Pushed{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return Pushed{Ref: res.Ref, Digest: res.Chart.Digest, Manifest: res.Manifest.Digest}, nil
}

func splitHostPort(hostport string) (string, int, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	return host, n, err
}
