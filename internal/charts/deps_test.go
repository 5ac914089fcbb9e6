package charts

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// install renders c as `helm install --dry-run` does, which applies alias, condition, tags and
// import-values to the subcharts; it returns the ConfigMaps' names.
func install(t *testing.T, c *chart.Chart, values map[string]any) string {
	t.Helper()
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly, inst.DryRun, inst.ReleaseName, inst.Namespace = true, true, "rel", "default"
	rel, err := inst.Run(c, values)
	require.NoError(t, err)
	return rel.Manifest
}

// both carries the chart repository's and the registry's credentials.
type both []*creds

func (b both) ForURL(url string) (*Auth, error) {
	for _, c := range b {
		if a, _ := c.ForURL(url); a != nil {
			return a, nil
		}
	}
	return nil, nil
}

// A chart of the repository (a folder the render already loaded) with dependencies from a Helm
// repository, an OCI registry, a folder, and one vendored in charts/.
func TestDependenciesOfAFolderChart(t *testing.T) {
	srv, repoCreds := startRepo(t, chartrepo.Options{})
	for _, v := range []string{"17.0.0", "17.3.0", "18.0.0"} {
		publish(t, srv, testchart.New("redis", v))
	}
	reg, regCreds := startRegistry(t)
	for _, v := range []string{"2.0.0", "2.0.5", "2.1.0"} {
		_, err := reg.Push(testchart.New("db", v), "charts")
		require.NoError(t, err)
	}
	cr := both{repoCreds, regCreds}
	ctx := context.Background()

	web := testchart.New("web", "1.0.0",
		&chart.Dependency{Name: "redis", Version: "^17", Repository: srv.URL, Alias: "cache", Condition: "cache.enabled"},
		&chart.Dependency{Name: "redis", Version: "^18", Repository: srv.URL + "/", Alias: "queue"},
		&chart.Dependency{Name: "db", Version: "~2.0", Repository: "oci://" + reg.Host + "/charts"},
		&chart.Dependency{Name: "lib", Version: "0.1.x", Repository: "file://../lib"},
		&chart.Dependency{Name: "common", Version: "1.x", Repository: "https://nowhere.invalid/charts"},
	)
	web.AddDependency(testchart.New("common", "1.0.0")) // vendored: never looked up
	// Chart.lock pins redis 17.0.0 (17.3.0 is newer): it still satisfies ^17, so it wins.
	web.Lock = &chart.Lock{Dependencies: []*chart.Dependency{{Name: "redis", Version: "17.0.0", Repository: srv.URL}}}
	var asked []string
	fileDep := func(path string) (*chart.Chart, error) {
		asked = append(asked, path)
		if path != "../lib" {
			return nil, fmt.Errorf("no chart at %s", path)
		}
		return testchart.New("lib", "0.1.2"), nil
	}

	f, _ := newFetcher(t)
	locks, err := f.LockDependencies(ctx, web, cr, fileDep)
	require.NoError(t, err)
	redis17, _ := srv.Published("/redis-17.0.0.tgz")
	redis18, _ := srv.Published("/redis-18.0.0.tgz")
	require.Len(t, locks, 4)
	assert.Equal(t, api.ChartLock{Source: "cache", URL: srv.URL + "/redis-17.0.0.tgz", Version: "17.0.0", Digest: redis17.Digest,
		CredentialsOrigin: originOf(srv.URL)}, locks[0])
	assert.Equal(t, api.ChartLock{Source: "queue", URL: srv.URL + "/redis-18.0.0.tgz", Version: "18.0.0", Digest: redis18.Digest,
		CredentialsOrigin: originOf(srv.URL)}, locks[1])
	assert.Equal(t, "db", locks[2].Source)
	assert.Equal(t, "oci://"+reg.Host+"/charts/db:2.0.5", locks[2].URL)
	assert.Equal(t, api.ChartLock{Source: "lib", URL: "file://../lib", Version: "0.1.2"}, locks[3])
	assert.Equal(t, []string{"../lib"}, asked)

	// Another worker renders it: the archives come once, then from its cache.
	render := func(f *Fetcher, values map[string]any) string {
		var deps []*chart.Dependency // Helm's install renames them to their aliases: copies for each
		for _, d := range web.Metadata.Dependencies {
			copied := *d
			deps = append(deps, &copied)
		}
		c := testchart.New("web", "1.0.0", deps...)
		c.AddDependency(testchart.New("common", "1.0.0"))
		require.NoError(t, f.AddDependencies(ctx, c, locks, cr, fileDep))
		return install(t, c, values)
	}
	g, _ := newFetcher(t)
	manifest := render(g, nil)
	for _, name := range []string{"rel-web", "rel-cache", "rel-queue", "rel-db", "rel-lib", "rel-common"} {
		assert.Contains(t, manifest, "name: "+name+"\n")
	}
	assert.Contains(t, manifest, `version: "17.0.0"`)
	assert.Contains(t, manifest, `version: "18.0.0"`)
	assert.Contains(t, manifest, `version: "2.0.5"`)
	manifest = render(g, map[string]any{"cache": map[string]any{"enabled": false}})
	assert.NotContains(t, manifest, "rel-cache")
	assert.Contains(t, manifest, "rel-queue")
	assert.Equal(t, 2, srv.Gets("/redis-17.0.0.tgz"), "once to lock it, once for the other worker")
	assert.Equal(t, 0, srv.Gets("/redis-17.3.0.tgz"))

	// A stale Chart.lock (17.0.0 does not satisfy ^17.1) gives way to Chart.yaml.
	web.Metadata.Dependencies[0].Version = "^17.1"
	locks, err = f.LockDependencies(ctx, web, cr, fileDep)
	require.NoError(t, err)
	assert.Equal(t, "17.3.0", locks[0].Version)
}

