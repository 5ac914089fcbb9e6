package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Two GitRepos named "web", one in workspace team-a and one in team-b, each workspace with a cluster
// called "edge" of its own. Neither names targets, so each goes to its own workspace's "default" group:
// each deploys only to its workspace's clusters, is read and steered with -n, and deleting one leaves the
// other's releases, also on an API server both deploy to, where every release is labelled gitrepo=web. A
// third web, fleet-default's, is refused team-a's release by its owner's name.
func TestWorkspacesKeepSameNamedGitReposApart(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "kube-a"}, {Name: "kube-b"}}})
	repo := s.NewRepo(map[string]string{"app/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.AddClusterIn("team-a", "edge", "kube-a", nil, nil)
	s.AddClusterIn("team-b", "edge", "kube-b", nil, nil)
	teamA, teamB := api.KeyOf("team-a", "web"), api.KeyOf("team-b", "web")

	// Each forces its objects into a namespace of its own, so that both can later share kube-a.
	web := func(targetNamespace string) string {
		return harness.GitRepoYAML("web", repo.URL(), "  paths: [app]\n  targetNamespace: "+targetNamespace+"\n")
	}
	inTeamA := strings.Replace(web("team-a-app"), "  name: web\n", "  name: web\n  namespace: team-a\n", 1)
	// team-a's namespace is in its YAML, team-b's on the command line: apply takes either, as kubectl does,
	// and refuses the two when they disagree.
	res := s.CLI("apply", "-n", "team-b", "-f", s.ApplyFile(inTeamA))
	require.Equal(t, 1, res.ExitCode, res.Stdout)
	require.Contains(t, res.Stderr, `metadata.namespace is "team-a" but -n/--namespace is "team-b"`)
	require.Contains(t, s.CLIRun("apply", "-f", s.ApplyFile(inTeamA)), "gitrepo/team-a/web configured")
	require.Contains(t, s.CLIRun("apply", "-n", "team-b", "-f", s.ApplyFile(web("team-b-app"))), "gitrepo/team-b/web configured")

	for _, k := range []api.GitRepoKey{teamA, teamB} {
		st := s.WaitStatusOf(k, 3*time.Minute, "Ready", harness.AllReady)
		require.Equal(t, []string{"edge"}, targetedClusters(st), "%s deploys to its own workspace's edge only", k)
		require.Equal(t, k.Namespace, st.Namespace)
	}
	require.Equal(t, "1", s.ConfigMapData("kube-a", "team-a-app", "app")["v"])
	require.Nil(t, s.ConfigMapData("kube-a", "team-b-app", "app"), "team-b's web never reached team-a's edge")
	require.Equal(t, "1", s.ConfigMapData("kube-b", "team-b-app", "app")["v"])
	require.Nil(t, s.ConfigMapData("kube-b", "team-a-app", "app"), "team-a's web never reached team-b's edge")
	owned := s.ReleasesOf("kube-a", teamA)
	require.Len(t, owned, 1)
	require.Equal(t, "team-a", owned["team-a-app/web-app"].Labels[api.LabelGitRepoNamespace])
	require.Empty(t, s.ReleasesOf("kube-a", teamB))
	require.Len(t, s.ReleasesOf("kube-b", teamB), 1)
	_, err := s.Status("web")
	require.Error(t, err, "nothing runs as fleet-default's web")

	// The CLI reads each with -n; without it, fleet-default, which has no web.
	var st api.GitRepoStatus
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun("status", "-n", "team-a", "web", "-o", "json")), &st))
	require.Equal(t, "team-a", st.Namespace)
	require.Equal(t, []string{"edge"}, targetedClusters(st))
	require.Contains(t, s.CLIRun("status", "--namespace", "team-b", "web"), "GitRepo team-b/web")
	require.NotEqual(t, 0, s.CLI("status", "web").ExitCode)
	require.Equal(t, []string{"team-a/web", "team-b/web"}, listedGitRepos(t, s, "get", "gitrepos", "-A"))
	require.Equal(t, []string{"team-b/web"}, listedGitRepos(t, s, "get", "gitrepos", "-n", "team-b"))
	require.Empty(t, listedGitRepos(t, s, "get", "gitrepos"))
	require.Contains(t, s.CLIRun("get", "gitrepos", "--all-namespaces"), "NAMESPACE")
	require.Equal(t, map[string]string{"team-a/edge": s.K8s.Kubeconfig("kube-a"), "team-b/edge": s.K8s.Kubeconfig("kube-b")},
		listedClusters(t, s, "-A"))
	require.Equal(t, map[string]string{"team-a/edge": s.K8s.Kubeconfig("kube-a")}, listedClusters(t, s, "-n", "team-a"))
	require.Empty(t, listedClusters(t, s))

	// fleet-default's own web, on a cluster of fleet-default on kube-a, with team-a's release namespace: it is
	// refused team-a's release, which names team-a/web, and deleting it leaves that release alone, though
	// both are labelled gitrepo=web and have one name and namespace.
	s.AddCluster("shared", "kube-a", nil, nil)
	s.Apply(web("team-a-app"))
	s.WaitStatus("web", 2*time.Minute, "refused team-a's release", func(st api.GitRepoStatus) bool {
		b, _ := json.Marshal(st.Clusters)
		return strings.Contains(string(b), `belongs to GitRepo \"team-a/web\"`)
	})
	require.Contains(t, s.CLIRun("delete", "web"), "gitrepo/web: delete requested")
	require.Eventually(t, func() bool {
		d, err := s.Client.DescribeWorkflowExecution(context.Background(), api.GitRepoWorkflowID("web"), "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "fleet-default's web ends")
	require.Len(t, s.ReleasesOf("kube-a", teamA), 1, "team-a's release outlives fleet-default's web")
	require.Equal(t, "1", s.ConfigMapData("kube-a", "team-a-app", "app")["v"])
	for _, k := range []api.GitRepoKey{teamA, teamB} {
		st, err := s.StatusOf(k)
		require.NoError(t, err)
		require.Equal(t, []string{"edge"}, targetedClusters(st), "fleet-default's shared is not %s's", k)
	}

	// A second cluster of team-b, on kube-a: team-b's web now deploys there too, beside team-a's, and
	// team-a's web, which plans again on the inventory change, still has its one edge.
	// Counted over every run: a GitRepo may continue as new in between.
	plans, _, err := s.CountActivitiesInAllRuns(teamA.WorkflowID(), api.ActivityPlan)
	require.NoError(t, err)
	s.AddClusterIn("team-b", "edge-a", "kube-a", nil, nil)
	s.WaitStatusOf(teamB, 3*time.Minute, "Ready on both its clusters", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && len(st.Clusters) == 2
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		n, runs, err := s.CountActivitiesInAllRuns(teamA.WorkflowID(), api.ActivityPlan)
		if assert.NoError(c, err) {
			st, _ := s.StatusOf(teamA)
			assert.Greater(c, n, plans, "Plan activities over %d run(s); team-a's status: %s, error %q, inventory generation read %d",
				runs, st.State, st.Error, st.InventoryGeneration)
		}
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "team-a's web planned against the new inventory")
	st = s.WaitStatusOf(teamA, time.Minute, "Ready", harness.AllReady)
	require.Equal(t, []string{"edge"}, targetedClusters(st), "team-b's new cluster is not team-a's")
	require.Equal(t, "1", s.ConfigMapData("kube-a", "team-b-app", "app")["v"])
	require.Len(t, s.ReleasesOf("kube-a", teamB), 1)

	// Deleting team-a's web uninstalls its release from kube-a and leaves team-b's, on kube-a and kube-b.
	require.Contains(t, s.CLIRun("delete", "-n", "team-a", "web"), "gitrepo/team-a/web: delete requested")
	require.Eventually(t, func() bool {
		rels, err := s.ListReleasesOf("kube-a", teamA)
		return err == nil && len(rels) == 0
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "team-a's release leaves kube-a")
	require.Len(t, s.ReleasesOf("kube-a", teamB), 1, "team-b's release on kube-a stays")
	require.Len(t, s.ReleasesOf("kube-b", teamB), 1, "team-b's release on kube-b stays")
	require.Equal(t, "1", s.ConfigMapData("kube-a", "team-b-app", "app")["v"])
	require.Nil(t, s.ConfigMapData("kube-a", "team-a-app", "app"))
	st, err = s.StatusOf(teamB)
	require.NoError(t, err)
	require.True(t, harness.AllReady(st), "team-b's web is still Ready: %s", st.Message)

	// team-b's edge-a leaves: team-b's web uninstalls from it and keeps its edge; fleet-default's cluster of
	// the same name is not touched and stays registered.
	s.AddCluster("edge-a", "kube-b", nil, nil)
	out := s.CLIRun("cluster", "remove", "-n", "team-b", "edge-a")
	require.Contains(t, out, "cluster/team-b/edge-a removed")
	require.Nil(t, s.ConfigMapData("kube-a", "team-b-app", "app"), "uninstalled from team-b's edge-a")
	require.Empty(t, s.ReleasesOf("kube-a", teamB))
	require.Len(t, s.ReleasesOf("kube-b", teamB), 1, "team-b's edge keeps its release")
	st = s.WaitStatusOf(teamB, time.Minute, "on its edge only", func(st api.GitRepoStatus) bool {
		return harness.AllReady(st) && len(st.Clusters) == 1 && len(st.Removing) == 0
	})
	require.Equal(t, []string{"edge"}, targetedClusters(st))
	require.Equal(t, map[string]string{"fleet-default/edge-a": s.K8s.Kubeconfig("kube-b"), "fleet-default/shared": s.K8s.Kubeconfig("kube-a")}, listedClusters(t, s),
		"fleet-default's edge-a stays")
}

// targetedClusters are the clusters a GitRepo's status lists, sorted.
func targetedClusters(st api.GitRepoStatus) []string {
	names := []string{}
	for _, c := range st.Clusters {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// listedGitRepos is what `flotilla get gitrepos ARGS -o json` lists, as namespace/name.
func listedGitRepos(t *testing.T, s *harness.Stack, args ...string) []string {
	t.Helper()
	var rows []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun(append(args, "-o", "json")...)), &rows))
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

// listedClusters is what `flotilla cluster list ARGS -o json` lists: each cluster's kubeconfig by
// namespace/name.
func listedClusters(t *testing.T, s *harness.Stack, args ...string) map[string]string {
	t.Helper()
	var inv struct {
		Clusters []struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
			Spec struct {
				KubeConfigPath string `json:"kubeConfigPath"`
			} `json:"spec"`
		} `json:"clusters"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun(append([]string{"cluster", "list", "-o", "json"}, args...)...)), &inv))
	out := map[string]string{}
	for _, c := range inv.Clusters {
		out[c.Metadata.Namespace+"/"+c.Metadata.Name] = c.Spec.KubeConfigPath
	}
	return out
}
