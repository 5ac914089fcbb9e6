package charts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

func TestResolvePicksTheVersionAsHelmDoes(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0", "1.2.0", "1.2.1", "1.3.0-rc.1", "2.0.0")
	f, _ := newFetcher(t)
	ctx := context.Background()
	for want, expect := range map[string]string{"": "2.0.0", "^1.2": "1.2.1", "~1.2.0": "1.2.1", ">=1.0 <2": "1.2.1",
		"1.0.0": "1.0.0", "1.3.0-rc.1": "1.3.0-rc.1"} {
		s := Source{Repo: srv.URL, Chart: "web", Version: want}
		lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
		require.NoError(t, err, want)
		p, ok := srv.Published(fmt.Sprintf("/web-%s.tgz", expect))
		require.True(t, ok)
		assert.Equal(t, api.ChartLock{Source: s.Key(), URL: srv.URL + p.Path, Version: expect, Digest: p.Digest,
			CredentialsOrigin: originOf(srv.URL)}, lock, want)
	}

	s := Source{Repo: srv.URL, Chart: "web", Version: "^3"}
	lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
	require.Error(t, err)
	msg := fmt.Sprintf(`helm.repo %s: chart "web": no version matches "^3" (available: 2.0.0, 1.3.0-rc.1, 1.2.1, 1.2.0, 1.0.0)`, srv.URL)
	assert.Equal(t, msg, err.Error())
	assert.Equal(t, api.ChartLock{Source: s.Key(), Error: msg}, lock)
	var se *SourceError
	require.ErrorAs(t, err, &se)

	_, err = f.Resolve(ctx, Source{Repo: srv.URL, Chart: "api"}, cr, ResolveOptions{})
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf(`helm.repo %s: chart "api": not in index.yaml (charts: web)`, srv.URL), err.Error())
}

// A chart fetched to compute its digest at Resolve is in the cache: the Loads that follow read nothing,
// in this process or in the next one.
func TestResolveThenLoadFetchesTheArchiveOnce(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0", "1.2.0")
	f, _ := newFetcher(t)
	ctx := context.Background()
	lock, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web", Version: "^1"}, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, srv.Gets("/web-1.2.0.tgz"))
	assert.Equal(t, 0, srv.Gets("/web-1.0.0.tgz"))

	for range 3 {
		c, err := f.Load(ctx, lock, cr)
		require.NoError(t, err)
		assert.Equal(t, "web", c.Name())
		assert.Equal(t, "1.2.0", c.Metadata.Version)
	}
	assert.Equal(t, 1, srv.Gets("/web-1.2.0.tgz"))

	// Another worker process, same cache directory: the disk serves it, no credentials needed.
	next := &Fetcher{Dir: f.Dir, AllowNetworks: loopback}
	c, err := next.Load(ctx, lock, nil)
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", c.Metadata.Version)
	assert.Equal(t, 1, srv.Gets("/web-1.2.0.tgz"))

	// Resolving in that process reads the archive once: a digest index.yaml claims is trusted only once the
	// repository served it to this process with these credentials (another GitRepo's index could claim it).
	for range 2 {
		_, err = next.Resolve(ctx, Source{Repo: srv.URL, Chart: "web", Version: "^1"}, cr, ResolveOptions{})
		require.NoError(t, err)
	}
	assert.Equal(t, 2, srv.Gets("/web-1.2.0.tgz"))
}

// Helm mutates the charts it installs (dependencies, values): every Load hands out a chart of its own.
func TestLoadReturnsAChartOfItsOwn(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	f, _ := newFetcher(t)
	ctx := context.Background()
	lock, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)
	a, err := f.Load(ctx, lock, cr)
	require.NoError(t, err)
	a.Values["message"] = "changed"
	a.Metadata.Version = "9.9.9"
	a.Templates = nil
	b, err := f.Load(ctx, lock, cr)
	require.NoError(t, err)
	assert.Equal(t, "hello from web", b.Values["message"])
	assert.Equal(t, "1.0.0", b.Metadata.Version)
	assert.Len(t, b.Templates, 1)
}

