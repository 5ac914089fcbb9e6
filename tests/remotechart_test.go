package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/chartrepo"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/testchart"
)

const chartRepoPassword = "chart-repo-pa55word"

// startChartRepo starts a chart repository over HTTPS with basic auth, stopped with the test, and writes
// the worker's credentials file naming it "charts" (with the repository's CA).
func startChartRepo(t *testing.T) (*chartrepo.Server, string) {
	t.Helper()
	repo, err := chartrepo.Start(chartrepo.Options{Dir: filepath.Join(t.TempDir(), "charts"), Username: "fleet", Password: chartRepoPassword})
	require.NoError(t, err)
	t.Cleanup(func() { _ = repo.Close() })
	creds := filepath.Join(t.TempDir(), "credentials.yaml")
	ca := strings.ReplaceAll(strings.TrimSpace(string(repo.CAPEM)), "\n", "\n    ")
	require.NoError(t, os.WriteFile(creds, []byte(fmt.Sprintf("charts:\n  username: fleet\n  password: %s\n  caBundle: |\n    %s\n",
		chartRepoPassword, ca)), 0o600))
	return repo, creds
}

func publish(t *testing.T, repo *chartrepo.Server, name, version string) chartrepo.Published {
	t.Helper()
	p, err := repo.Publish(testchart.New(name, version))
	require.NoError(t, err)
	return p
}

// A chart from a Helm repository with basic auth, by semver constraint: every cluster deploys the newest
// match and shows its version and digest; a cluster missing a template value fails alone; a version
// published later reaches every cluster at the next poll, its archive fetched once for all of them; a
// repository that goes down fails that bundle by URL and status, and nothing deployed is touched. The
// repository's password never reaches Temporal or the worker's log.
func TestChartFromHelmRepositoryFollowsItsConstraint(t *testing.T) {
	t.Parallel()
	repo, creds := startChartRepo(t)
	v100 := publish(t, repo, "web", "1.0.0")
	publish(t, repo, "web", "2.0.0") // outside the constraint
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}},
		WorkerArgs: []string{"--credentials", creds}})
	greetedClusters(s, "k")
	git := s.NewRepo(map[string]string{
		"web/fleet.yaml": fmt.Sprintf("helm:\n  repo: %s\n  chart: web\n  version: \"^1.0\"\n  releaseName: web\n"+
			"  values:\n    message: ${ .ClusterValues.greeting }\n", repo.URL),
		"plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  ok: \"yes\"\n",
	})
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "charts"}, Spec: fleet.GitRepoSpec{Repo: git.URL(), Branch: "main",
			PollingInterval: "1s", HelmSecretName: "charts", Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})
	webAt := func(st api.GitRepoStatus, cluster, version string) bool {
		return chartReadyAt(st, cluster, "charts-web", version)
	}
	st := s.WaitStatus("charts", 3*time.Minute, "web 1.0.0 Ready on one and two, failing on three alone", func(st api.GitRepoStatus) bool {
		three, _ := harness.Cluster(st, "three")
		return webAt(st, "one", "1.0.0") && webAt(st, "two", "1.0.0") && bundleState(three, "charts-web") == api.StateErrApplied &&
			bundleState(three, "charts-plain") == api.StateReady
	})
	three, _ := harness.Cluster(st, "three")
	require.Contains(t, three.Message, `map has no entry for key "greeting"`)
	one, _ := harness.Cluster(st, "one")
	for _, b := range one.Bundles {
		if b.Name == "charts-web" {
			require.Equal(t, v100.Digest, b.ChartDigest, "status names the archive deployed")
		}
	}
	require.Equal(t, "hi-one", s.ConfigMapData("k", "one", "web-web")["message"])
	require.Equal(t, "1.0.0", s.ConfigMapData("k", "one", "web-web")["version"])
	require.Equal(t, "hi-two", s.ConfigMapData("k", "two", "web-web")["message"])

	// A version the constraint accepts is published: the next poll resolves it, every cluster upgrades to
	// it, and its archive is downloaded once for them all (the plan's resolution, then the cache).
	v110 := publish(t, repo, "web", "1.1.0")
	s.WaitStatus("charts", 2*time.Minute, "web 1.1.0 Ready on one and two", func(st api.GitRepoStatus) bool {
		return webAt(st, "one", "1.1.0") && webAt(st, "two", "1.1.0")
	})
	require.Equal(t, "1.1.0", s.ConfigMapData("k", "two", "web-web")["version"])
	require.Equal(t, 1, repo.Gets(v110.Path), "the new archive is fetched once per worker, never once per cluster")
	require.Equal(t, 1, repo.Gets(v100.Path))

	// The repository fails: the bundle fails by URL and status on every cluster, the other bundle is Ready,
	// and what runs stays as it was.
	repo.Fail(503)
	st = s.WaitStatus("charts", 2*time.Minute, "web failing on one by the repository's status", func(st api.GitRepoStatus) bool {
		one, _ := harness.Cluster(st, "one")
		return bundleState(one, "charts-web") == api.StateErrApplied && strings.Contains(one.Message, "503") &&
			bundleState(one, "charts-plain") == api.StateReady
	})
	one, _ = harness.Cluster(st, "one")
	require.Contains(t, one.Message, repo.URL, "the message names the repository")
	s.WaitChecks("charts", "one", 2)
	require.Equal(t, "1.1.0", s.ConfigMapData("k", "one", "web-web")["version"], "nothing deployed is touched")
	require.Len(t, s.History("k", "one", "web"), 2)

	repo.Fail(0)
	s.WaitStatus("charts", 2*time.Minute, "web Ready again on one and two", func(st api.GitRepoStatus) bool {
		return webAt(st, "one", "1.1.0") && webAt(st, "two", "1.1.0")
	})
	require.Len(t, s.History("k", "one", "web"), 2, "back to the same version: no new revision")

	assertNowhere(t, s, chartRepoPassword)
}

// greetedClusters registers clusters one, two and three as namespaces of backing: one and two with the
// templateValue greeting (hi-one, hi-two), three without it.
func greetedClusters(s *harness.Stack, backing string) {
	for _, c := range []string{"one", "two", "three"} {
		values := ""
		if c != "three" {
			values = "  templateValues: {greeting: hi-" + c + "}\n"
		}
		s.Apply(fmt.Sprintf("kind: Cluster\nmetadata: {name: %s}\nspec:\n  kubeConfigPath: %s\n  confineToNamespace: %s\n%s",
			c, s.K8s.Kubeconfig(backing), c, values))
	}
}

// chartReadyAt says whether bundle is Ready on cluster with the chart version given.
func chartReadyAt(st api.GitRepoStatus, cluster, bundle, version string) bool {
	c, _ := harness.Cluster(st, cluster)
	for _, b := range c.Bundles {
		if b.Name == bundle {
			return b.State == api.StateReady && b.ChartVersion == version
		}
	}
	return false
}

// assertNowhere checks that no workflow history and no line of the worker's log holds secret.
func assertNowhere(t *testing.T, s *harness.Stack, secret string) {
	t.Helper()
	found, err := s.HistoriesContaining(secret)
	require.NoError(t, err)
	require.Empty(t, found, "workflow histories holding the secret")
	log, err := os.ReadFile(filepath.Join(s.Dir, "worker.log"))
	require.NoError(t, err)
	require.NotContains(t, string(log), secret)
}
