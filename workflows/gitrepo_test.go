package workflows

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

func shopInput(window int) api.GitRepoInput {
	return api.GitRepoInput{
		GitRepo:  fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "shop"}, Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/shop.git"}},
		Flotilla: &api.RunOptions{RolloutWindow: window},
	}
}

// fleetOf mocks Poll at commit c1 and Plan with one bundle on the clusters that clusters() names at the time.
func fleetOf(env *testsuite.TestWorkflowEnvironment, clusters func() []string) {
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, _ api.PlanInput) (api.Plan, error) {
		return *planFor(clusters()...), nil
	})
}

// fakeChildren stands in for the cluster workflow with one that runs until it is told to remove itself; it
// records when each cluster's child started, and which were told to remove.
func fakeChildren(env *testsuite.TestWorkflowEnvironment) (started map[string]time.Time, removed *[]string) {
	started = map[string]time.Time{}
	removed = &[]string{}
	env.OnActivity(api.ActivityListClusterWorkflows, mock.Anything, mock.Anything).Return(
		func(context.Context, api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
			return api.ListClusterWorkflowsResult{Clusters: sortedKeys(started)}, nil
		})
	// Registered under the cluster workflow's name rather than mocked: the test environment reports a
	// mocked child started only once it returns, and these run until removed.
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in api.ClusterWorkflowInput) error {
		started[in.Target.Cluster] = workflow.Now(ctx)
		// Until removed, or for a day, so the test environment, which waits for every child, ends.
		gone, _ := workflow.AwaitWithTimeout(ctx, 24*time.Hour, func() bool {
			return workflow.GetSignalChannel(ctx, api.SignalRemove).ReceiveAsync(nil)
		})
		if gone {
			*removed = append(*removed, in.Target.Cluster)
		}
		return nil
	}, workflow.RegisterOptions{Name: api.ClusterWorkflowType})
	return started, removed
}

func report(env *testsuite.TestWorkflowEnvironment, rep api.ClusterReport) {
	env.SignalWorkflow(api.SignalClusterReport, rep)
}

// ready is a cluster's report that its bundle runs Ready at commit c1, for deliveries up to generation.
func ready(cluster string, generation int64) api.ClusterReport {
	return api.ClusterReport{Cluster: cluster, Status: api.ClusterStatus{Name: cluster, State: api.StateReady, Commit: "c1", Reachable: true,
		Generation: generation, Bundles: []api.BundleStatus{{Name: "web", State: api.StateReady}}}}
}

// The GitRepo hands a new desired state to at most RolloutWindow clusters at a time: a cluster's report
// frees its slot at once, a cluster that never answers frees it after AckTimeout. What it knows of each
// cluster survives continue-as-new.
func TestGitRepoRollsOutThroughItsWindow(t *testing.T) {
	env := newEnv()
	fleetOf(env, func() []string { return []string{"a", "b", "c", "d"} })
	started, _ := fakeChildren(env)
	start := env.Now()

	env.RegisterDelayedCallback(func() {
		require.Len(t, started, 2, "two clusters at once")
		require.Contains(t, started, "a")
		require.Contains(t, started, "b")
		report(env, ready("a", 1))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		require.Contains(t, started, "c", "a's report freed its slot")
		require.NotContains(t, started, "d", "b and c hold the window")
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, AckTimeout+time.Minute)

	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(2))

	require.Contains(t, started, "d")
	require.GreaterOrEqual(t, started["d"].Sub(start), AckTimeout, "d waited for b's slot to time out")
	r := carriedRollout(t, env)
	require.Equal(t, api.StateReady, r.Clusters["a"].Status.State)
	require.True(t, r.Clusters["a"].Delivered.Acked)
	for _, c := range []string{"b", "c", "d"} {
		require.True(t, r.Clusters[c].Running, c)
		require.False(t, r.Clusters[c].Delivered.Acked, c)
	}
	require.Equal(t, int64(4), r.Generation)
}

