package tests

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// One GitRepo over a cluster the worker reaches with a kubeconfig and two clusters that only their own
// agents reach: the agents apply what the management side rendered, one agent cluster missing a template
// value fails alone, and a release of more than 2 MB of manifests reaches an agent through Temporal.
func TestAgentClustersDeployBesideKubeconfigClustersAndFailAlone(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}, {Name: "e1"}, {Name: "e2"}}})
	repo := s.NewRepo(fqdnBundle())
	s.AddCluster("k", "k", map[string]string{"site": "hq"}, fqdnValues("k.example"))
	s.AddAgentCluster("e1", map[string]string{"site": "edge"}, fqdnValues("e1.example"))
	s.AddAgentCluster("e2", map[string]string{"site": "edge"}, fqdnValues(""))
	s.StartAgent("e1", "e1")
	s.StartAgent("e2", "e2")
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "mixed"}, Spec: fleet.GitRepoSpec{
			Repo: repo.URL(), Branch: "main", PollingInterval: "1s",
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "site", Operator: metav1.LabelSelectorOpExists}}}}},
		}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})

	st := s.WaitStatus("mixed", 2*time.Minute, "k and e1 Ready, e2 failing on its own", func(st api.GitRepoStatus) bool {
		k, _ := harness.Cluster(st, "k")
		e1, _ := harness.Cluster(st, "e1")
		e2, _ := harness.Cluster(st, "e2")
		return k.State == api.StateReady && e1.State == api.StateReady && e2.State == api.StateErrApplied
	})
	e2, _ := harness.Cluster(st, "e2")
	require.Contains(t, e2.Message, `map has no entry for key "fqdn"`)
	require.Equal(t, "k.example", s.ConfigMapData("k", "web", "web")["fqdn"])
	require.Equal(t, "e1.example", s.ConfigMapData("e1", "web", "web")["fqdn"], "applied by e1's agent")
	require.Nil(t, s.ConfigMapData("e2", "web", "web"))
	require.Positive(t, s.CountWorkflows("WorkflowType = '"+api.ContentWorkflowType+"'"), "e1's agent fetched its package through Temporal")

	list := s.CLIRun("cluster", "list")
	require.Regexp(t, `(?m)^e1\s.*\sagent\s+\S+ ago\s+\S+\s*$`, list, "cluster list shows e1 in agent mode, when its agent last polled and its version:\n%s", list)
	require.NotRegexp(t, `(?m)^e1\s.*\snever\s`, list)
	require.NotContains(t, list, s.K8s.Kubeconfig("e1"), "the management side holds no kubeconfig of an agent cluster")

	// A release of several MB of manifests (CRD-heavy charts are) goes to every cluster, the agent's too;
	// and one that barely compresses, whose package takes more than one chunk.
	fetches := s.CountWorkflows("WorkflowType = '" + api.ContentWorkflowType + "'")
	files := bigManifestsBundle(3 << 20)
	for k, v := range noiseBundle(780 << 10) {
		files[k] = v
	}
	head := repo.Commit(files, "big")
	st = s.WaitStatus("mixed", 3*time.Minute, "the big bundles Ready on k and e1", func(st api.GitRepoStatus) bool {
		for _, name := range []string{"k", "e1"} {
			c, _ := harness.Cluster(st, name)
			if c.Commit != head || c.State != api.StateReady || len(c.Bundles) != 3 {
				return false
			}
		}
		return true
	})
	for _, backing := range []string{"k", "e1"} {
		require.NotEmpty(t, s.ConfigMapData(backing, "big", "big-0")["schema"], "the big bundle's objects exist on %s", backing)
		require.Len(t, s.ConfigMapData(backing, "noise", "noise")["data"], 780<<10, "the noise bundle's object exists on %s", backing)
	}
	// e1 fetched the two new packages together, in chunks of at most 512 KiB: more than one, as the noise
	// bundle's package alone is larger than a chunk.
	require.GreaterOrEqual(t, s.CountWorkflows("WorkflowType = '"+api.ContentWorkflowType+"'")-fetches, int64(2), "chunks fetched by e1")
	// Nothing that carried it was near Temporal's limit: the largest event in any history.
	largest := s.LargestPayload()
	t.Logf("largest history event: %d bytes", largest)
	require.Less(t, largest, 1<<20, "every payload stays far under Temporal's 2 MB limit")
}

