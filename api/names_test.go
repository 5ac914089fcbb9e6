package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The default installation keeps the inventory ID it always had, so a running inventory and recorded
// histories stay valid; any other installation gets one of its own that no GitRepo can take.
func TestEachInstallationHasItsOwnInventory(t *testing.T) {
	require.Equal(t, "flotilla/inventory", InventoryWorkflowID(DefaultTaskQueue))
	require.Equal(t, "flotilla/inventory/flotilla-staging", InventoryWorkflowID("flotilla-staging"))
	require.NotEqual(t, InventoryWorkflowID("a"), InventoryWorkflowID("b"))
}

// A GitRepo list sees only the workflows on the installation's task queue.
func TestGitRepoQueriesAreScopedToOneInstallation(t *testing.T) {
	require.Equal(t, "WorkflowType = 'GitRepoWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla-staging'",
		RunningGitReposQuery("flotilla-staging"))
	require.Equal(t, "WorkflowType = 'ClusterWorkflow' AND FlotillaGitRepo = 'shop' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'",
		RunningClusterWorkflowsQuery(DefaultTaskQueue, KeyOf("", "shop")))
	require.Equal(t, "WorkflowType = 'ClusterWorkflow' AND FlotillaGitRepo = 'shop' AND FlotillaNamespace = 'team-a' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'",
		RunningClusterWorkflowsQuery(DefaultTaskQueue, KeyOf("team-a", "shop")))
	require.Equal(t, "WorkflowType = 'ClusterWorkflow' AND FlotillaCluster = 'edge-2' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'",
		RunningWorkflowsOnClusterQuery(DefaultTaskQueue, "", "edge-2"))
	require.Equal(t, "WorkflowType = 'ClusterWorkflow' AND FlotillaCluster = 'edge-2' AND FlotillaNamespace = 'team-a' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'",
		RunningWorkflowsOnClusterQuery(DefaultTaskQueue, "team-a", "edge-2"))
}

func TestTaskQueueNamesStayInsideIDsAndQuotes(t *testing.T) {
	for _, ok := range []string{"flotilla", "flotilla-staging", "team_a.prod", "Q1"} {
		require.NoError(t, CheckTaskQueue(ok), ok)
	}
	for q, want := range map[string]string{
		"":          `task queue is empty`,
		"team/a":    `task queue "team/a": "/" is not allowed (letters, digits, '.', '_' and '-' are)`,
		"it's":      `task queue "it's": "'" is not allowed (letters, digits, '.', '_' and '-' are)`,
		"two words": `task queue "two words": " " is not allowed (letters, digits, '.', '_' and '-' are)`,
	} {
		require.EqualError(t, CheckTaskQueue(q), want, q)
	}
}
