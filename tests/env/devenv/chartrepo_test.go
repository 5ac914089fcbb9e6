package devenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/internal/credentials"
	"github.com/flotilla-gitops/flotilla/tests/env/proc"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testpki"
)

// serveInTest serves r until the returned stop is called, and waits until it answers.
func serveInTest(t *testing.T, r *ChartRepo) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, io.Discard) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(stop)
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	require.NoError(t, r.WaitServing(wctx, nil))
	return stop
}

// versions lists what the repository's index.yaml offers of a chart, newest first, read as a client that
// trusts only caPEM would.
func versions(t *testing.T, r *ChartRepo, caPEM []byte, chart string) []string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: (&testpki.PKI{CAPEM: caPEM}).Pool()}}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, r.URL+"/index.yaml", nil)
	require.NoError(t, err)
	req.SetBasicAuth(r.Username, r.Password)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var index repo.IndexFile
	require.NoError(t, yaml.Unmarshal(body, &index))
	var out []string
	for _, v := range index.Entries[chart] {
		out = append(out, v.Version)
	}
	return out
}

// `make up`'s chart repository is a folder that a separate process serves: a chart published into it
// while it runs is offered at once, and serving it again (the process restarted) keeps its port, account,
// CA and charts, so the worker's credentials written once stay right.
func TestChartRepoServesWhatIsPublishedAndKeepsItsCAWhenServedAgain(t *testing.T) {
	port, err := proc.FreePort()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "chart-repo")
	r, err := PrepareChartRepo(dir, fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	_, err = r.Publish(ExampleChart, "1.0.0")
	require.NoError(t, err)

	stop := serveInTest(t, r)
	require.Equal(t, []string{"1.0.0"}, versions(t, r, r.CAPEM, ExampleChart))
	_, err = r.Publish(ExampleChart, "1.1.0")
	require.NoError(t, err)
	require.Equal(t, []string{"1.1.0", "1.0.0"}, versions(t, r, r.CAPEM, ExampleChart), "published while serving")
	stop()

	again, err := LoadChartRepo(dir)
	require.NoError(t, err)
	require.Equal(t, r, again)
	serveInTest(t, again)
	require.Equal(t, []string{"1.1.0", "1.0.0"}, versions(t, again, r.CAPEM, ExampleChart), "trusted with the first CA")

	_, err = LoadChartRepo(t.TempDir())
	require.ErrorContains(t, err, "`make up` starts one")
}

// The worker's credentials file that `make up` writes loads as the worker loads it, with the
// repository's account and CA under the name the example GitRepo gives.
func TestChartRepoCredentialsAreWhatTheWorkerLoads(t *testing.T) {
	r, err := PrepareChartRepo(t.TempDir(), "127.0.0.1:8280")
	require.NoError(t, err)
	data, err := r.CredentialsYAML()
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "credentials.yaml")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	store, err := credentials.Load(file)
	require.NoError(t, err)
	s, err := store.For("", ChartRepoSecret, r.URL)
	require.NoError(t, err)
	require.Equal(t, r.Username, string(s.Username))
	require.Equal(t, r.Password, string(s.Password))
	require.Equal(t, r.CAPEM, s.CABundle)

	gitrepo, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "gitrepo.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(gitrepo), "helmSecretName: "+ChartRepoSecret)
}

// The example names the repository at its usual port; a copy is pointed at another port when that one was
// taken, and left as it is otherwise.
func TestPointExampleAtChartRepo(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, CopyTree(filepath.Join("..", "..", "..", "examples", "repo"), dir))
	hello := filepath.Join(dir, ExampleChart, "fleet.yaml")
	original, err := os.ReadFile(hello)
	require.NoError(t, err)
	require.Contains(t, string(original), "repo: "+ExampleChartRepoURL+"\n")

	changed, err := PointExampleAtChartRepo(dir, ExampleChartRepoURL)
	require.NoError(t, err)
	require.False(t, changed)

	changed, err = PointExampleAtChartRepo(dir, "https://127.0.0.1:18280")
	require.NoError(t, err)
	require.True(t, changed)
	moved, err := os.ReadFile(hello)
	require.NoError(t, err)
	require.Equal(t, strings.ReplaceAll(string(original), ExampleChartRepoURL, "https://127.0.0.1:18280"), string(moved))
}