// An agent that stops is shown Offline within a check interval, with when it was last seen, while the other
// clusters go on; when it returns after three commits it converges to the latest in one Helm revision. An
// agent killed in the middle of an apply converges after a restart with no revision more than the commits
// it was given.
func TestAnAgentAwayForThreeCommitsConvergesOnceAndSurvivesAKill(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}, {Name: "e"}}})
	const bundles = 6
	repo := s.NewRepo(configMapBundles(bundles, "v0"))
	s.AddCluster("k", "k", map[string]string{"fleet": "yes"}, nil)
	s.AddAgentCluster("e", map[string]string{"fleet": "yes"}, nil)
	// One bundle at a time makes an apply long enough to be interrupted.
	agent := s.StartAgent("e", "e", "--bundle-concurrency", "1")
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "away"}, Spec: fleet.GitRepoSpec{
			Repo: repo.URL(), Branch: "main", PollingInterval: "1s", Paths: []string{"bundles"},
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "yes"}}}},
		}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})
	s.WaitStatus("away", 2*time.Minute, "both clusters Ready", harness.AllReady)

	require.NoError(t, agent.Stop(5*time.Second))
	stopped := time.Now()
	st := s.WaitStatus("away", time.Minute, "e Offline", func(st api.GitRepoStatus) bool {
		e, _ := harness.Cluster(st, "e")
		return e.State == api.StateOffline
	})
	t.Logf("e shown Offline %s after its agent stopped", time.Since(stopped).Round(100*time.Millisecond))
	e, _ := harness.Cluster(st, "e")
	require.Contains(t, e.Message, "agent offline")
	require.Contains(t, e.Message, "last seen")
	require.False(t, e.LastSeen.IsZero())
	require.EqualValues(t, 1, s.CountWorkflows("WorkflowType = '"+api.ClusterWorkflowType+"' AND "+api.SearchAttrState+" = '"+api.StateOffline+"'"),
		"the Web UI finds the Offline cluster by its search attribute")

	var head string
	for _, v := range []string{"v1", "v2", "v3"} {
		head = repo.Commit(configMapBundles(bundles, v), v)
		s.WaitStatus("away", 2*time.Minute, "k at "+v, func(st api.GitRepoStatus) bool {
			k, _ := harness.Cluster(st, "k")
			e, _ := harness.Cluster(st, "e")
			return k.Commit == head && k.State == api.StateReady && e.State == api.StateOffline
		})
	}
	agent = s.StartAgent("e", "e", "--bundle-concurrency", "1")
	s.WaitStatus("away", 2*time.Minute, "e Ready at the latest commit", func(st api.GitRepoStatus) bool {
		e, _ := harness.Cluster(st, "e")
		return e.State == api.StateReady && e.Commit == head
	})
	for i := 0; i < bundles; i++ {
		hist := s.History("e", fmt.Sprintf("ns-b%02d", i), fmt.Sprintf("b%02d", i))
		require.Len(t, hist, 2, "bundle b%02d: one revision for v0, one for v3, none for the commits missed: %v", i, hist)
		require.Equal(t, "v3", s.ConfigMapData("e", fmt.Sprintf("ns-b%02d", i), "cm-0")["version"])
	}

	// SIGKILL while the agent is applying: some bundles are at the new version, some not yet.
	given := 3
	for attempt, v := range []string{"v4", "v5", "v6"} {
		given++
		head = repo.Commit(configMapBundles(bundles, v), v)
		interrupted := waitPartlyApplied(t, s, bundles, v)
		require.NoError(t, agent.Kill())
		agent = s.StartAgent("e", "e", "--bundle-concurrency", "1")
		s.WaitStatus("away", 2*time.Minute, "e Ready at "+v+" after the kill", func(st api.GitRepoStatus) bool {
			e, _ := harness.Cluster(st, "e")
			return e.State == api.StateReady && e.Commit == head
		})
		for i := 0; i < bundles; i++ {
			hist := s.History("e", fmt.Sprintf("ns-b%02d", i), fmt.Sprintf("b%02d", i))
			deployed := 0
			for _, h := range hist {
				if h.Status == "deployed" {
					deployed++
				}
			}
			require.Equal(t, 1, deployed, "bundle b%02d: one deployed revision: %v", i, hist)
			require.LessOrEqual(t, hist[len(hist)-1].Revision, given, "bundle b%02d: no more revisions than commits given: %v", i, hist)
			require.Equal(t, v, s.ConfigMapData("e", fmt.Sprintf("ns-b%02d", i), "cm-0")["version"])
		}
		if interrupted {
			return
		}
		t.Logf("attempt %d: the apply finished before the kill; trying with another commit", attempt+1)
	}
	t.Fatal("the agent's apply was never caught in the middle")
}

