package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

func webIn(workspace, metadataNamespace string) api.GitRepoInput {
	return api.GitRepoInput{
		GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "web", Namespace: metadataNamespace},
			Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/web.git"}},
		Workspace: workspace,
	}
}

// A GitRepo of workspace team-a plans in team-a, starts its cluster workflows under its own IDs with
// targets that name team-a (what they report to, and whose releases they own), shows its namespace in
// its status and hands it to the run that continues it.
func TestAGitRepoOfAWorkspaceKeysEverythingByIt(t *testing.T) {
	env := newEnv()
	var planned []api.PlanInput
	env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
	env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.PlanInput) (api.Plan, error) {
		planned = append(planned, in)
		return *planFor("edge"), nil
	})
	var listed []api.ListClusterWorkflowsInput
	env.OnActivity(api.ActivityListClusterWorkflows, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
			listed = append(listed, in)
			return api.ListClusterWorkflowsResult{Clusters: []string{"edge"}}, nil
		})
	childIDs := map[string]api.ClusterTarget{}
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in api.ClusterWorkflowInput) error {
		childIDs[workflow.GetInfo(ctx).WorkflowExecution.ID] = in.Target
		_, _ = workflow.AwaitWithTimeout(ctx, 24*time.Hour, func() bool { return false })
		return nil
	}, workflow.RegisterOptions{Name: api.ClusterWorkflowType})
	var st api.GitRepoStatus
	var spec fleet.GitRepo
	env.RegisterDelayedCallback(func() {
		report(env, ready("edge", 1))
		v, err := env.QueryWorkflow(api.QuerySpec)
		require.NoError(t, err)
		require.NoError(t, v.Get(&spec))
	}, 10*time.Second)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(api.QueryStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
		env.SetContinueAsNewSuggested(true)
	}, DefaultResyncInterval+time.Minute)

	env.ExecuteWorkflow(GitRepoWorkflow, webIn("team-a", ""))

	require.NotEmpty(t, planned)
	require.Equal(t, "team-a", planned[0].Namespace)
	require.NotEmpty(t, listed, "the resync listed its cluster workflows")
	require.Equal(t, api.ListClusterWorkflowsInput{GitRepo: "web", Namespace: "team-a"}, listed[0])
	require.Contains(t, childIDs, "gitrepo/team-a/web/cluster/edge")
	require.Len(t, childIDs, 1)
	target := childIDs["gitrepo/team-a/web/cluster/edge"]
	require.Equal(t, api.KeyOf("team-a", "web"), target.Key())
	require.Equal(t, "gitrepo/team-a/web", target.Key().WorkflowID(), "where it reports")
	require.Equal(t, "team-a", st.Namespace)
	require.Equal(t, "team-a", spec.Metadata.Namespace, "a spec naming no namespace shows the one it runs in")
	require.Equal(t, "web", st.Name)
	require.Equal(t, api.StateReady, st.State)

	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	var next api.GitRepoInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "team-a", next.Workspace, "the next run is the same GitRepo")
}

// A fleet-default GitRepo sends what it sent before workspaces: no namespace in its payloads, and its
// cluster workflows' IDs as they were, whatever namespace its YAML named (a run started before
// workspaces with metadata.namespace fleet-local is fleet-default's, as its ID says).
func TestAFleetDefaultGitRepoKeepsItsIDsAndPayloads(t *testing.T) {
	for _, ns := range []string{"", fleet.DefaultNamespace, "fleet-local"} {
		t.Run("metadata.namespace "+ns, func(t *testing.T) {
			env := newEnv()
			var planned []api.PlanInput
			env.OnActivity(api.ActivityPoll, mock.Anything, mock.Anything).Return(api.PollResult{Commit: "c1", InventoryGeneration: 1}, nil)
			env.OnActivity(api.ActivityPlan, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.PlanInput) (api.Plan, error) {
				planned = append(planned, in)
				return *planFor("edge"), nil
			})
			childIDs := map[string]api.ClusterTarget{}
			env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in api.ClusterWorkflowInput) error {
				childIDs[workflow.GetInfo(ctx).WorkflowExecution.ID] = in.Target
				return nil
			}, workflow.RegisterOptions{Name: api.ClusterWorkflowType})
			env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 10*time.Second)

			env.ExecuteWorkflow(GitRepoWorkflow, webIn("", ns))

			require.Equal(t, "", planned[0].Namespace)
			require.Contains(t, childIDs, "gitrepo/web/cluster/edge")
			require.Equal(t, "", childIDs["gitrepo/web/cluster/edge"].Namespace)
		})
	}
}

// A run's workspace and its GitRepo's metadata.namespace cannot disagree: the run would plan in one and
// say it is in the other. A spec signal of another workspace is refused the same way.
func TestAGitRepoWhoseNamespaceIsNotItsWorkspaceIsRefused(t *testing.T) {
	env := newEnv()
	env.ExecuteWorkflow(GitRepoWorkflow, webIn("team-a", "team-b"))
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	require.Equal(t, api.ErrTypeInvalidGitRepo, appErr.Type())
	require.Contains(t, appErr.Error(), `gitrepo "team-a/web": metadata.namespace "team-b" is not its namespace "team-a"`)

	require.NoError(t, validateWorkspace(webIn("", "").GitRepo, "team-a"), "no metadata.namespace takes the workspace")
	require.NoError(t, validateWorkspace(webIn("", "fleet-local").GitRepo, ""), "fleet-default runs take any, as before")
	require.Error(t, validateWorkspace(webIn("", "").GitRepo, "Team_A"))
}

// A cluster workflow reports to the GitRepo its target names, namespace included: team-a's shop, not
// fleet-default's shop.
func TestAClusterWorkflowReportsToTheGitRepoOfItsWorkspace(t *testing.T) {
	env := newEnv()
	observeNewThenDeployed(env)
	env.OnActivity(api.ActivityApply, mock.Anything, mock.Anything).Return(api.ApplyResult{Bundles: []api.BundleApplyResult{{Bundle: "web", Revision: 1}}}, nil)
	var reports []api.ClusterReport
	env.OnSignalExternalWorkflow(mock.Anything, "gitrepo/team-a/shop", "", api.SignalClusterReport, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error { reports = append(reports, arg.(api.ClusterReport)); return nil })
	var uninstalled []api.UninstallInput
	env.OnActivity(api.ActivityUninstall, mock.Anything, mock.Anything).Return(func(_ context.Context, in api.UninstallInput) (api.UninstallResult, error) {
		uninstalled = append(uninstalled, in)
		return api.UninstallResult{}, nil
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalRemove, api.RemoveRequest{}) }, 5*time.Minute)
	in := clusterInput()
	in.Target.Namespace = "team-a"

	env.ExecuteWorkflow(ClusterWorkflow, in)

	require.NoError(t, env.GetWorkflowError())
	require.NotEmpty(t, reports)
	require.Equal(t, api.StateReady, reports[0].Status.State)
	require.Len(t, uninstalled, 1)
	require.Equal(t, api.KeyOf("team-a", "shop"), uninstalled[0].Key(), "it uninstalls team-a's shop's releases")
}
