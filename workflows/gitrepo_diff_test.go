package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
)

// A diff asks the GitRepo what its clusters get next: the current commit's targets, page by page in name
// order, or another commit's, planned once for all its pages; what it cannot diff is refused with the
// reason, and nothing it does changes what the clusters run.
func TestADiffListsWhatEachClusterGetsNextPageByPage(t *testing.T) {
	env := newEnv()
	var names []string
	for i := range api.DiffPageSize + 2 {
		names = append(names, fmt.Sprintf("edge-%02d", i))
	}
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
	other := strings.Repeat("d", 40)
	var planned []string
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.PlanInput) (api.Plan, error) {
		planned = append(planned, in.Commit)
		p := planFor(names...)
		if in.Commit == other {
			p = planFor("edge-00", "edge-new")
			p.Commit = in.Commit
		}
		return *p, nil
	})
	started, _ := fakeChildren(env)
	var first, second, byCommit, again api.DiffTargets
	env.RegisterDelayedCallback(func() {
		require.Len(t, started, len(names))
		update(env, api.UpdateDiff, api.DiffInput{}, func(v any, err error) {
			require.NoError(t, err)
			first = v.(api.DiffTargets)
		})
		update(env, api.UpdateDiff, api.DiffInput{Cluster: "nowhere"}, func(_ any, err error) {
			require.ErrorContains(t, err, `gitrepo "shop" does not deploy to cluster "nowhere"`)
		})
		update(env, api.UpdateDiff, api.DiffInput{Commit: "dddd"}, func(_ any, err error) {
			require.ErrorContains(t, err, `"dddd" is not a full commit`)
		})
		update(env, api.UpdateDiff, api.DiffInput{Commit: other, Cluster: "edge-new"}, func(v any, err error) {
			require.NoError(t, err)
			byCommit = v.(api.DiffTargets)
		})
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateDiff, api.DiffInput{After: first.Next}, func(v any, err error) {
			require.NoError(t, err)
			second = v.(api.DiffTargets)
		})
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateDiff, api.DiffInput{Commit: other, Cluster: "edge-01"}, func(_ any, err error) {
			require.ErrorContains(t, err, `commit dddddddddddd does not deploy to cluster "edge-01"`)
		})
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateDiff, api.DiffInput{Commit: other}, func(v any, err error) {
			require.NoError(t, err)
			again = v.(api.DiffTargets)
		})
	}, 40*time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, time.Minute)
	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(100))

	require.Equal(t, "c1", first.Commit)
	require.NotEmpty(t, first.TaskQueue)
	require.Len(t, first.Targets, api.DiffPageSize)
	require.Equal(t, "edge-00", first.Targets[0].Target.Cluster)
	require.Equal(t, names[api.DiffPageSize-1], first.Next)
	require.Len(t, second.Targets, 2)
	require.Equal(t, names[api.DiffPageSize], second.Targets[0].Target.Cluster)
	require.Empty(t, second.Next)
	require.Equal(t, other, byCommit.Commit)
	require.Len(t, byCommit.Targets, 1)
	require.Equal(t, other, byCommit.Targets[0].Target.Commit)
	require.Len(t, again.Targets, 2)
	times := 0
	for _, c := range planned {
		if c == other {
			times++
		}
	}
	require.Equal(t, 1, times, "the other commit is planned once for all its pages")
}

// DiffWorkflow asks every cluster at once and answers in the targets' order: a cluster that cannot answer
// has its error beside the others' diffs, and a pull-mode cluster is asked through its agent's queue.
func TestADiffWorkflowAnswersForEveryClusterEvenWhenOneFails(t *testing.T) {
	env := newEnv()
	env.RegisterWorkflow(DiffWorkflow)
	env.OnActivity(api.ActivityPrepare, mock.Anything, mock.Anything).Return(api.PrepareResult{Bundles: webPrepared, Grant: "g"}, nil)
	var agentGot api.DiffClusterInput
	env.OnActivity(api.ActivityDiff, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.DiffClusterInput) (api.ClusterDiff, error) {
		switch in.Target.Cluster {
		case "lost":
			return api.ClusterDiff{}, temporal.NewNonRetryableApplicationError(`cluster "lost" unreachable: connection refused`, api.ErrTypeUnreachable, nil)
		case "pulled":
			agentGot = in
		}
		return api.ClusterDiff{Cluster: in.Target.Cluster, Commit: in.Target.Commit, Bundles: []api.BundleDiff{{Bundle: "web", Action: api.DiffUpgrade}}}, nil
	})
	targets := []api.DiffTarget{{Target: api.ClusterTarget{Cluster: "a", Commit: "c2"}}, {Target: api.ClusterTarget{Cluster: "lost", Commit: "c2"}},
		{Target: api.ClusterTarget{Cluster: "pulled", Commit: "c2", Agent: true}, Generation: 3}}
	env.ExecuteWorkflow(DiffWorkflow, api.DiffWorkflowInput{GitRepo: "shop", Commit: "c2", Targets: targets})

	require.NoError(t, env.GetWorkflowError())
	var res api.DiffResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Len(t, res.Clusters, 3)
	require.Equal(t, "a", res.Clusters[0].Cluster)
	require.True(t, res.Clusters[0].Changed())
	require.Equal(t, "lost", res.Clusters[1].Cluster)
	require.Equal(t, `cluster "lost" unreachable: connection refused`, res.Clusters[1].Error)
	require.True(t, res.Clusters[1].Failed())
	require.Equal(t, "pulled", res.Clusters[2].Cluster)
	require.Equal(t, "g", agentGot.Grant, "the agent gets what the management side prepared for it")
	require.Equal(t, int64(3), agentGot.Generation)
	require.Equal(t, webPrepared, agentGot.Prepared)
}