func TestIndexIsReadOncePerTTLAndRevalidated(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	f, clk := newFetcher(t)
	ctx := context.Background()
	s := Source{Repo: srv.URL, Chart: "web"}
	for range 5 {
		lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
		require.NoError(t, err)
		assert.Equal(t, "1.0.0", lock.Version)
	}
	assert.Equal(t, 1, srv.Gets("/index.yaml"))

	// A new version published while the index is fresh is seen once it is not.
	publish(t, srv, testchart.New("web", "1.1.0"))
	lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", lock.Version)
	clk.Advance(DefaultIndexTTL)
	lock, err = f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", lock.Version)
	assert.Equal(t, 2, srv.Gets("/index.yaml"))

	// An unchanged index is revalidated (304) and still resolves.
	clk.Advance(DefaultIndexTTL)
	lock, err = f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", lock.Version)
	assert.Equal(t, 3, srv.Gets("/index.yaml"))
}

// What the chaos soak found: a GitRepo's plans alternate between two workers, each with its own memo of
// index.yaml. The second worker's memo, still within IndexTTL, predates a version the first worker already
// resolved, and the constraint went back to the older version (one more Helm revision, then another to
// come forward again). A plan reads the index as fresh as its own start.
func TestAPlanNeverResolvesOlderThanThePlanBeforeIt(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	one, clkOne := newFetcher(t)
	two, clkTwo := newFetcher(t)
	s := Source{Repo: srv.URL, Chart: "web", Version: ">=1.0.0"}
	plan := func(f *Fetcher, clk *clock) string {
		t.Helper()
		lock, err := f.Resolve(FreshSince(context.Background(), clk.Now()), s, cr, ResolveOptions{})
		require.NoError(t, err)
		return lock.Version
	}

	require.Equal(t, "1.0.0", plan(two, clkTwo), "worker two's memo holds 1.0.0")
	publish(t, srv, testchart.New("web", "1.1.0"))
	clkOne.Advance(time.Second)
	require.Equal(t, "1.1.0", plan(one, clkOne))
	clkTwo.Advance(time.Second) // within IndexTTL of worker two's memo
	require.Equal(t, "1.1.0", plan(two, clkTwo), "the next plan, on worker two, does not go back to 1.0.0")

	// Within one plan the bundles still share one read.
	gets := srv.Gets("/index.yaml")
	clkTwo.Advance(time.Second)
	ctx := FreshSince(context.Background(), clkTwo.Now())
	for range 3 {
		_, err := two.Resolve(ctx, s, cr, ResolveOptions{})
		require.NoError(t, err)
	}
	require.Equal(t, gets+1, srv.Gets("/index.yaml"))
}

func TestConcurrentLoadsDownloadOnce(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	ctx := context.Background()
	resolver, _ := newFetcher(t)
	lock, err := resolver.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, srv.Gets("/web-1.0.0.tgz"))

	f, _ := newFetcher(t) // another worker: an empty cache
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			c, err := f.Load(ctx, lock, cr)
			if err == nil && c.Metadata.Version != "1.0.0" {
				err = fmt.Errorf("loaded version %s", c.Metadata.Version)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 2, srv.Gets("/web-1.0.0.tgz"))
}

func TestAnArchiveThatChangedIsRefused(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	ctx := context.Background()
	resolver, _ := newFetcher(t)
	lock, err := resolver.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)

	// The same version published again with other content.
	changed := testchart.New("web", "1.0.0")
	changed.Values["message"] = "other"
	changed.Raw[0].Data = []byte("message: other\n")
	p := publish(t, srv, changed)
	require.NotEqual(t, lock.Digest, p.Digest)

	f, _ := newFetcher(t)
	_, err = f.Load(ctx, lock, cr)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrChanged)
	assert.Contains(t, err.Error(), srv.URL+"/web-1.0.0.tgz")
	assert.Contains(t, err.Error(), "changed since it was resolved")
	assert.False(t, f.hasCached(lock.Digest))
	assert.False(t, f.hasCached(p.Digest), "a refused archive is not kept")

	// A cache file that does not hash to its name is not used: the archive is fetched again (here it
	// changed on the server too, so it is refused).
	good, _ := newFetcher(t)
	good.Dir = resolver.Dir
	require.NoError(t, corrupt(resolver, lock.Digest))
	_, err = good.Load(ctx, lock, cr)
	assert.ErrorIs(t, err, ErrChanged)
}