func TestMissingDependencies(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{})
	publish(t, srv, testchart.New("redis", "18.0.0"))
	ctx := context.Background()
	f, _ := newFetcher(t)
	for _, c := range []struct {
		dep *chart.Dependency
		msg string
	}{
		{&chart.Dependency{Name: "redis", Version: "^17", Repository: srv.URL},
			fmt.Sprintf(`chart "web": dependency "redis" (version ^17, repository %s): no version matches "^17" (available: 18.0.0)`, srv.URL)},
		{&chart.Dependency{Name: "nginx", Version: "^1", Repository: srv.URL},
			fmt.Sprintf(`chart "web": dependency "nginx" (version ^1, repository %s): not in index.yaml (charts: redis)`, srv.URL)},
		{&chart.Dependency{Name: "redis", Version: "^17", Repository: "@bitnami"},
			"chart \"web\": dependency \"redis\" (version ^17, repository @bitnami): a repository added with `helm repo add` is not known here: write its URL (https:// or oci://)"},
		{&chart.Dependency{Name: "redis", Version: "^17"},
			`chart "web": dependency "redis" (version ^17, repository none): charts/ does not hold it and it names no repository to fetch it from`},
		{&chart.Dependency{Name: "lib", Repository: "file://../lib"},
			`chart "web": dependency "lib" (version none, repository file://../lib): no chart at ../lib`},
		{&chart.Dependency{Name: "redis", Version: "^18", Repository: srv.URL + "/missing"},
			fmt.Sprintf(`chart "web": dependency "redis" (version ^18, repository %s/missing): GET index.yaml: 404 Not Found`, srv.URL)},
	} {
		web := testchart.New("web", "1.0.0", c.dep)
		_, err := f.LockDependencies(ctx, web, cr, func(path string) (*chart.Chart, error) {
			return nil, fmt.Errorf("no chart at %s", path)
		})
		require.Error(t, err)
		assert.Equal(t, c.msg, err.Error())
		var se *SourceError
		assert.True(t, errors.As(err, &se))
	}
}

// A chart from a repository whose own Chart.yaml dependencies are not packaged in it: Resolve locks them
// (unless helm.disableDependencyUpdate) and Load adds them.
func TestDependenciesOfARemoteChart(t *testing.T) {
	srv, cr := startRepo(t, chartrepo.Options{})
	publish(t, srv, testchart.New("redis", "17.0.0"))
	publish(t, srv, testchart.New("redis", "17.2.0"))
	publish(t, srv, testchart.New("app", "1.0.0", &chart.Dependency{Name: "redis", Version: "^17", Repository: srv.URL}))
	ctx := context.Background()
	f, clk := newFetcher(t)
	s := Source{Repo: srv.URL, Chart: "app"}
	lock, err := f.Resolve(ctx, s, cr, ResolveOptions{})
	require.NoError(t, err)
	require.Len(t, lock.Dependencies, 1)
	assert.Equal(t, "redis", lock.Dependencies[0].Source)
	assert.Equal(t, "17.2.0", lock.Dependencies[0].Version)

	c, err := (&Fetcher{Dir: f.Dir, AllowNetworks: loopback}).Load(ctx, lock, nil)
	require.NoError(t, err)
	require.Len(t, c.Dependencies(), 1)
	assert.Equal(t, "17.2.0", c.Dependencies()[0].Metadata.Version)
	assert.Contains(t, install(t, c, nil), "name: rel-redis\n")
	assert.Equal(t, 1, srv.Gets("/redis-17.2.0.tgz"))

	lock, err = f.Resolve(ctx, s, cr, ResolveOptions{DisableDependencyUpdate: true})
	require.NoError(t, err)
	assert.Empty(t, lock.Dependencies)

	// A file:// dependency of a chart from a repository cannot be fetched.
	publish(t, srv, testchart.New("tool", "1.0.0", &chart.Dependency{Name: "lib", Repository: "file://../lib"}))
	clk.Advance(DefaultIndexTTL)
	lock, err = f.Resolve(ctx, Source{Repo: srv.URL, Chart: "tool"}, cr, ResolveOptions{})
	require.Error(t, err)
	assert.Equal(t, `chart "tool": dependency "lib" (version none, repository file://../lib): a file:// dependency of a chart from a repository must be packaged in its charts/`, lock.Error)
}
