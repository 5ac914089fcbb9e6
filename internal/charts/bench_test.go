package charts

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

// benchChart is a chart of a realistic size: 40 templates of about 2 KiB.
func benchChart() *chart.Chart {
	c := testchart.New("web", "1.0.0")
	for i := range 40 {
		body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-%d\ndata:\n", i)
		for j := range 60 {
			body += fmt.Sprintf("  key%d: {{ .Values.message | quote }}\n", j)
		}
		c.Templates = append(c.Templates, &chart.File{Name: fmt.Sprintf("templates/cm%d.yaml", i), Data: []byte(body)})
	}
	return c
}

// Load on a cache hit against what a render of the same chart from the repository costs (reading the
// folder and parsing it): a cluster's render must not pay more for a chart from a repository.
func BenchmarkLoad(b *testing.B) {
	srv, err := chartrepo.Start(chartrepo.Options{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Close() })
	_, err = srv.Publish(benchChart())
	require.NoError(b, err)
	f := &Fetcher{Dir: b.TempDir(), AllowNetworks: loopback}
	ctx := context.Background()
	cr := &creds{prefix: srv.URL, auth: &Auth{CABundle: srv.CAPEM}}
	lock, err := f.Resolve(ctx, Source{Repo: srv.URL, Chart: "web"}, cr, ResolveOptions{})
	require.NoError(b, err)

	b.Run("cache hit", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.Load(ctx, lock, cr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new process, disk cache", func(b *testing.B) {
		for b.Loop() {
			if _, err := (&Fetcher{Dir: f.Dir, AllowNetworks: loopback}).Load(ctx, lock, cr); err != nil {
				b.Fatal(err)
			}
		}
	})
	dir := b.TempDir()
	require.NoError(b, chartutil.SaveDir(benchChart(), dir))
	b.Run("folder", func(b *testing.B) {
		for b.Loop() {
			if _, err := loader.LoadDir(dir + "/web"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
