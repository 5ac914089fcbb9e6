package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

func registered(names ...string) *inventory.Inventory {
	inv := &inventory.Inventory{Clusters: []fleet.Cluster{}, Groups: []fleet.ClusterGroup{}}
	for _, n := range names {
		c := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: n}, Spec: fleet.ClusterSpec{KubeConfigPath: "/kube/" + n}}
		inv.UpsertCluster(c)
	}
	return inv
}

// inventoryEnv runs an inventory over clusters, with GitRepo notifications answered.
func inventoryEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	env := newEnv()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: api.DefaultTaskQueue})
	env.OnActivity(api.ActivityNotifyGitRepos, mock.Anything, mock.Anything).Return(api.NotifyGitReposResult{}, nil).Maybe()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

// heldUntil answers the holders activity as a GitRepo that keeps uninstalling from each leaving cluster
// until the given virtual time, then lets go; it counts the asks.
func heldUntil(env *testsuite.TestWorkflowEnvironment, until time.Duration) *int {
	asks := 0
	start := env.Now()
	env.OnActivity(api.ActivityLeavingHolders, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in api.LeavingHoldersInput) (api.LeavingHoldersResult, error) {
			asks++
			res := api.LeavingHoldersResult{}
			for _, l := range in.Clusters {
				lh := api.LeavingHolders{Name: l.Name, Namespace: l.Namespace, Generation: l.Generation, Holders: []api.Holder{}}
				if env.Now().Sub(start) < until {
					lh.Holders = []api.Holder{{GitRepo: "shop", Reason: `ErrApplied: uninstall failed, retrying until it succeeds: cluster "` + l.Name + `" unreachable`}}
				}
				res.Clusters = append(res.Clusters, lh)
			}
			return res, nil
		})
	return &asks
}

func update(env *testsuite.TestWorkflowEnvironment, name string, arg any, onDone func(any, error)) {
	env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnReject: func(err error) { onDone(nil, err) },
		OnAccept: func() {},
		OnComplete: func(v any, err error) {
			onDone(v, err)
		},
	}, arg)
}

func inventoryNow(t *testing.T, env *testsuite.TestWorkflowEnvironment) inventory.Inventory {
	v, err := env.QueryWorkflow(api.QueryInventory)
	require.NoError(t, err)
	var inv inventory.Inventory
	require.NoError(t, v.Get(&inv))
	return inv
}

func clusterNamesOf(inv inventory.Inventory) []string {
	out := []string{}
	for _, c := range inv.Clusters {
		out = append(out, c.Metadata.Name)
	}
	return out
}

// A cluster made to leave with no one waiting (`cluster remove --no-wait`) is forgotten by the inventory
// itself once its GitRepos let go: not before, and without a command left running to do it.
func TestTheInventoryForgetsALeavingClusterOnceNothingHoldsIt(t *testing.T) {
	env := inventoryEnv(t)
	asks := heldUntil(env, 5*time.Minute)
	var before, after inventory.Inventory
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateLeaveCluster, inventory.LeaveInput{Name: "edge-2"}, func(_ any, err error) { require.NoError(t, err) })
	}, time.Second)
	env.RegisterDelayedCallback(func() { before = inventoryNow(t, env) }, 4*time.Minute)
	env.RegisterDelayedCallback(func() {
		after = inventoryNow(t, env)
		env.SetContinueAsNewSuggested(true)
	}, 10*time.Minute)
	env.ExecuteWorkflow(InventoryWorkflow, api.InventoryInput{Inventory: registered("edge-1", "edge-2")})

	require.Equal(t, []string{"edge-1", "edge-2"}, clusterNamesOf(before), "held: still registered")
	require.Len(t, before.Leaving, 1)
	require.Equal(t, []string{"edge-1"}, clusterNamesOf(after), "let go: forgotten")
	require.Empty(t, after.Leaving)
	require.LessOrEqual(t, *asks, 5, "with no one waiting, an ask that finds the cluster held is not repeated at once")
}