// A cluster the plan no longer targets is told to uninstall; once it confirms, the GitRepo forgets it.
func TestGitRepoRemovesAClusterItNoLongerTargets(t *testing.T) {
	env := newEnv()
	clusters := []string{"a", "b", "c"}
	fleetOf(env, func() []string { return clusters })
	_, removed := fakeChildren(env)
	var afterRemoval api.GitRepoStatus

	env.RegisterDelayedCallback(func() {
		for _, c := range clusters {
			report(env, ready(c, 3))
		}
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		clusters = []string{"a", "b"}
		env.SignalWorkflow(api.SignalSync, nil)
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		require.Equal(t, []string{"c"}, *removed)
		report(env, api.ClusterReport{Cluster: "c", Removed: true})
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&afterRemoval))
		env.SetContinueAsNewSuggested(true)
	}, 40*time.Second)

	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(10))

	require.Equal(t, 2, afterRemoval.DesiredReadyClusters)
	require.Equal(t, api.StateReady, afterRemoval.State)
	require.NotContains(t, carriedRollout(t, env).Clusters, "c", "forgotten once removed")
}

// carriedRollout is the per-cluster state a GitRepo run that continued as new handed to the next one.
func carriedRollout(t *testing.T, env *testsuite.TestWorkflowEnvironment) *rollout {
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next api.GitRepoInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	carry, err := unpackCarry(next.CarryZ)
	require.NoError(t, err)
	return carry.takeRollout()
}

// Clusters leaving the inventory (`flotilla cluster remove`) are taken out at once: one is told to
// uninstall, one leaving with its workloads kept to end without touching its cluster, although together
// they are most of the GitRepo's clusters (a deliberate removal is not held); status lists them as being
// removed until they confirm, and says which inventory generation the GitRepo has read.
func TestGitRepoLetsLeavingClustersGo(t *testing.T) {
	env := newEnv()
	generation := int64(1)
	var leaving []api.LeavingCluster
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(func(context.Context, api.PollInput) (api.PollResult, error) {
		return api.PollResult{Commit: "c1", InventoryGeneration: generation, Leaving: leaving}, nil
	})
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(context.Context, api.PlanInput) (api.Plan, error) {
		p := planFor("a", "b", "c")
		p, _ = dropLeaving(p, leaving) // as the Plan activity does
		p.InventoryGeneration, p.Leaving = generation, leaving
		return *p, nil
	})
	env.OnActivity(api.ActivityListClusterWorkflows, mock.Anything, mock.Anything).Return(api.ListClusterWorkflowsResult{}, nil)
	removals := map[string]api.RemoveRequest{}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in api.ClusterWorkflowInput) error {
		var rr api.RemoveRequest
		ok, _ := workflow.AwaitWithTimeout(ctx, 24*time.Hour, func() bool {
			return workflow.GetSignalChannel(ctx, api.SignalRemove).ReceiveAsync(&rr)
		})
		if ok {
			removals[in.Target.Cluster] = rr
		}
		return nil
	}, workflow.RegisterOptions{Name: api.ClusterWorkflowType})
	var during, after api.GitRepoStatus
	query := func(st *api.GitRepoStatus) {
		v, err := env.QueryWorkflow(api.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(st))
	}

	env.RegisterDelayedCallback(func() {
		for _, c := range []string{"a", "b", "c"} {
			report(env, ready(c, 3))
		}
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		generation, leaving = 2, []api.LeavingCluster{{Name: "b"}, {Name: "c", KeepWorkloads: true}}
		env.SignalWorkflow(api.SignalSync, nil)
	}, 20*time.Second)
	env.RegisterDelayedCallback(func() {
		query(&during)
		report(env, api.ClusterReport{Cluster: "b", Removing: true, Status: api.ClusterStatus{Name: "b", State: api.StateErrApplied,
			Message: `uninstall failed, retrying until it succeeds: cluster "b" unreachable`}})
	}, 30*time.Second)
	env.RegisterDelayedCallback(func() {
		var failing api.GitRepoStatus
		query(&failing)
		require.Len(t, failing.Removing, 2)
		require.Contains(t, failing.Removing[0].Message, `cluster "b" unreachable`)
		report(env, api.ClusterReport{Cluster: "b", Removed: true})
		report(env, api.ClusterReport{Cluster: "c", Removed: true})
	}, 40*time.Second)
	env.RegisterDelayedCallback(func() {
		query(&after)
		env.SetContinueAsNewSuggested(true)
	}, 50*time.Second)

	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(10))

	require.Empty(t, during.Held, "a deliberate removal is not held")
	require.Equal(t, int64(2), during.InventoryGeneration)
	require.Equal(t, []string{"a"}, clusterNames(during.Clusters), "leaving clusters are no longer targeted")
	require.Equal(t, []string{"b", "c"}, clusterNames(during.Removing))
	require.Equal(t, "forgetting the cluster; its releases and objects stay", during.Removing[1].Message)
	require.Equal(t, map[string]api.RemoveRequest{"b": {}, "c": {Forget: true}}, removals)
	require.Empty(t, after.Removing)
	require.Equal(t, []string{"a"}, clusterNames(after.Clusters))
	require.Equal(t, api.StateReady, after.State)
	require.NotContains(t, carriedRollout(t, env).Clusters, "b")
}

