package charts

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// spy is a plain-http chart host of someone else's: it serves the files of a folder and records every
// Authorization header it is sent.
type spy struct {
	*httptest.Server
	dir  string
	mu   sync.Mutex
	auth []string
	gets int
}

func startSpy(t *testing.T) *spy {
	t.Helper()
	s := &spy{dir: t.TempDir()}
	files := http.FileServer(http.Dir(s.dir))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.gets++
		if h := r.Header.Get("Authorization"); h != "" {
			s.auth = append(s.auth, h)
		}
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *spy) authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func (s *spy) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets
}

// publishOn packages c into the spy's folder and indexes it there.
func (s *spy) publish(t *testing.T, c *chart.Chart) chartrepo.Published {
	t.Helper()
	p, err := chartrepo.PublishDir(s.dir, c)
	require.NoError(t, err)
	return p
}

// A private repository's index.yaml that lists an archive on another host: the archive is fetched there
// without the repository's password, at resolve and at every later load.
func TestAnArchiveOnAnotherHostNeverGetsTheRepositorysCredentials(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{})
	cr.prefix = "" // a GitRepo without helmRepoURLRegex: its helmSecretName is offered for every URL
	elsewhere := startSpy(t)
	p := elsewhere.publish(t, testchart.New("web", "1.0.0"))
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - apiVersion: v2\n    name: web\n    version: 1.0.0\n    digest: %s\n    urls:\n    - %s%s\n",
		p.Digest[len("sha256:"):], elsewhere.URL, p.Path)
	require.NoError(t, srv.PutFile("index.yaml", []byte(index)))

	f, _ := newFetcher(t)
	ctx := context.Background()
	lock, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, originOf(srv.URL), lock.CredentialsOrigin)
	_, err = (&Fetcher{Dir: t.TempDir(), AllowNetworks: loopback}).Load(ctx, lock, cr)
	require.NoError(t, err)
	assert.Equal(t, 2, elsewhere.requests(), "resolved and loaded from the other host")
	assert.Empty(t, elsewhere.authorizations(), "the other host never saw the repository's credentials")
}

// A third-party chart's Chart.yaml names a dependency repository of its own choosing: the GitRepo's
// credentials, given for the chart's repository, never go there.
func TestAThirdPartyChartsDependencyRepositoryNeverGetsTheCredentials(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{})
	cr.prefix = "" // a GitRepo without helmRepoURLRegex: its helmSecretName is offered for every URL
	elsewhere := startSpy(t)
	elsewhere.publish(t, testchart.New("redis", "17.0.0"))
	publish(t, srv, testchart.New("app", "1.0.0", &chart.Dependency{Name: "redis", Version: "^17", Repository: elsewhere.URL}))

	f, _ := newFetcher(t)
	ctx := context.Background()
	lock, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "app"}, cr, ResolveOptions{})
	require.NoError(t, err)
	require.Len(t, lock.Dependencies, 1)
	assert.Empty(t, lock.Dependencies[0].CredentialsOrigin, "no credentials for the dependency, now or when it is loaded")
	c, err := (&Fetcher{Dir: t.TempDir(), AllowNetworks: loopback}).Load(ctx, lock, cr)
	require.NoError(t, err)
	require.Len(t, c.Dependencies(), 1)
	assert.GreaterOrEqual(t, elsewhere.requests(), 3, "index.yaml and the archive, then the archive again")
	assert.Empty(t, elsewhere.authorizations())
}

// A repository that redirects an archive to another scheme, host or port: the redirect is followed
// without the Authorization header.
func TestARedirectToAnotherOriginDropsTheCredentials(t *testing.T) {
	elsewhere := startSpy(t)
	p := elsewhere.publish(t, testchart.New("web", "1.2.0"))
	var sawAuth bool
	repo := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		sawAuth = ok && user == testUser && pass == testPassword
		http.Redirect(w, r, elsewhere.URL+p.Path, http.StatusFound)
	}))
	t.Cleanup(repo.Close)
	cr := &creds{prefix: "", auth: &Auth{Username: testUser, Password: testPassword, CABundle: pemOf(t, repo)}}

	f, _ := newFetcher(t)
	lock, err := f.Resolve(context.Background(), Source{Chart: repo.URL + "/web-1.2.0.tgz"}, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", lock.Version)
	assert.True(t, sawAuth, "the repository itself was sent its credentials")
	assert.Equal(t, 1, elsewhere.requests())
	assert.Empty(t, elsewhere.authorizations(), "https to http, another port: dropped")
}