// `cluster remove` waits through awaitClusterRemoved: it answers once the cluster is forgotten; at its
// timeout a cluster still held stays leaving and the answer names what holds it, unless the cluster keeps
// its workloads, which needs nothing of it: then it is forgotten anyway, and the answer still says who had
// not let go.
func TestAwaitingARemovalAnswersWhenTheClusterIsForgottenOrSaysWhatHoldsIt(t *testing.T) {
	env := inventoryEnv(t)
	heldUntil(env, time.Hour)
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(nil).Maybe()
	var held, kept api.AwaitClusterRemovedResult
	var refused error
	var afterKeep inventory.Inventory
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateLeaveCluster, inventory.LeaveInput{Name: "edge-2"}, func(_ any, err error) { require.NoError(t, err) })
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateAwaitClusterRemoved, api.AwaitClusterRemovedInput{Name: "edge-1", Timeout: time.Minute}, func(_ any, err error) { refused = err })
		update(env, api.UpdateAwaitClusterRemoved, api.AwaitClusterRemovedInput{Name: "edge-2", Timeout: 3 * time.Minute}, func(v any, err error) {
			require.NoError(t, err)
			held = v.(api.AwaitClusterRemovedResult)
		})
	}, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateLeaveCluster, inventory.LeaveInput{Name: "edge-2", KeepWorkloads: true}, func(_ any, err error) { require.NoError(t, err) })
		update(env, api.UpdateAwaitClusterRemoved, api.AwaitClusterRemovedInput{Name: "edge-2", Timeout: 3 * time.Minute}, func(v any, err error) {
			require.NoError(t, err)
			kept = v.(api.AwaitClusterRemovedResult)
			afterKeep = inventoryNow(t, env)
		})
	}, 5*time.Minute)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 20*time.Minute)
	env.ExecuteWorkflow(InventoryWorkflow, api.InventoryInput{Inventory: registered("edge-1", "edge-2")})

	require.ErrorContains(t, refused, `cluster "edge-1" is not leaving`)
	require.False(t, held.Removed, "still held at the timeout: it stays leaving")
	require.Equal(t, []api.Holder{{GitRepo: "shop", Reason: `ErrApplied: uninstall failed, retrying until it succeeds: cluster "edge-2" unreachable`}}, held.Holders)
	require.True(t, kept.Removed, "keeping its workloads needs nothing of the cluster")
	require.True(t, kept.KeepWorkloads)
	require.Len(t, kept.Holders, 1, "the answer says who had not let go")
	require.Equal(t, []string{"edge-1"}, clusterNamesOf(afterKeep))
}

// An agent-mode cluster's AgentWorkflow is told to check when the inventory forgets the cluster, so it
// ends now rather than at its next resync.
func TestForgettingAnAgentModeClusterTellsItsAgentWorkflow(t *testing.T) {
	env := inventoryEnv(t)
	heldUntil(env, 0)
	env.OnSignalExternalWorkflow(mock.Anything, api.AgentWorkflowID(api.DefaultTaskQueue, fleet.DefaultNamespace, "edge-a"), "", api.SignalCheck, mock.Anything).Return(nil).Once()
	inv := registered("edge-1")
	inv.UpsertCluster(fleet.Cluster{Metadata: fleet.ObjectMeta{Name: "edge-a"}, Spec: fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}}})
	var res api.AwaitClusterRemovedResult
	env.RegisterDelayedCallback(func() {
		update(env, api.UpdateLeaveCluster, inventory.LeaveInput{Name: "edge-a"}, func(_ any, err error) { require.NoError(t, err) })
		update(env, api.UpdateAwaitClusterRemoved, api.AwaitClusterRemovedInput{Name: "edge-a", Timeout: time.Minute}, func(v any, err error) {
			require.NoError(t, err)
			res = v.(api.AwaitClusterRemovedResult)
		})
	}, time.Second)
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 5*time.Minute)
	env.ExecuteWorkflow(InventoryWorkflow, api.InventoryInput{Inventory: inv})

	require.True(t, res.Removed)
	require.Empty(t, res.Holders)
}
