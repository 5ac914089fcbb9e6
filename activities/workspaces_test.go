package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// An installation that serves team-a alone refuses a GitRepo, and a cluster, of team-b: whoever can start
// workflows on its Temporal namespace cannot make its workers act for another workspace.
func TestAnInstallationServesOnlyItsWorkspaces(t *testing.T) {
	url, commit := agentRepo(t)
	w := managementWorker(t, inventory.Inventory{Generation: 1})
	w.Workspaces = WorkspacePolicy{Workspaces: []string{"team-a"}}
	_, err := w.Poll(context.Background(), api.PollInput{GitRepo: "shop", Namespace: "team-b", Repo: url, Branch: "main"})
	requireType(t, err, api.ErrTypeWorkspace)
	require.ErrorContains(t, err, `workspace "team-b" is not served by this installation (its workers serve team-a: --workspaces)`)
	_, err = w.Plan(context.Background(), api.PlanInput{GitRepo: "shop", Repo: url, Commit: commit})
	requireType(t, err, api.ErrTypeWorkspace)
	_, err = w.Observe(context.Background(), api.ObserveInput{Target: api.ClusterTarget{GitRepo: "shop", Namespace: "team-b", Cluster: "edge"}})
	requireType(t, err, api.ErrTypeWorkspace)
	_, err = w.Uninstall(context.Background(), api.UninstallInput{GitRepo: "shop", Namespace: "team-b", Cluster: "edge"})
	requireType(t, err, api.ErrTypeWorkspace)

	res, err := w.Poll(context.Background(), api.PollInput{GitRepo: "shop", Namespace: "team-a", Repo: url, Branch: "main"})
	require.NoError(t, err)
	require.Equal(t, commit, res.Commit)
}

// With a kubeconfig folder per workspace, a cluster names only a kubeconfig of its own workspace: one of
// team-b that names team-a's kubeconfig (or a link to it) is refused before the file is read.
func TestAClusterNamesOnlyAKubeconfigOfItsOwnWorkspace(t *testing.T) {
	dir := t.TempDir()
	for _, ws := range []string{"team-a", "team-b"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, ws), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ws, "edge.kubeconfig"), []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	}
	require.NoError(t, os.Symlink(filepath.Join(dir, "team-a", "edge.kubeconfig"), filepath.Join(dir, "team-b", "borrowed.kubeconfig")))
	p := WorkspacePolicy{KubeconfigDir: dir}
	require.NoError(t, p.kubeconfig("team-a", "edge", filepath.Join(dir, "team-a", "edge.kubeconfig")))
	for _, path := range []string{filepath.Join(dir, "team-a", "edge.kubeconfig"), filepath.Join(dir, "team-b", "..", "team-a", "edge.kubeconfig"),
		filepath.Join(dir, "team-b", "borrowed.kubeconfig"), "/etc/kubernetes/admin.conf"} {
		err := p.kubeconfig("team-b", "edge", path)
		requireType(t, err, api.ErrTypeWorkspace)
		require.ErrorContains(t, err, `cluster "team-b/edge": kubeconfig `+path+` is not in workspace "team-b"'s folder`)
	}

	inv := inventory.Inventory{Generation: 1, Clusters: []fleet.Cluster{{Metadata: fleet.ObjectMeta{Name: "edge", Namespace: "team-b"},
		Spec: fleet.ClusterSpec{KubeConfigPath: filepath.Join(dir, "team-a", "edge.kubeconfig")}}}}
	w := managementWorker(t, inv)
	w.Workspaces = p
	_, err := w.Observe(context.Background(), api.ObserveInput{Target: api.ClusterTarget{GitRepo: "shop", Namespace: "team-b", Cluster: "edge"}})
	requireType(t, err, api.ErrTypeWorkspace)
}