func corrupt(f *Fetcher, digest string) error {
	h, err := parseDigest(digest)
	if err != nil {
		return err
	}
	return writeFile(f.archivePath(h), []byte("corrupted"))
}

func TestACorruptCacheFileIsFetchedAgain(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	ctx := context.Background()
	resolver, _ := newFetcher(t)
	lock, err := resolver.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(t, err)
	require.NoError(t, corrupt(resolver, lock.Digest))

	f := &Fetcher{Dir: resolver.Dir, AllowNetworks: loopback}
	c, err := f.Load(ctx, lock, cr)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", c.Metadata.Version)
	assert.Equal(t, 2, srv.Gets("/web-1.0.0.tgz"))
	assert.True(t, f.hasCached(lock.Digest))
}

func TestAChartURL(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0", "1.2.0")
	f, _ := newFetcher(t)
	ctx := context.Background()
	p, _ := srv.Published("/web-1.2.0.tgz")
	s := Source{Chart: srv.URL + "/web-1.2.0.tgz"}
	lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, api.ChartLock{Source: s.Key(), URL: srv.URL + "/web-1.2.0.tgz", Version: "1.2.0", Digest: p.Digest,
		CredentialsOrigin: originOf(srv.URL)}, lock)
	c, err := f.Load(ctx, lock, cr)
	require.NoError(t, err)
	assert.Equal(t, "1.2.0", c.Metadata.Version)
	assert.Equal(t, 1, srv.Gets("/web-1.2.0.tgz"))

	// Resolving again revalidates the URL (it may name another archive tomorrow) without reading it.
	_, err = f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Gets("/web-1.2.0.tgz"))

	// A version that matches is fine; one that does not is an error.
	_, err = f.Resolve(ctx, Source{Chart: s.Chart, Version: "^1"}, cr, ResolveOptions{})
	require.NoError(t, err)
	_, err = f.Resolve(ctx, Source{Chart: s.Chart, Version: "1.0.0"}, cr, ResolveOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `helm.version "1.0.0": the archive is version 1.2.0`)
}

func TestRelativeAndAbsoluteChartURLsInTheIndex(t *testing.T) {
	for _, abs := range []bool{false, true} {
		t.Run(fmt.Sprint("absolute=", abs), func(t *testing.T) {
			srv, cr := startRepo(t, chartrepo.Options{AbsoluteURLs: abs}, "1.0.0")
			f, _ := newFetcher(t)
			lock, err := f.Resolve(context.Background(), Source{Repo: srv.URL + "/", Chart: "web"}, cr, ResolveOptions{})
			require.NoError(t, err)
			assert.Equal(t, srv.URL+"/web-1.0.0.tgz", lock.URL)
		})
	}
}

