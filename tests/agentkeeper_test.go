package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Fleet's seed bug 002, done right (ADR 23): Flotilla keeps a registered agent's Deployment as a release
// in its cluster, applied through the agent. The release adopts what the operator applied without rolling
// it; ten restarts of the worker, the agent and the Temporal server roll nothing; one changed setting is
// exactly one rollout.
func TestTheAgentsDeploymentRollsOnlyWhenItsConfigurationChanges(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "e"}}, OwnTemporal: true})
	s.AddAgentCluster("e", nil, nil)
	// The operator applies the agent's manifest in the cluster, then the agent runs (here on the host: the
	// Deployment is only an object in the API server).
	s.CreateObjects("e", []byte(s.CLIRun("agent", "manifest", "e")))
	agent := s.StartAgent("e", "e")
	ctx := context.Background()
	id := api.AgentWorkflowID(api.DefaultTaskQueue, "", "e")
	// The first check may have found no agent yet; this one need not wait for the retry.
	require.NoError(t, s.Client.SignalWorkflow(ctx, id, "", api.SignalCheck, nil))
	first := s.WaitAgentStatus("e", time.Minute, "the operator's objects adopted", func(st api.AgentStatus) bool {
		return st.Error == "" && st.AppliedDigest != "" && st.AppliedDigest == st.DesiredDigest
	})
	require.Equal(t, 1, first.Revision)
	require.False(t, first.LastApplied.IsZero())
	require.Eventually(t, func() bool {
		return s.CountWorkflows("WorkflowType = '"+api.AgentWorkflowType+"' AND "+api.SearchAttrCluster+" = 'e' AND "+
			api.SearchAttrNamespace+" = 'fleet-default' AND ExecutionStatus = 'Running'") == 1
	}, harness.Patience(30*time.Second), 200*time.Millisecond, "the Web UI finds the workflow by its cluster")

	deployments := s.Kube("e").AppsV1().Deployments("flotilla-system")
	dep, err := deployments.Get(ctx, "flotilla-agent", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "Helm", dep.Labels["app.kubernetes.io/managed-by"], "the release adopted the operator's Deployment")
	generation := dep.Generation

	require.EqualValues(t, 1, generation, "adoption changed nothing: the manifest carried Helm's ownership already")

	checks := first.Checks
	for i := 0; i < 10; i++ {
		s.KillWorker()
		require.NoError(t, agent.Kill())
		s.RestartTemporal()
		restarted := time.Now()
		agent = s.StartAgent("e", "e")
		s.StartWorker()
		st := s.WaitAgentStatus("e", time.Minute, "a check after restart", func(st api.AgentStatus) bool {
			return st.Checks > checks && st.Error == "" && st.LastChecked.After(restarted.Add(-time.Second))
		})
		checks = st.Checks
		require.Equal(t, first.AppliedDigest, st.AppliedDigest)
		require.Equal(t, first.LastApplied, st.LastApplied, "restart %d applied nothing", i+1)
	}
	dep, err = deployments.Get(ctx, "flotilla-agent", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, generation, dep.Generation, "ten restarts rolled nothing")
	require.Len(t, s.History("e", "flotilla-system", api.AgentReleaseName), 1, "one Helm revision: the adoption")

	s.CLIRun("cluster", "add", "e", "--agent", "--replace", "--agent-log-level", "debug")
	changed := s.WaitAgentStatus("e", time.Minute, "the changed setting applied", func(st api.AgentStatus) bool {
		return st.Error == "" && st.DesiredDigest != first.DesiredDigest && st.AppliedDigest == st.DesiredDigest
	})
	require.Equal(t, 2, changed.Revision)
	// One more check (a worker restart's) finds the release as wanted.
	require.NoError(t, s.Client.SignalWorkflow(ctx, id, "", api.SignalCheck, nil))
	s.WaitAgentStatus("e", time.Minute, "one more check", func(st api.AgentStatus) bool { return st.Checks > changed.Checks })

	dep, err = deployments.Get(ctx, "flotilla-agent", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, generation+1, dep.Generation, "one setting changed, one rollout")
	require.Len(t, s.History("e", "flotilla-system", api.AgentReleaseName), 2)
	env := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	require.Equal(t, "debug", env["FLOTILLA_LOG_LEVEL"])

	// Removing the cluster ends the workflow that kept its agent.
	res := s.CLIWithin(time.Minute, "cluster", "remove", "e")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Eventually(t, func() bool {
		d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
		return err == nil && d.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, harness.Patience(30*time.Second), 200*time.Millisecond, "the AgentWorkflow ended with its cluster")
}
