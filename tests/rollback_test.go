package tests

import (
	"context"
	"fmt"
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

// Rollback without git: one cluster goes back to an earlier commit by a prefix, another by the Helm
// revision its history lists; each shows pinned (OutOfSync, who and why) and drift correction restores
// the pinned state, not HEAD; clearing through `temporal workflow update execute` brings them back to
// HEAD; every cluster at once, and cleared through the CLI.
func TestARollbackPinsClustersToAnEarlierCommitUntilCleared(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	s.AddConfinedClusters("a", harness.ConfinedCluster{Name: "rb-1", Labels: map[string]string{"rb": "yes"}},
		harness.ConfinedCluster{Name: "rb-2", Labels: map[string]string{"rb": "yes"}})
	repo := s.NewRepo(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.StartGitRepo(api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "pinned"}, Spec: fleet.GitRepoSpec{
		Repo: repo.URL(), Branch: "main", PollingInterval: "1s", CorrectDrift: &fleet.CorrectDrift{Enabled: true},
		Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rb": "yes"}}}}}},
		Flotilla: &api.RunOptions{CheckInterval: "1s"}})
	v1 := s.WaitStatus("pinned", 3*time.Minute, "v1 everywhere", harness.AllReady).Commit
	v2 := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "2")}, "v2")
	s.WaitStatus("pinned", 3*time.Minute, "v2 everywhere", func(st api.GitRepoStatus) bool { return st.Commit == v2 && harness.AllReady(st) })
	value := func(cluster string) string { return s.ConfigMapData("a", cluster, "app")["v"] }

	out := s.CLIRun("rollback", "pinned", "--cluster", "rb-1", "--to", v1[:8], "--by", "alice", "--reason", "v2 breaks checkout")
	require.Contains(t, out, `pinned: cluster "rb-1" on commit `+api.ShortCommit(v1))
	st := s.WaitStatus("pinned", 2*time.Minute, "rb-1 back on v1", func(st api.GitRepoStatus) bool {
		c, _ := harness.Cluster(st, "rb-1")
		return c.Commit == v1 && c.State == api.StateOutOfSync
	})
	rb1 := mustCluster(t, st, "rb-1")
	require.Contains(t, rb1.Message, "pinned at commit "+api.ShortCommit(v1)+" by alice")
	require.Contains(t, rb1.Message, "(v2 breaks checkout)")
	require.Equal(t, api.StateOutOfSync, st.State, "not Ready at HEAD while a cluster is pinned")
	require.Len(t, st.Pins, 1)
	require.Contains(t, s.CLIRun("status", "pinned"), "Pinned: rb-1 on commit "+api.ShortCommit(v1)+" by alice: v2 breaks checkout")
	require.Equal(t, "1", value("rb-1"))
	require.Equal(t, "2", value("rb-2"))

	// Drift correction restores the pinned state.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Kube("a").CoreV1().ConfigMaps("rb-1").Delete(ctx, "app", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return s.ConfigMapData("a", "rb-1", "app")["v"] == "1" }, harness.Patience(2*time.Minute), 250*time.Millisecond,
		"the deleted ConfigMap comes back as the pinned commit has it")

	// By the Helm revision of rb-2's first deployment.
	s.CLIRun("rollback", "pinned", "--cluster", "rb-2", "--revision", "1", "--by", "bob")
	s.WaitStatus("pinned", 2*time.Minute, "rb-2 back on v1", func(st api.GitRepoStatus) bool {
		c, _ := harness.Cluster(st, "rb-2")
		return c.Commit == v1 && strings.Contains(c.Message, "pinned at commit "+api.ShortCommit(v1)+" by bob")
	})
	require.Equal(t, "1", value("rb-2"))

	temporal := func(input string) (string, error) {
		out, err := s.TemporalCommand(t.Context(), "workflow", "update", "execute",
			"--workflow-id", "gitrepo/pinned", "--name", api.UpdateRollback, "--input", input).CombinedOutput()
		return string(out), err
	}
	out, err := temporal(`{"commit":"` + v1[:8] + `"}`)
	require.Error(t, err)
	require.Contains(t, out, "is not a full commit")
	out, err = temporal(`{"clear":true,"by":"carol"}`)
	require.NoError(t, err, out)
	st = s.WaitStatus("pinned", 2*time.Minute, "back on HEAD", func(st api.GitRepoStatus) bool { return st.Commit == v2 && harness.AllReady(st) })
	require.Empty(t, st.Pins)
	require.Equal(t, "2", value("rb-1"))

	// Every cluster at once, then cleared through the CLI.
	out, err = temporal(`{"commit":"` + v1 + `","by":"dave"}`)
	require.NoError(t, err, out)
	s.WaitStatus("pinned", 2*time.Minute, "every cluster on v1", func(st api.GitRepoStatus) bool {
		a, _ := harness.Cluster(st, "rb-1")
		b, _ := harness.Cluster(st, "rb-2")
		return a.Commit == v1 && b.Commit == v1
	})
	require.Equal(t, "1", value("rb-2"))
	res := s.CLI("rollback", "pinned", "--cluster", "nowhere", "--clear")
	require.NotZero(t, res.ExitCode)
	require.Contains(t, res.Stderr, `does not deploy to cluster "nowhere"`)
	require.Contains(t, s.CLIRun("rollback", "pinned", "--clear"), "cleared: every cluster back to commit "+api.ShortCommit(v2))
	s.WaitStatus("pinned", 2*time.Minute, "back on HEAD", func(st api.GitRepoStatus) bool { return st.Commit == v2 && harness.AllReady(st) })
	require.Equal(t, "2", value("rb-2"))
	history := s.CLIRun("history", "pinned")
	require.Contains(t, history, "rollback cluster rb-1 by alice, commit "+api.ShortCommit(v1)+": v2 breaks checkout")
	require.Contains(t, history, "rollback cluster rb-2 by bob")
	require.Contains(t, history, "clear rollback by carol, commit "+api.ShortCommit(v2))
	require.Contains(t, history, "rollback by dave, commit "+api.ShortCommit(v1))
}