// Credentials are never sent over plain http://, where anyone on the way reads them; the refusal says so.
func TestCredentialsAreRefusedOverPlainHTTP(t *testing.T) {
	plain := startSpy(t)
	plain.publish(t, testchart.New("web", "1.0.0"))
	cr := &creds{prefix: plain.URL, auth: &Auth{Username: testUser, Password: testPassword}}
	f, _ := newFetcher(t)
	_, err := f.Resolve(context.Background(), Source{Repo: plain.URL, Chart: "web"}, cr, ResolveOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "credentials are never sent over plain http://")
	assert.Contains(t, err.Error(), plain.URL)
	assert.Equal(t, 0, plain.requests())

	// Anonymous, the same repository is fine.
	_, err = f.Resolve(context.Background(), Source{Repo: plain.URL, Chart: "web"}, nil, ResolveOptions{})
	require.NoError(t, err)
}

// One GitRepo's private chart is in the worker's cache. Another GitRepo's index.yaml that merely claims
// its digest does not get it: the archive must come from that index's own URL.
func TestAnIndexClaimingAnotherTenantsDigestDoesNotGetItFromTheCache(t *testing.T) {
	private, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	f, _ := newFetcher(t)
	ctx := context.Background()
	theirs, err := f.Resolve(ctx, Source{Repo: private.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)

	attacker := startSpy(t)
	index := fmt.Sprintf("apiVersion: v1\nentries:\n  web:\n  - apiVersion: v2\n    name: web\n    version: 1.0.0\n    digest: %s\n    urls:\n    - %s/web-1.0.0.tgz\n",
		theirs.Digest[len("sha256:"):], attacker.URL)
	require.NoError(t, os.WriteFile(filepath.Join(attacker.dir, "index.yaml"), []byte(index), 0o644))
	_, err = f.Resolve(ctx, Source{Repo: attacker.URL, Chart: "web"}, nil, ResolveOptions{})
	require.Error(t, err, "the attacker's repository does not hold the archive it claims")
	assert.Contains(t, err.Error(), "404")
}

// Credentials whose owner passes them everywhere (helmPassCredentials, Helm's --pass-credentials) reach
// another https origin; plain http still never gets them (TestCredentialsAreRefusedOverPlainHTTP).
func TestPassedCredentialsReachEveryOrigin(t *testing.T) {
	auth := &Auth{Username: testUser, Password: testPassword}
	bound := boundTo(&creds{auth: auth}, "https://charts.example:443")
	a, err := bound.ForURL("https://cdn.example/web-1.0.0.tgz")
	require.NoError(t, err)
	assert.False(t, a.hasSecret())
	a, err = bound.ForURL("https://charts.example/web-1.0.0.tgz")
	require.NoError(t, err)
	assert.True(t, a.hasSecret(), "the repository's own origin, the port made explicit")

	passing := boundTo(&passingCreds{creds{auth: auth}}, "https://charts.example:443")
	a, err = passing.ForURL("https://cdn.example/web-1.0.0.tgz")
	require.NoError(t, err)
	assert.True(t, a.hasSecret())
	assert.Equal(t, "https://charts.example:443", originOf("HTTPS://Charts.Example/x"))
	assert.Equal(t, "http://h:8080", originOf("http://h:8080/x"))
}

type passingCreds struct{ creds }

func (*passingCreds) PassCredentials() bool { return true }

func pemOf(t *testing.T, s *httptest.Server) []byte {
	t.Helper()
	return pemCert(s.Certificate().Raw)
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
