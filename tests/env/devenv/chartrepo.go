package devenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

const (
	// ExampleChartRepoURL is the chart repository examples/repo/hello names. `make up` listens there, or,
	// when the port is taken, elsewhere, and then writes its URL into the example's copy.
	ExampleChartRepoURL = "https://127.0.0.1:8280"
	// ChartRepoSecret names the repository's account and CA in the worker's credentials: the example
	// GitRepo's helmSecretName.
	ChartRepoSecret = "charts"
	// ExampleChart is the chart the example deploys from the repository.
	ExampleChart = "hello"
)

// ChartRepo is a chart repository laid out in a folder: charts/ holds what it serves (archives and
// index.yaml), ca.crt, server.crt and server.key its TLS, repo.yaml its URL and account. Whoever serves
// the folder again keeps the CA, so the worker that trusts it need not change.
type ChartRepo struct {
	Dir      string `json:"-"`
	URL      string `json:"url"`
	Username string `json:"username"`
	Password string `json:"password"`
	CAPEM    []byte `json:"-"`
}

// PrepareChartRepo lays out a new repository in dir for https://addr, with a fresh CA and password.
func PrepareChartRepo(dir, addr string) (*ChartRepo, error) {
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o700); err != nil {
		return nil, err
	}
	pki, err := testpki.New()
	if err != nil {
		return nil, err
	}
	if _, _, _, err := pki.WriteFiles(dir); err != nil {
		return nil, err
	}
	secret := make([]byte, 12)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	r := &ChartRepo{Dir: dir, URL: "https://" + addr, Username: "flotilla", Password: hex.EncodeToString(secret), CAPEM: pki.CAPEM}
	data, err := yaml.Marshal(r)
	if err != nil {
		return nil, err
	}
	return r, os.WriteFile(filepath.Join(dir, "repo.yaml"), data, 0o600)
}

// LoadChartRepo reads a repository PrepareChartRepo laid out.
func LoadChartRepo(dir string) (*ChartRepo, error) {
	data, err := os.ReadFile(filepath.Join(dir, "repo.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no chart repository in %s: `make up` starts one", dir)
	}
	if err != nil {
		return nil, err
	}
	r := &ChartRepo{Dir: dir}
	if err := yaml.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "repo.yaml"), err)
	}
	if r.CAPEM, err = os.ReadFile(filepath.Join(dir, "ca.crt")); err != nil {
		return nil, err
	}
	return r, nil
}

// Publish packages a small chart (one ConfigMap holding its version and the value `message`) with the
// Helm SDK into the repository and re-indexes it; a running server serves it at the next request.
func (r *ChartRepo) Publish(name, version string) (chartrepo.Published, error) {
	return chartrepo.PublishDir(filepath.Join(r.Dir, "charts"), testchart.New(name, version))
}

// CredentialsYAML is a worker's --credentials file holding the repository's account and CA as
// ChartRepoSecret.
func (r *ChartRepo) CredentialsYAML() ([]byte, error) {
	return yaml.Marshal(map[string]map[string]string{
		ChartRepoSecret: {"username": r.Username, "password": r.Password, "caBundle": string(r.CAPEM)},
	})
}

// Serve serves the repository until ctx ends: the body of `flotilla-dev chart-repo serve`.
func (r *ChartRepo) Serve(ctx context.Context, out io.Writer) error {
	pki, err := testpki.Load(r.Dir)
	if err != nil {
		return err
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return err
	}
	srv, err := chartrepo.Start(chartrepo.Options{Dir: filepath.Join(r.Dir, "charts"), Addr: u.Host,
		Username: r.Username, Password: r.Password, PKI: pki})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "serving %s from %s\n", srv.URL, filepath.Join(r.Dir, "charts"))
	<-ctx.Done()
	return srv.Close()
}

// WaitServing returns once the repository answers index.yaml to its account, over TLS it verifies with
// its CA, or with why not when ctx ends or died is closed first (a server that could not start).
func (r *ChartRepo) WaitServing(ctx context.Context, died <-chan struct{}) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: r.CAPEM}).Pool(), MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("no answer yet")
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/index.yaml", nil)
		if err != nil {
			return err
		}
		req.SetBasicAuth(r.Username, r.Password)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET index.yaml: %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("chart repository %s not serving: %w (last: %v)", r.URL, ctx.Err(), last)
		case <-died:
			return fmt.Errorf("chart repository %s exited before serving (last: %v)", r.URL, last)
		case <-tick.C:
		}
	}
}

// ChartRepoOptions start a chart repository as its own process.
type ChartRepoOptions struct {
	// Bin is the flotilla-dev binary, which serves it (`flotilla-dev chart-repo serve`).
	Bin string
	// Dir is laid out anew by PrepareChartRepo.
	Dir string
	// Addr is host:port to listen on.
	Addr             string
	LogFile, PIDFile string
	// Detached keeps it running after this process exits (`make up`).
	Detached bool
}

// StartChartRepo lays out a repository and serves it from its own process, returning once it answers.
func StartChartRepo(ctx context.Context, o ChartRepoOptions) (*ChartRepo, *proc.Process, error) {
	r, err := PrepareChartRepo(o.Dir, o.Addr)
	if err != nil {
		return nil, nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "chart repository", Path: o.Bin, Args: []string{"chart-repo", "serve", "--dir", o.Dir},
		LogFile: o.LogFile, PIDFile: o.PIDFile, Detached: o.Detached})
	if err != nil {
		return nil, p, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.WaitServing(wctx, p.Done()); err != nil {
		return nil, p, fmt.Errorf("%w; see %s", err, o.LogFile)
	}
	return r, p, nil
}

// PointExampleAtChartRepo rewrites ExampleChartRepoURL in the fleet.yaml files of a copy of
// examples/repo to url, and reports whether it changed any.
func PointExampleAtChartRepo(dir, url string) (bool, error) {
	changed := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "fleet.yaml" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), ExampleChartRepoURL) || url == ExampleChartRepoURL {
			return nil
		}
		changed = true
		return os.WriteFile(p, []byte(strings.ReplaceAll(string(data), ExampleChartRepoURL, url)), 0o644)
	})
	return changed, err
}
