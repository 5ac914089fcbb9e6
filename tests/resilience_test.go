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
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

var metav1GetOptions = metav1.GetOptions{}

func configMapBundles(n int, version string) map[string]string {
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("bundles/b%02d/fleet.yaml", i)] = fmt.Sprintf("name: b%02d\ndefaultNamespace: ns-b%02d\n", i, i)
		var cms []string
		for j := 0; j < 5; j++ {
			cms = append(cms, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  version: %s\n", j, version))
		}
		files[fmt.Sprintf("bundles/b%02d/cms.yaml", i)] = strings.Join(cms, "---\n")
	}
	return files
}

// A worker killed with SIGKILL in the middle of a fan-out: every cluster converges after a restart, and no
// release gets more Helm revisions than the commits it was given.
func TestWorkerKilledMidFanOutConvergesWithoutExtraRevisions(t *testing.T) {
	t.Parallel()
	backing := []string{"a", "b", "c", "d"}
	var clusters []localk8s.ClusterOptions
	for _, b := range backing {
		clusters = append(clusters, localk8s.ClusterOptions{Name: b})
	}
	s := harness.Start(t, harness.Options{Clusters: clusters})
	const bundles = 8
	repo := s.NewRepo(configMapBundles(bundles, "one"))
	for _, b := range backing {
		s.AddCluster("c-"+b, b, map[string]string{"fleet": "yes"}, nil)
	}

	for commitNo, version := range []string{"one", "two"} {
		head := ""
		if commitNo == 0 {
			// A window of one cluster at a time makes the fan-out long enough to interrupt.
			s.StartGitRepo(api.GitRepoInput{
				GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "crash"}, Spec: fleet.GitRepoSpec{
					Repo: repo.URL(), Branch: "main", PollingInterval: "1s", Paths: []string{"bundles"},
					Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "yes"}}}},
				}},
				Flotilla: &api.RunOptions{RolloutWindow: 1},
			})
		} else {
			head = repo.Commit(configMapBundles(bundles, version), "two")
		}
		st := s.WaitStatus("crash", 2*time.Minute, "the first cluster done", func(st api.GitRepoStatus) bool {
			if head != "" && st.Commit != head {
				return false
			}
			done := 0
			for _, c := range st.Clusters {
				if c.State == api.StateReady && (head == "" || c.Commit == head) {
					done++
				}
			}
			return done >= 1
		})
		require.Less(t, st.ReadyClusters, len(backing), "the worker is killed in the middle of the fan-out")
		s.KillWorker()
		s.StartWorker()
		st = s.WaitStatus("crash", 3*time.Minute, "every cluster Ready after the restart", func(st api.GitRepoStatus) bool {
			return harness.AllReady(st) && (head == "" || st.Commit == head)
		})
		require.Equal(t, len(backing)*bundles, st.Summary.Ready)
		for _, b := range backing {
			for i := 0; i < bundles; i++ {
				hist := s.History(b, fmt.Sprintf("ns-b%02d", i), fmt.Sprintf("b%02d", i))
				require.LessOrEqual(t, len(hist), commitNo+1, "cluster %s bundle b%02d: revisions %v", b, i, hist)
				require.Equal(t, version, s.ConfigMapData(b, fmt.Sprintf("ns-b%02d", i), "cm-3")["version"])
			}
		}
	}
}

