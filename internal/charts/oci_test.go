package charts

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/needs"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/registry"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// startRegistry starts the distribution registry with basic auth and TLS, stopped at cleanup.
func startRegistry(t *testing.T) (*registry.Registry, *creds) {
	t.Helper()
	needs.Binaries(t, "registry")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, err := registry.Start(ctx, registry.Options{Dir: t.TempDir(), Username: testUser, Password: testPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Stop() })
	return reg, &creds{prefix: "oci://" + reg.Host, auth: &Auth{Username: testUser, Password: testPassword, CABundle: reg.CAPEM}}
}

func TestOCI(t *testing.T) {
	reg, cr := startRegistry(t)
	ctx := context.Background()
	pushed := map[string]registry.Pushed{}
	for _, v := range []string{"1.0.0", "1.2.0", "1.2.1", "1.3.0+build.5", "2.0.0-rc.1"} {
		p, err := reg.Push(testchart.New("web", v), "charts")
		require.NoError(t, err)
		pushed[v] = p
	}
	base := "oci://" + reg.Host + "/charts"

	t.Run("sources and versions", func(t *testing.T) {
		f, _ := newFetcher(t)
		for _, c := range []struct {
			s       Source
			version string
		}{
			{Source{Repo: base, Chart: "web"}, "1.3.0+build.5"},
			{Source{Repo: base + "/web"}, "1.3.0+build.5"},
			{Source{Repo: base + "/web", Chart: "web", Version: "~1.2.0"}, "1.2.1"},
			{Source{Chart: base + "/web", Version: "1.0.0"}, "1.0.0"},
			{Source{Chart: base + "/web", Version: ">=1.0 <1.2"}, "1.0.0"},
			{Source{Chart: base + "/web", Version: "2.0.0-rc.1"}, "2.0.0-rc.1"},
		} {
			lock, err := f.Resolve(ctx, c.s, cr, ResolveOptions{})
			require.NoError(t, err, "%+v", c.s)
			tag := map[string]string{"1.3.0+build.5": "1.3.0_build.5"}[c.version]
			if tag == "" {
				tag = c.version
			}
			assert.Equal(t, api.ChartLock{Source: c.s.Key(), URL: base + "/web:" + tag, Version: c.version,
				Digest: pushed[c.version].Digest, CredentialsOrigin: originOf(base)}, lock, "%+v", c.s)
			ch, err := f.Load(ctx, lock, cr)
			require.NoError(t, err)
			assert.Equal(t, c.version, ch.Metadata.Version)
		}

		_, err := f.Resolve(ctx, Source{Repo: base, Chart: "web", Version: "^9"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Equal(t, fmt.Sprintf(`helm.repo %s, helm.chart web: no version matches "^9" (available: 2.0.0-rc.1, 1.3.0+build.5, 1.2.1, 1.2.0, 1.0.0)`, base), err.Error())
	})

	t.Run("errors", func(t *testing.T) {
		f, _ := newFetcher(t)
		bad := &creds{prefix: "oci://", auth: &Auth{Username: testUser, Password: "wrong-" + testPassword, CABundle: reg.CAPEM}}
		_, err := f.Resolve(ctx, Source{Repo: base, Chart: "web"}, bad, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("helm.repo %s, helm.chart web: list tags: 401 Unauthorized (authentication required)", base))
		assert.NotContains(t, err.Error(), testPassword)
		var se *SourceError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, http.StatusUnauthorized, se.Status)
		assert.Equal(t, base+"/web", se.URL)

		anon := &creds{prefix: "oci://", auth: &Auth{CABundle: reg.CAPEM}}
		_, err = f.Resolve(ctx, Source{Repo: base, Chart: "web"}, anon, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "401 Unauthorized")

		_, err = f.Resolve(ctx, Source{Repo: base, Chart: "api"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("helm.repo %s, helm.chart api: list tags: 404 Not Found (repository name not known to registry)", base))
		require.ErrorAs(t, err, &se)
		assert.Equal(t, http.StatusNotFound, se.Status)

		untrusted := &creds{prefix: "oci://", auth: &Auth{Username: testUser, Password: testPassword}}
		_, err = f.Resolve(ctx, Source{Repo: base, Chart: "web"}, untrusted, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")

		insecure := &creds{prefix: "oci://", auth: &Auth{Username: testUser, Password: testPassword, InsecureSkipTLSVerify: true}}
		_, err = f.Resolve(ctx, Source{Repo: base, Chart: "web"}, insecure, ResolveOptions{})
		require.NoError(t, err)
	})

	// Stopped last: a chart in the cache loads without the registry; a chart that is not fails naming it.
	t.Run("registry down", func(t *testing.T) {
		f, _ := newFetcher(t)
		lock, err := f.Resolve(ctx, Source{Repo: base, Chart: "web", Version: "1.2.0"}, cr, ResolveOptions{})
		require.NoError(t, err)
		other := api.ChartLock{Source: "other", URL: base + "/web:1.0.0", Version: "1.0.0", Digest: pushed["1.0.0"].Digest}
		require.NoError(t, reg.Stop())

		c, err := (&Fetcher{Dir: f.Dir, AllowNetworks: loopback}).Load(ctx, lock, cr)
		require.NoError(t, err)
		assert.Equal(t, "1.2.0", c.Metadata.Version)

		// A Fetcher of its own: one that still holds a connection to the stopped registry would see it
		// closed (EOF) rather than refused.
		_, err = (&Fetcher{Dir: t.TempDir(), AllowNetworks: loopback}).Load(ctx, other, cr)
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("chart %s/web:1.0.0: GET blob %s: ", base, pushed["1.0.0"].Digest))
		assert.Contains(t, err.Error(), "connection refused")

		f2, _ := newFetcher(t)
		_, err = f2.Resolve(ctx, Source{Repo: base + "/web"}, cr, ResolveOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("helm.repo %s/web: list tags: dial tcp %s: connect: connection refused", base, reg.Host))
	})
}
