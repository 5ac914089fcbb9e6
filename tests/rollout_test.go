package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// rolloutClusters are six clusters in three stages, two of each on two API servers, each confined to a
// namespace of its own name.
var rolloutClusters = []struct{ name, backing, stage string }{
	{"canary-1", "a", "canary"}, {"canary-2", "b", "canary"},
	{"early-1", "a", "early"}, {"early-2", "b", "early"},
	{"late-1", "a", "late"}, {"late-2", "b", "late"},
}

// rolloutFleetYAML partitions the clusters by stage; none of a partition's clusters may stay unavailable,
// and one cluster of the GitRepo at a time is updated.
const rolloutFleetYAML = `rolloutStrategy:
  maxUnavailable: 1
  partitions:
  - name: canary
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: canary}}
  - name: early
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: early}}
  - name: late
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: late}}
`

// neverReady is a Deployment no controller ever makes available: the clusters run no controller-manager.
const neverReady = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers: [{name: app, image: registry.example.com/stuck:1}]
`

// Fleet's rolloutStrategy on six clusters in three partitions: a good commit reaches them partition by
// partition, one cluster at a time (Helm's release times say so); a commit whose Deployment never becomes
// Ready halts at the first partition, with status, CLI and memo naming the partition and the cluster, and
// every other cluster keeps the previous commit; the next good commit replaces the halted one and goes
// through.
func TestACommitGoesPartitionByPartitionAndABadOneHaltsAtTheFirst(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}, {Name: "b"}}})
	var docs []string
	for _, c := range rolloutClusters {
		docs = append(docs, fmt.Sprintf(`apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: %s
  labels: {stage: %s}
spec:
  kubeConfigPath: %s
  confineToNamespace: %s