// Bad input fails the bundle that holds it, with a message naming the file, key or function; the others deploy.
func TestBadBundlesFailAloneWithClearErrors(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{
		"good/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  ok: \"yes\"\n",
		"good/fleet.yaml":           "name: good\ndefaultNamespace: good\n",
		"broken/fleet.yaml":         "name: broken\ndefaultNamespace: broken\nhelm:\n  values:\n    a: [1, 2\n",
		"broken/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n",
		"parent/fleet.yaml":         "name: parent\nhelm:\n  chart: ./chart\n  valuesFiles: [../../../../../../etc/passwd]\n",
		"absolute/fleet.yaml":       "name: absolute\nhelm:\n  chart: ./chart\n  valuesFiles: [/etc/passwd]\n",
		"link/fleet.yaml":           "name: link\nhelm:\n  chart: ./chart\n  valuesFiles: [values.yaml]\n",
		"envfn/fleet.yaml":          "name: envfn\nhelm:\n  chart: ./chart\n  values:\n    home: ${ env \"HOME\" }\n",
		"missingchart/fleet.yaml":   "name: missingchart\nhelm:\n  chart: ./nowhere\n",
		"parent/chart/Chart.yaml":   "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"absolute/chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"link/chart/Chart.yaml":     "apiVersion: v2\nname: c\nversion: 0.1.0\n",
		"envfn/chart/Chart.yaml":    "apiVersion: v2\nname: c\nversion: 0.1.0\n",
	})
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(repo.Dir, "link", "values.yaml")))
	_, err := devenv.Commit(repo.Dir, "a symlink leaving the repository")
	require.NoError(t, err)
	s.AddCluster("a", "a", map[string]string{"env": "dev"}, nil)
	s.Apply(harness.GitRepoYAML("bad", repo.URL(), "  targets: [{clusterName: a}]\n"))

	st := s.WaitStatus("bad", 2*time.Minute, "good Ready, the rest failed", func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, "a")
		if !ok {
			return false
		}
		states := map[string]string{}
		for _, b := range c.Bundles {
			states[b.Name] = b.State
		}
		return states["good"] == api.StateReady && len(states) == 7 && st.Summary.ErrApplied == 6
	})
	c, _ := harness.Cluster(st, "a")
	msgs := map[string]string{}
	for _, b := range c.Bundles {
		msgs[b.Name] = b.Message
	}
	require.Contains(t, msgs["bad-broken"], "broken/fleet.yaml", "a fleet.yaml that does not parse names the bundle by its path")
	require.Regexp(t, `broken/fleet.yaml: line [0-9]+: did not find expected`, msgs["bad-broken"])
	require.Contains(t, msgs["parent"], "leaves the repository")
	require.Contains(t, msgs["absolute"], "absolute path")
	require.Contains(t, msgs["link"], "symlink")
	require.Contains(t, msgs["envfn"], "env is not available in Flotilla templates: it reads the worker's environment")
	require.Contains(t, msgs["missingchart"], "nowhere")
	require.Equal(t, "yes", s.ConfigMapData("a", "good", "good")["ok"])
	for _, m := range msgs {
		require.NotContains(t, m, "root:x:0:0", "no content of a file outside the repository leaks into status")
	}
}

// An unreachable cluster retries alone while the others are Ready, is shown as unreachable, never as a
// stale Ready, and converges once it is back.
func TestUnreachableClusterRetriesAlone(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "up"}, {Name: "down"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"1\"\n"})
	s.AddCluster("up", "up", map[string]string{"env": "x"}, nil)
	s.AddCluster("down", "down", map[string]string{"env": "x"}, nil)
	require.NoError(t, s.K8s.StopAPIServer("down"))
	s.Apply(harness.GitRepoYAML("reach", repo.URL(), "  targets: [{clusterSelector: {matchLabels: {env: x}}}]\n"))

	st := s.WaitStatus("reach", 2*time.Minute, "up Ready, down unreachable", func(st api.GitRepoStatus) bool {
		up, _ := harness.Cluster(st, "up")
		down, ok := harness.Cluster(st, "down")
		return up.State == api.StateReady && ok && !down.Reachable && down.State == api.StateErrApplied
	})
	down, _ := harness.Cluster(st, "down")
	require.Contains(t, down.Message, "unreachable")
	require.Contains(t, st.Message, `cluster "down"`)

	require.NoError(t, s.K8s.StartAPIServer(t.Context(), "down"))
	s.WaitStatus("reach", 3*time.Minute, "both Ready once the cluster is back", harness.AllReady)
	require.Equal(t, "1", s.ConfigMapData("down", "default", "app")["v"])
}

// A repository that vanishes is an error on the GitRepo, never "no bundles": nothing deployed is removed,
// and the GitRepo recovers when the repository is back.
func TestVanishedRepositoryDeletesNothing(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"1\"\n"})
	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("vanish", repo.URL(), "  paths: [app]\n  targets: [{clusterName: a}]\n"))
	s.WaitStatus("vanish", 2*time.Minute, "Ready", harness.AllReady)

	moved := repo.Dir + "-away"
	require.NoError(t, os.Rename(repo.Dir, moved))
	st := s.WaitStatus("vanish", time.Minute, "a repository error", func(st api.GitRepoStatus) bool { return st.Error != "" })
	require.Contains(t, st.Error, "repository")
	require.Equal(t, api.StateErrApplied, st.State)
	for i, polled := 0, st.LastPolled; i < 3; i++ { // several failing polls
		polled = s.WaitStatus("vanish", time.Minute, "another poll", func(st api.GitRepoStatus) bool { return st.LastPolled.After(polled) }).LastPolled
	}
	require.Len(t, s.Releases("a", "vanish"), 1, "a failed listing never uninstalls")
	require.Equal(t, "1", s.ConfigMapData("a", "default", "app")["v"])

	require.NoError(t, os.Rename(moved, repo.Dir))
	s.WaitStatus("vanish", time.Minute, "Ready again", func(st api.GitRepoStatus) bool { return st.Error == "" && harness.AllReady(st) })
}