func clusterNames(cs []api.ClusterStatus) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// The inventory tells every running GitRepo of a change, with its generation: a GitRepo whose last poll
// read that generation (it started after the change) does not poll again for it; an older one does, and a
// sync without a generation (a webhook, the CLI) always does.
func TestAnInventoryChangeAGitRepoHasReadIsNotPolledAgain(t *testing.T) {
	env := newEnv()
	polls := 0
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(func(context.Context, api.PollInput) (api.PollResult, error) {
		polls++
		return api.PollResult{Commit: "c1", InventoryGeneration: 3}, nil
	})
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(context.Context, api.PlanInput) (api.Plan, error) {
		p := planFor("a")
		p.InventoryGeneration = 3
		return *p, nil
	})
	fakeChildren(env)
	var after []int
	at := func(d time.Duration, signal any) {
		env.RegisterDelayedCallback(func() {
			after = append(after, polls)
			env.SignalWorkflow(api.SignalSync, signal)
		}, d)
	}
	at(10*time.Second, api.SyncRequest{InventoryGeneration: 3})
	at(20*time.Second, api.SyncRequest{InventoryGeneration: 4})
	at(30*time.Second, nil)
	env.RegisterDelayedCallback(func() {
		after = append(after, polls)
		env.SetContinueAsNewSuggested(true)
	}, 40*time.Second)
	in := shopInput(10)
	in.Spec.PollingInterval = "1h"
	in.Flotilla.ResyncInterval = "1h"
	env.ExecuteWorkflow(GitRepoWorkflow, in)

	require.Equal(t, []int{1, 1, 2, 3}, after, "generation 3 already read: no poll; 4: a poll; a plain sync: a poll")
}

// Replaying a run repeats every pass it made, each costing in proportion to the clusters: a GitRepo run
// hands over to a new one once its passes have looked at maxClusterPassesPerRun clusters in all, and the
// new run gets a workflow task timeout with room for a replay on a loaded machine. A budget larger by
// 100 passes' worth lets the same run take about 100 more reports, one pass each.
func TestAGitRepoRunOfManyClustersEndsBeforeItsReplayGrowsLong(t *testing.T) {
	budget := maxClusterPassesPerRun
	t.Cleanup(func() { maxClusterPassesPerRun = budget })
	// Under MaxChildStartsPerRun and MaxHistoryEvents, so that only the budget ends the run.
	const clusters = 480
	maxClusterPassesPerRun = 1000 * clusters
	first := reportsUntilContinueAsNew(t, clusters)
	maxClusterPassesPerRun = 1100 * clusters
	second := reportsUntilContinueAsNew(t, clusters)
	require.Greater(t, first, 0)
	require.InDelta(t, 100, second-first, 10, "reports taken: %d, then %d with 100 passes more", first, second)
}

// reportsUntilContinueAsNew runs a GitRepo of n clusters that reports one cluster a second, each report its
// own pass, until the run continues as new, and returns how many reports it took.
func reportsUntilContinueAsNew(t *testing.T, n int) int {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("edge-%03d", i)
	}
	env := newEnv()
	fleetOf(env, func() []string { return names })
	fakeChildren(env)
	// Each callback registers the next: registering thousands up front is quadratic in the test environment.
	sent := 0
	var next func()
	next = func() {
		if env.IsWorkflowCompleted() || sent > 5000 {
			return
		}
		sent++
		report(env, ready(names[sent%n], 1))
		env.RegisterDelayedCallback(next, time.Second)
	}
	env.RegisterDelayedCallback(next, time.Second)
	env.ExecuteWorkflow(GitRepoWorkflow, shopInput(n))

	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	require.Equal(t, api.GitRepoTaskTimeout, can.WorkflowTaskTimeout)
	return sent
}