func TestFailuresNameTheURLAndTheStatus(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	ctx := context.Background()
	require.NoError(t, srv.PutFile("notachart.tgz", []byte("<html>hello</html>")))

	t.Run("wrong password", func(t *testing.T) {
		f, _ := newFetcher(t)
		bad := &creds{prefix: srv.URL, auth: &Auth{Username: testUser, Password: "wrong-" + testPassword, CABundle: srv.CAPEM}}
		_, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, bad, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("helm.repo %s: GET index.yaml: 401 Unauthorized", srv.URL), err.Error())
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, http.StatusUnauthorized, se.Status)
		assert.Equal(t, srv.URL+"/index.yaml", se.URL)
		assert.NotContains(t, fmt.Sprintf("%+v %#v", err, se), testPassword)
	})
	t.Run("no credentials", func(t *testing.T) {
		f, _ := newFetcher(t)
		anon := &creds{prefix: "nothing", auth: nil}
		_, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, anon, ResolveOptions{})
		require.Error(t, err) // an unknown CA before any 401
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	})
	t.Run("404", func(t *testing.T) {
		f, _ := newFetcher(t)
		_, err := f.Resolve(ctx, Source{Chart: srv.URL + "/web-9.9.9.tgz"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("helm.chart %s/web-9.9.9.tgz: GET: 404 Not Found", srv.URL), err.Error())
		_, err = f.Resolve(ctx, Source{Repo: srv.URL + "/nothing", Chart: "web"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("helm.repo %s/nothing: GET index.yaml: 404 Not Found", srv.URL), err.Error())
	})
	t.Run("not a chart", func(t *testing.T) {
		f, _ := newFetcher(t)
		_, err := f.Resolve(ctx, Source{Chart: srv.URL + "/notachart.tgz"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("helm.chart %s/notachart.tgz: GET: not a chart archive", srv.URL))
	})
	t.Run("500", func(t *testing.T) {
		f, _ := newFetcher(t)
		srv.Fail(http.StatusInternalServerError)
		defer srv.Fail(0)
		_, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("helm.repo %s: GET index.yaml: 500 Internal Server Error", srv.URL), err.Error())
	})
	t.Run("down", func(t *testing.T) {
		f, _ := newFetcher(t)
		require.NoError(t, srv.Down())
		defer func() { require.NoError(t, srv.Up()) }()
		_, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("helm.repo %s: GET index.yaml: dial tcp", srv.URL))
		assert.Contains(t, err.Error(), "connection refused")
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 0, se.Status)
	})
	t.Run("index too big", func(t *testing.T) {
		f, _ := newFetcher(t)
		f.MaxIndexBytes = 64
		_, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf("helm.repo %s: GET index.yaml: index.yaml is larger than 64 bytes, the most Flotilla reads", srv.URL), err.Error())
	})
	t.Run("archive too big", func(t *testing.T) {
		f, _ := newFetcher(t)
		f.MaxArchiveBytes = 1 << 20
		require.NoError(t, srv.PutFile("big.tgz", make([]byte, 1<<20+1)))
		_, err := f.Resolve(ctx, Source{Chart: srv.URL + "/big.tgz"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the archive is larger than 1 MiB")
	})
	t.Run("canceled", func(t *testing.T) {
		f, _ := newFetcher(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := f.Resolve(cctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
		assert.True(t, errors.Is(err, context.Canceled), "%v", err)
		// The requests a caller gave up on go on for the callers that share them: the next one joins
		// them (and the test's directory is not removed under them).
		_, err = f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
		require.NoError(t, err)
	})
}

func TestTLSTrust(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{}, "1.0.0")
	other, _ := startRepo(t, chartrepo.Options{}, "1.0.0")
	ctx := context.Background()
	s := Source{Repo: srv.URL, Chart: "web"}
	for name, c := range map[string]struct {
		auth *Auth
		err  string
	}{
		"CA bundle":      {auth: &Auth{Username: testUser, Password: testPassword, CABundle: srv.CAPEM}},
		"insecure":       {auth: &Auth{Username: testUser, Password: testPassword, InsecureSkipTLSVerify: true}},
		"no CA":          {auth: &Auth{Username: testUser, Password: testPassword}, err: "certificate signed by unknown authority"},
		"another CA":     {auth: &Auth{Username: testUser, Password: testPassword, CABundle: other.CAPEM}, err: "certificate signed by unknown authority"},
		"not a CA (PEM)": {auth: &Auth{Username: testUser, Password: testPassword, CABundle: []byte("nope")}, err: "the CA bundle holds no PEM certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := newFetcher(t)
			_, err := f.Resolve(ctx, s, &creds{prefix: srv.URL, auth: c.auth}, ResolveOptions{})
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
			assert.True(t, strings.HasPrefix(err.Error(), "helm.repo "+srv.URL), err.Error())
			assert.NotContains(t, err.Error(), testPassword)
		})
	}
	_ = cr
}

// A lock that did not resolve fails the render with the plan's own message, and reads nothing.
func TestLoadOfAFailedLock(t *testing.T) {
	f, _ := newFetcher(t)
	msg := "helm.repo https://127.0.0.1:1/charts: GET index.yaml: 401 Unauthorized"
	_, err := f.Load(context.Background(), api.ChartLock{Source: "repo=https://127.0.0.1:1/charts chart=web version=", Error: msg}, nil)
	require.Error(t, err)
	assert.Equal(t, msg, err.Error())
	var se *SourceError
	assert.ErrorAs(t, err, &se)
}
