package charts

import (
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

const (
	testUser     = "fleet"
	testPassword = "s3cr3t-Pa55word"
)

// creds answers with auth for every URL under prefix, and records what it was asked.
type creds struct {
	prefix string
	auth   *Auth
	mu     sync.Mutex
	asked  []string
}

func (c *creds) ForURL(url string) (*Auth, error) {
	c.mu.Lock()
	c.asked = append(c.asked, url)
	c.mu.Unlock()
	if strings.HasPrefix(url, c.prefix) {
		return c.auth, nil
	}
	return nil, nil
}

// startRepo starts an HTTPS chart repository with basic auth holding web at versions.
func startRepo(t *testing.T, o chartrepo.Options, versions ...string) (*chartrepo.Server, *creds) {
	t.Helper()
	if o.Username == "" {
		o.Username, o.Password = testUser, testPassword
	}
	srv, err := chartrepo.Start(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	for _, v := range versions {
		publish(t, srv, testchart.New("web", v))
	}
	return srv, &creds{prefix: srv.URL, auth: &Auth{Username: o.Username, Password: o.Password, CABundle: srv.CAPEM}}
}

func publish(t *testing.T, srv *chartrepo.Server, c *chart.Chart) chartrepo.Published {
	t.Helper()
	p, err := srv.Publish(c)
	require.NoError(t, err)
	return p
}

// clock is a settable time for the Fetcher's memos.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newFetcher(t *testing.T) (*Fetcher, *clock) {
	t.Helper()
	clk := &clock{now: time.Unix(1_800_000_000, 0)}
	return &Fetcher{Dir: t.TempDir(), now: clk.Now, AllowNetworks: loopback}, clk
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o644) }

// loopback is what the tests' servers listen on, which a Fetcher dials only when allowed.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