`, c.name, c.stage, s.K8s.Kubeconfig(c.backing), c.name))
	}
	s.Apply(strings.Join(docs, "---\n"))
	repo := s.NewRepo(map[string]string{"web/fleet.yaml": rolloutFleetYAML, "web/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.Apply(harness.GitRepoYAML("staged", repo.URL(), "  targets: [{clusterSelector: {matchExpressions: [{key: stage, operator: Exists}]}}]\n"))
	first := s.WaitStatus("staged", 3*time.Minute, "the first commit everywhere", harness.AllReady)
	require.Equal(t, 6, first.DesiredReadyClusters)
	require.NotNil(t, first.Rollout)
	require.Equal(t, "rolled out through 3 partitions", first.Rollout.Message)

	// A good commit: partition by partition, one cluster at a time.
	good := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "2")}, "v2")
	s.WaitStatus("staged", 3*time.Minute, "v2 everywhere", func(st api.GitRepoStatus) bool { return st.Commit == good && harness.AllReady(st) })
	var order []string
	updated := map[string]time.Time{}
	for _, c := range rolloutClusters {
		rel := releaseIn(t, s, c.backing, c.name)
		require.Equal(t, 2, rel.Revision, "cluster %s upgraded once", c.name)
		updated[c.name] = rel.Updated
		order = append(order, c.name)
	}
	sort.SliceStable(order, func(i, j int) bool { return updated[order[i]].Before(updated[order[j]]) })
	require.Equal(t, []string{"canary-1", "canary-2", "early-1", "early-2", "late-1", "late-2"}, order,
		"Helm upgraded the clusters in partition order, one at a time: %v", updated)

	// A bad commit halts at the canary partition.
	bad := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "3"), "web/stuck.yaml": neverReady}, "v3 never becomes ready")
	st := s.WaitStatus("staged", 3*time.Minute, "halted at canary", func(st api.GitRepoStatus) bool {
		return st.Commit == bad && st.Rollout != nil && st.Rollout.Halted == "canary"
	})
	r := st.Rollout
	require.Equal(t, []string{api.PartitionHalted, api.PartitionWaiting, api.PartitionWaiting},
		[]string{r.Partitions[0].State, r.Partitions[1].State, r.Partitions[2].State})
	require.Equal(t, []string{"canary-1", "canary-2"}, r.Partitions[0].UnavailableClusters)
	require.Contains(t, r.Message, `rollout halted at partition "canary" (1 of 3): 2 of 2 clusters unavailable, 0 allowed: cluster "canary-1": NotReady`)
	require.Contains(t, r.Message, "stuck", "the message says what is not ready")
	require.Contains(t, st.Message, `rollout halted at partition "canary"`)
	for _, c := range rolloutClusters[1:] {
		cs, _ := harness.Cluster(st, c.name)
		require.Equal(t, good, cs.Commit, "cluster %s keeps the good commit", c.name)
		require.Equal(t, "2", s.ConfigMapData(c.backing, c.name, "app")["v"], "cluster %s runs v2", c.name)
		if c.stage != "canary" {
			require.Contains(t, cs.Message, `waits for partition "canary"`, "cluster %s", c.name)
		}
	}
	require.Equal(t, "3", s.ConfigMapData("a", "canary-1", "app")["v"])

	var fromCLI api.RolloutStatus
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun("rollout", "status", "staged", "-o", "json")), &fromCLI))
	require.Equal(t, "canary", fromCLI.Halted)
	table := s.CLIRun("rollout", "status", "staged")
	require.Regexp(t, `canary\s+Halted\s+2/2\s+0\s+-\s+canary-1,canary-2`, table)
	require.Contains(t, table, "canary-1,canary-2")
	require.Contains(t, s.CLIRun("status", "staged"), `Rollout: rollout halted at partition "canary"`)
	require.Contains(t, memoOf(t, s, "gitrepo/staged", "rollout"), `rollout halted at partition "canary"`, "the Web UI's memo")

	// The next good commit replaces the halted one and goes through.
	fixed := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "4"), "web/stuck.yaml": ""}, "v4 without the stuck Deployment")
	st = s.WaitStatus("staged", 3*time.Minute, "v4 everywhere", func(st api.GitRepoStatus) bool { return st.Commit == fixed && harness.AllReady(st) })
	require.Empty(t, st.Rollout.Halted)
	for _, c := range rolloutClusters {
		require.Equal(t, "4", s.ConfigMapData(c.backing, c.name, "app")["v"], "cluster %s", c.name)
	}
}

// releaseIn is the one release of the GitRepo "staged" in a cluster's namespace.
func releaseIn(t *testing.T, s *harness.Stack, backing, namespace string) agentclient.ReleaseState {
	t.Helper()
	var found []agentclient.ReleaseState
	for _, r := range s.ReleasesOf(backing, api.KeyOf("", "staged")) {
		if r.Namespace == namespace {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "releases of staged in %s on %s", namespace, backing)
	return found[0]
}

// memoOf decodes one field of a workflow's memo.
func memoOf(t *testing.T, s *harness.Stack, workflowID, field string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := s.Client.DescribeWorkflowExecution(ctx, workflowID, "")
	require.NoError(t, err)
	p, ok := d.WorkflowExecutionInfo.GetMemo().GetFields()[field]
	require.True(t, ok, "memo has %q", field)
	var v string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

// gatedFleetYAML holds the rollout after the canary for a person's approval.
const gatedFleetYAML = `rolloutStrategy:
  maxUnavailable: 1
  partitions:
  - name: canary
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: canary}}
    gate: {approval: true}
  - name: rest
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: rest}}
`

// A person steers a rollout through the CLI and through `temporal workflow update execute` alike: the
// canary's gate waits for approval (approving another partition is refused with the reason), a paused
// rollout hands nothing over even once approved until resumed, an aborted commit stays where it stood
// (approving it is refused) until a new commit starts a new rollout. Who did what is recorded.
func TestAPersonApprovesPausesResumesAndAbortsARollout(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	s.AddConfinedClusters("a", harness.ConfinedCluster{Name: "gate-canary", Labels: map[string]string{"stage": "canary"}},
		harness.ConfinedCluster{Name: "gate-rest-1", Labels: map[string]string{"stage": "rest"}},
		harness.ConfinedCluster{Name: "gate-rest-2", Labels: map[string]string{"stage": "rest"}})
	repo := s.NewRepo(map[string]string{"web/fleet.yaml": gatedFleetYAML, "web/cm.yaml": fmt.Sprintf(configMapV, "1")})
	s.Apply(harness.GitRepoYAML("gated", repo.URL(), "  targets: [{clusterSelector: {matchExpressions: [{key: stage, operator: Exists}]}}]\n"))
	temporal := func(update, input string) (string, error) {
		out, err := s.TemporalCommand(t.Context(), "workflow", "update", "execute",
			"--workflow-id", "gitrepo/gated", "--name", update, "--input", input).CombinedOutput()
		return string(out), err
	}
	atGate := func(commit string) func(api.GitRepoStatus) bool {
		return func(st api.GitRepoStatus) bool {
			c, _ := harness.Cluster(st, "gate-canary")
			return st.Commit != "" && (commit == "" || st.Commit == commit) && c.Commit == st.Commit && c.State == api.StateReady &&
				st.Rollout != nil && st.Rollout.Gate == "canary"
		}
	}

	// The first commit stops at the canary's gate.
	st := s.WaitStatus("gated", 3*time.Minute, "the canary waits for approval", atGate(""))
	first := st.Commit
	require.Equal(t, api.PartitionAwaitingApproval, st.Rollout.Partitions[0].State)
	rest := mustCluster(t, st, "gate-rest-1")
	require.Equal(t, api.StateOutOfSync, rest.State, "the rest has nothing yet, staged")
	require.Contains(t, rest.Message, `waits for approval of partition "canary"`)
	out, err := temporal(api.UpdateRolloutApprove, `{"partition":"rest","by":"alice"}`)
	require.Error(t, err)
	require.Contains(t, out, `partition \"rest\" does not wait for approval; \"canary\" does`)
	out, err = temporal(api.UpdateRolloutApprove, `{"partition":"canary","by":"alice","reason":"canary looks fine"}`)
	require.NoError(t, err, out)
	st = s.WaitStatus("gated", 3*time.Minute, "approved, everywhere", harness.AllReady)
	require.Equal(t, "alice", st.Rollout.Partitions[0].ApprovedBy.By)
	require.Equal(t, "canary looks fine", st.Events[0].Reason)

	// Paused at the gate: an approval is recorded, but nothing moves until resume.
	second := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "2")}, "v2")
	s.WaitStatus("gated", 3*time.Minute, "v2 waits at the canary's gate", atGate(second))
	require.Contains(t, s.CLIRun("rollout", "pause", "gated", "--by", "bob", "--reason", "change freeze"), "paused")
	res := s.CLI("rollout", "pause", "gated")
	require.NotZero(t, res.ExitCode)
	require.Contains(t, res.Stderr, "the rollout is already paused, by bob")
	require.Contains(t, s.CLIRun("rollout", "approve", "gated", "--by", "bob", "--commit", api.ShortCommit(second)), `goes on past partition "canary"`)
	st = s.WaitStatus("gated", time.Minute, "approved while paused", func(st api.GitRepoStatus) bool {
		return st.Rollout != nil && st.Rollout.Paused != nil && st.Rollout.Partitions[0].ApprovedBy != nil
	})
	for _, c := range []string{"gate-rest-1", "gate-rest-2"} {
		cs := mustCluster(t, st, c)
		require.Equal(t, first, cs.Commit, "cluster %s keeps v1 while paused", c)
		require.Contains(t, cs.Message, "the rollout is paused by bob", "cluster %s", c)
		require.Contains(t, cs.Message, "(change freeze)")
	}
	require.Equal(t, "1", s.ConfigMapData("a", "gate-rest-1", "app")["v"])
	out, err = temporal(api.UpdateRolloutResume, `{"by":"carol"}`)
	require.NoError(t, err, out)
	s.WaitStatus("gated", 3*time.Minute, "v2 everywhere", func(st api.GitRepoStatus) bool { return st.Commit == second && harness.AllReady(st) })

	// Aborted: the commit stays where it stood; a new commit is a new rollout.
	third := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "3")}, "v3")
	s.WaitStatus("gated", 3*time.Minute, "v3 waits at the canary's gate", atGate(third))
	require.Contains(t, s.CLIRun("rollout", "abort", "gated", "--by", "dave", "--reason", "wrong config"), "aborted")
	out, err = temporal(api.UpdateRolloutApprove, `{"by":"erin"}`)
	require.Error(t, err)
	require.Contains(t, out, "was aborted by dave")
	st, err = s.Status("gated")
	require.NoError(t, err)
	require.Equal(t, "dave", st.Rollout.Aborted.By)
	require.Equal(t, second, mustCluster(t, st, "gate-rest-2").Commit)
	require.Equal(t, []string{"approve", "pause", "approve", "resume", "abort"}, eventActions(st.Events))
	require.Contains(t, s.CLIRun("rollout", "status", "gated"), "abort by dave, commit "+api.ShortCommit(third)+": wrong config")

	fourth := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "4")}, "v4")
	st = s.WaitStatus("gated", 3*time.Minute, "v4 starts a new rollout", atGate(fourth))
	require.Nil(t, st.Rollout.Aborted)
	require.Equal(t, "4", s.ConfigMapData("a", "gate-canary", "app")["v"])
}

func eventActions(evs []api.RolloutEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Action)
	}
	return out
}