// waitPartlyApplied waits until at least one bundle on cluster e has version v; it reports whether some
// bundle did not have it yet at that moment (the apply was caught in the middle).
func waitPartlyApplied(t *testing.T, s *harness.Stack, bundles int, v string) bool {
	t.Helper()
	var at int
	require.Eventually(t, func() bool {
		at = 0
		for i := 0; i < bundles; i++ {
			if s.ConfigMapData("e", fmt.Sprintf("ns-b%02d", i), "cm-0")["version"] == v {
				at++
			}
		}
		return at > 0
	}, harness.Patience(2*time.Minute), 10*time.Millisecond, "the agent starts applying %s", v)
	return at < bundles
}

// noiseBundle is a bundle "noise" of one ConfigMap holding size bytes of random base64: it barely
// compresses, so its package is larger than one chunk, while its Helm release still fits the 1 MiB
// Secret Helm keeps it in.
func noiseBundle(size int) map[string]string {
	rnd := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, size*3/4)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	data := base64.StdEncoding.EncodeToString(raw)[:size]
	return map[string]string{
		"noise/fleet.yaml": "defaultNamespace: noise\n",
		"noise/cm.yaml":    fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: noise\ndata:\n  data: %q\n", data),
	}
}

// bigManifestsBundle is a bundle "big" of plain manifests of about size bytes in all, ConfigMaps of a few
// hundred KB each (as a chart's CRDs with long OpenAPI schemas are).
func bigManifestsBundle(size int) map[string]string {
	const per = 700 << 10
	files := map[string]string{"big/fleet.yaml": "defaultNamespace: big\n"}
	for i := 0; i*per < size; i++ {
		var b strings.Builder
		for line := 0; b.Len() < per; line++ {
			fmt.Fprintf(&b, "    property%06d: {type: string, description: field %d of object %d}\n", line, line, i)
		}
		files[fmt.Sprintf("big/cm-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-%d\ndata:\n  schema: |\n%s", i, b.String())
	}
	return files
}

// Two workers share the installation's queue, each with caches of its own, as two machines would: any task
// may land on either (an agent's package fetch too, which a worker that never rendered the package serves
// by rendering it again), and when one worker is killed while a rollout is in flight, whichever tasks it
// held, the other finishes the rollout with no Helm revision more than the commits given.
func TestTwoWorkersShareTheWorkAndEitherServesAnAgent(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "k"}, {Name: "e"}}})
	other := s.StartOtherWorker("b")
	const bundles = 8
	repo := s.NewRepo(configMapBundles(bundles, "v0"))
	s.AddCluster("k", "k", map[string]string{"fleet": "yes"}, nil)
	s.AddAgentCluster("e", map[string]string{"fleet": "yes"}, nil)
	s.StartAgent("e", "e")
	s.StartGitRepo(api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "shared"}, Spec: fleet.GitRepoSpec{
			Repo: repo.URL(), Branch: "main", PollingInterval: "1s", Paths: []string{"bundles"},
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "yes"}}}},
		}},
		Flotilla: &api.RunOptions{CheckInterval: "2s"},
	})
	s.WaitStatus("shared", 2*time.Minute, "both clusters Ready", harness.AllReady)

	head := repo.Commit(configMapBundles(bundles, "v1"), "v1")
	// Killed as soon as the new commit starts landing anywhere: the rollout is in flight.
	require.Eventually(t, func() bool {
		return s.ConfigMapData("k", "ns-b00", "cm-0")["version"] == "v1" || s.ConfigMapData("e", "ns-b00", "cm-0")["version"] == "v1"
	}, harness.Patience(2*time.Minute), 20*time.Millisecond, "the rollout of v1 starts")
	require.NoError(t, other.Kill())
	// Whatever the killed worker held (an agent's package read, say) is retried once its heartbeat stops,
	// in seconds: waiting out a two-minute start-to-close timeout instead would miss this bound.
	s.WaitStatus("shared", 90*time.Second, "both clusters Ready at v1 with one worker left", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && st.Commit == head
	})
	for _, backing := range []string{"k", "e"} {
		for i := 0; i < bundles; i++ {
			hist := s.History(backing, fmt.Sprintf("ns-b%02d", i), fmt.Sprintf("b%02d", i))
			require.LessOrEqual(t, len(hist), 2, "%s bundle b%02d: revisions %v", backing, i, hist)
			require.Equal(t, "v1", s.ConfigMapData(backing, fmt.Sprintf("ns-b%02d", i), "cm-0")["version"])
		}
	}
}
