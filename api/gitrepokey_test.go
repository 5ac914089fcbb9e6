package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// fleet-default keeps the IDs GitRepos had before workspaces, so running workflows and recorded histories
// stay valid; a GitRepo of the same name in another workspace gets IDs of its own.
func TestWorkspacesKeepTheirGitReposApart(t *testing.T) {
	def, alsoDef := KeyOf("", "web"), KeyOf("fleet-default", "web")
	require.Equal(t, def, alsoDef, "no namespace is fleet-default")
	require.Equal(t, "gitrepo/web", def.WorkflowID())
	require.Equal(t, "gitrepo/web/cluster/edge", def.ClusterWorkflowID("edge"))
	require.Equal(t, GitRepoWorkflowID("web"), def.WorkflowID())
	require.Equal(t, ClusterWorkflowID("web", "edge"), def.ClusterWorkflowID("edge"))

	a, b := KeyOf("team-a", "web"), KeyOf("team-b", "web")
	require.Equal(t, "gitrepo/team-a/web", a.WorkflowID())
	require.Equal(t, "gitrepo/team-a/web/cluster/edge", a.ClusterWorkflowID("edge"))
	require.NotEqual(t, a.WorkflowID(), b.WorkflowID())
	require.NotEqual(t, a.ClusterWorkflowID("edge"), b.ClusterWorkflowID("edge"))

	// Names are DNS labels: however they are chosen, no GitRepo or cluster workflow takes another's ID.
	ids := map[string]string{}
	for _, ns := range []string{"", "web", "cluster", "team-a"} {
		for _, name := range []string{"web", "cluster", "team-a", "edge"} {
			k := KeyOf(ns, name)
			for _, id := range []string{k.WorkflowID(), k.ClusterWorkflowID("edge"), k.ClusterWorkflowID("cluster")} {
				if other, taken := ids[id]; taken {
					t.Fatalf("%s is the ID of %s and of %s", id, other, k.Qualified())
				}
				ids[id] = k.Qualified()
			}
		}
	}
	require.NotContains(t, ids, InventoryWorkflowID(DefaultTaskQueue))
}

func TestWorkflowIDsParseBackToTheirGitRepo(t *testing.T) {
	for _, k := range []GitRepoKey{KeyOf("", "web"), KeyOf("team-a", "web"), KeyOf("web", "cluster")} {
		got, ok := ParseGitRepoWorkflowID(k.WorkflowID())
		require.True(t, ok, k.WorkflowID())
		require.Equal(t, k, got)
		got, cluster, ok := ParseClusterWorkflowID(k.ClusterWorkflowID("edge"))
		require.True(t, ok, k.ClusterWorkflowID("edge"))
		require.Equal(t, k, got)
		require.Equal(t, "edge", cluster)
		_, ok = ParseGitRepoWorkflowID(k.ClusterWorkflowID("edge"))
		require.False(t, ok, "a cluster workflow is no GitRepo")
		_, _, ok = ParseClusterWorkflowID(k.WorkflowID())
		require.False(t, ok, "a GitRepo is no cluster workflow")
	}
	for _, id := range []string{"flotilla/inventory", "flotilla/inventory/q", "gitrepo/", "gitrepo", "gitrepo//web", "gitrepo/a/b/c"} {
		_, ok := ParseGitRepoWorkflowID(id)
		require.False(t, ok, id)
	}
}

func TestMessagesNameAGitRepoByItsWorkspace(t *testing.T) {
	require.Equal(t, "web", KeyOf("", "web").String(), "fleet-default messages stay as they were")
	require.Equal(t, "team-a/web", KeyOf("team-a", "web").String())
	require.Equal(t, "fleet-default/web", KeyOf("", "web").Qualified())
	require.Equal(t, "", KeyOf("fleet-default", "web").PayloadNamespace())
	require.Equal(t, "team-a", KeyOf("team-a", "web").PayloadNamespace())
}

// Releases labelled before workspaces existed have no namespace label: they are fleet-default's.
func TestAReleaseWithoutANamespaceLabelIsFleetDefaults(t *testing.T) {
	require.Equal(t, KeyOf("", "web"), ReleaseOwner(map[string]string{LabelGitRepo: "web"}))
	require.Equal(t, KeyOf("team-a", "web"), ReleaseOwner(map[string]string{LabelGitRepo: "web", LabelGitRepoNamespace: "team-a"}))
	require.Equal(t, "", ReleaseOwner(map[string]string{}).Name, "not installed by Flotilla")
	require.Equal(t, map[string]string{LabelGitRepo: "web"}, KeyOf("", "web").OwnerLabels())
	require.Equal(t, map[string]string{LabelGitRepo: "web", LabelGitRepoNamespace: "team-a"}, KeyOf("team-a", "web").OwnerLabels())
	require.Equal(t, KeyOf("team-a", "web"), ReleaseOwner(KeyOf("team-a", "web").OwnerLabels()))
}

func TestNamespacesAreDNSLabels(t *testing.T) {
	for _, ok := range []string{"fleet-default", "team-a", "a", "x1"} {
		require.NoError(t, CheckNamespace(ok), ok)
	}
	for _, bad := range []string{"", "Team", "team/a", "team_a", "-a", "it's"} {
		require.Error(t, CheckNamespace(bad), bad)
	}
	require.EqualError(t, CheckNamespace("team/a"), `namespace "team/a": must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)`)
}
