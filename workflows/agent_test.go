package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/api"
)

// agentEnv is newEnv with the agent's KeepAgent registered too, for the test to mock.
func agentEnv() *testsuite.TestWorkflowEnvironment {
	env := newEnv()
	var unmocked *activities.Activities
	env.RegisterActivityWithOptions(unmocked.KeepAgent, activity.RegisterOptions{Name: api.ActivityKeepAgent})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: "flotilla"})
	return env
}

// fakeAgent is an agent's release as KeepAgent finds and changes it: it applies when the recorded digest
// is not the desired one, as the real activity does. Calls are recorded, never asserted inside the mock.
type fakeAgent struct {
	recorded string
	revision int
	queues   []string
	inputs   []api.KeepAgentInput
	applied  int
}

func (f *fakeAgent) keep(ctx context.Context, in api.KeepAgentInput) (api.KeepAgentResult, error) {
	f.queues, f.inputs = append(f.queues, activity.GetInfo(ctx).TaskQueue), append(f.inputs, in)
	if f.recorded == in.Digest {
		return api.KeepAgentResult{Revision: f.revision, Digest: in.Digest}, nil
	}
	f.recorded, f.revision = in.Digest, f.revision+1
	f.applied++
	return api.KeepAgentResult{Applied: true, Revision: f.revision, Digest: in.Digest}, nil
}

// mockAgentDesired mocks AgentDesired with *digest, read at each call.
func mockAgentDesired(env *testsuite.TestWorkflowEnvironment, digest *string, reads *int) {
	env.OnActivity(api.ActivityAgentDesired, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.AgentDesiredInput) (api.AgentDesired, error) {
		*reads++
		if *digest == "" {
			return api.AgentDesired{Reason: "cluster \"edge-1\" is not in agent mode"}, nil
		}
		return api.AgentDesired{Keep: true, Namespace: "flotilla-system", Digest: *digest, Manifests: "kind: Deployment\n"}, nil
	})
}

func queryAgent(t *testing.T, env *testsuite.TestWorkflowEnvironment) api.AgentStatus {
	t.Helper()
	v, err := env.QueryWorkflow(api.QueryStatus)
	require.NoError(t, err)
	var st api.AgentStatus
	require.NoError(t, v.Get(&st))
	return st
}

// A release that records another digest is applied once, on the agent's own queue; the resync checks
// that follow find the digest equal and apply nothing; when the cluster leaves agent mode the workflow ends.
func TestAgentWorkflowAppliesOnceWhenTheDigestDiffersAndRechecksOnItsTimer(t *testing.T) {
	env := agentEnv()
	digest, reads := "sha256:one", 0
	mockAgentDesired(env, &digest, &reads)
	agent := &fakeAgent{recorded: "sha256:old", revision: 1}
	env.OnActivity(api.ActivityKeepAgent, mock.Anything, mock.Anything).Return(agent.keep)
	var mid api.AgentStatus
	env.RegisterDelayedCallback(func() { mid = queryAgent(t, env) }, 3*AgentResyncInterval+time.Minute)
	env.RegisterDelayedCallback(func() { digest = "" }, 4*AgentResyncInterval+time.Minute)

	env.ExecuteWorkflow(AgentWorkflow, api.AgentWorkflowInput{Cluster: "edge-1"})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "a cluster out of agent mode ends its workflow")
	require.Equal(t, 1, agent.applied, "applied once, when the release recorded another digest")
	require.Len(t, agent.inputs, 5, "the first check and one per resync until the cluster left agent mode")
	require.Equal(t, 6, reads)
	for i, q := range agent.queues {
		require.Equal(t, "flotilla-agent.fleet-default.edge-1", q, "check %d goes to the agent's queue", i)
		require.Equal(t, "sha256:one", agent.inputs[i].Digest)
	}
	require.Equal(t, "sha256:one", mid.DesiredDigest)
	require.Equal(t, "sha256:one", mid.AppliedDigest)
	require.Equal(t, 2, mid.Revision)
	require.Equal(t, 4, mid.Checks)
	require.False(t, mid.LastApplied.IsZero())
	require.True(t, mid.LastChecked.After(mid.LastApplied), "later checks do not count as applies")
	require.Empty(t, mid.Error)
}

// A release that already records the desired digest (an agent adopted before, a restart) is never applied.
func TestAgentWorkflowAppliesNothingWhenTheDigestIsEqual(t *testing.T) {
	env := agentEnv()
	digest, reads := "sha256:one", 0
	mockAgentDesired(env, &digest, &reads)
	agent := &fakeAgent{recorded: "sha256:one", revision: 1}
	env.OnActivity(api.ActivityKeepAgent, mock.Anything, mock.Anything).Return(agent.keep)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalCheck, nil) }, time.Minute)
	env.RegisterDelayedCallback(func() { digest = "" }, 2*AgentResyncInterval+2*time.Minute)

	env.ExecuteWorkflow(AgentWorkflow, api.AgentWorkflowInput{Cluster: "edge-1"})

	require.NoError(t, env.GetWorkflowError())
	require.Zero(t, agent.applied)
	require.Len(t, agent.inputs, 4, "the first check, the signalled one and two resyncs")
	require.Equal(t, 1, agent.revision)
}

// A changed setting is signalled: the workflow reads the new digest at once and the agent applies it
// exactly once, whatever signals (a repeated one, a worker restart's) and resyncs follow.
func TestAgentWorkflowAppliesOnceAfterAChangeSignal(t *testing.T) {
	env := agentEnv()
	digest, reads := "sha256:one", 0
	mockAgentDesired(env, &digest, &reads)
	agent := &fakeAgent{recorded: "sha256:one", revision: 1}
	env.OnActivity(api.ActivityKeepAgent, mock.Anything, mock.Anything).Return(agent.keep)
	var afterChange api.AgentStatus
	env.RegisterDelayedCallback(func() {
		digest = "sha256:two"
		env.SignalWorkflow(api.SignalCheck, nil)
		env.SignalWorkflow(api.SignalCheck, nil)
	}, time.Minute)
	env.RegisterDelayedCallback(func() { afterChange = queryAgent(t, env) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalCheck, nil) }, 3*time.Minute)
	env.RegisterDelayedCallback(func() { digest = "" }, AgentResyncInterval+4*time.Minute)

	env.ExecuteWorkflow(AgentWorkflow, api.AgentWorkflowInput{Cluster: "edge-1"})

	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, 1, agent.applied, "one rollout for one change")
	require.Equal(t, 2, agent.revision)
	require.Equal(t, "sha256:two", afterChange.AppliedDigest, "applied right after the signal, not at the next resync")
}

// An agent that does not pick its check up fails the check without holding the loop; the check is tried
// again later, and the status says the agent is offline until it returns.
func TestAgentWorkflowRetriesAnAbsentAgentLater(t *testing.T) {
	env := agentEnv()
	digest, reads := "sha256:one", 0
	mockAgentDesired(env, &digest, &reads)
	agent := &fakeAgent{recorded: "sha256:old", revision: 1}
	away := 2
	env.OnActivity(api.ActivityKeepAgent, mock.Anything, mock.Anything).Return(func(ctx context.Context, in api.KeepAgentInput) (api.KeepAgentResult, error) {
		if away > 0 {
			away--
			return api.KeepAgentResult{}, scheduleToStartTimeout()
		}
		return agent.keep(ctx, in)
	})
	var offline api.AgentStatus
	env.RegisterDelayedCallback(func() { offline = queryAgent(t, env) }, time.Second)
	env.RegisterDelayedCallback(func() { digest = "" }, AgentResyncInterval)

	env.ExecuteWorkflow(AgentWorkflow, api.AgentWorkflowInput{Cluster: "edge-1"})

	require.NoError(t, env.GetWorkflowError())
	require.Contains(t, offline.Error, `cluster "edge-1": agent offline`)
	require.Empty(t, offline.AppliedDigest)
	require.Equal(t, 1, agent.applied, "applied once the agent returned")
}

// The workflow's ID names the installation, the workspace and the cluster.
func TestAgentWorkflowID(t *testing.T) {
	require.Equal(t, "agent/fleet-default/edge-1", api.AgentWorkflowID(api.DefaultTaskQueue, "", "edge-1"))
	require.Equal(t, "agent/team-a/edge-1", api.AgentWorkflowID(api.DefaultTaskQueue, "team-a", "edge-1"))
	require.Equal(t, "agent/staging/team-a/edge-1", api.AgentWorkflowID("staging", "team-a", "edge-1"))
}
