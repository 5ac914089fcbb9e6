package activities

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/render"
)

func liveRelease(labels map[string]string) agentclient.ReleaseState {
	return agentclient.ReleaseState{Exists: true, Name: "web-app", Namespace: "app", Labels: labels}
}

// A release is owned by a GitRepo, namespace and name: team-a's web is not team-b's, nor fleet-default's.
// A release labelled before workspaces existed (no namespace label) is fleet-default's.
func TestAReleaseBelongsToTheGitRepoOfItsWorkspace(t *testing.T) {
	rel := &render.Release{Bundle: "web-app"}
	target := func(ns string) api.ClusterTarget {
		return api.ClusterTarget{GitRepo: "web", Namespace: ns, Cluster: "edge", Bundles: []api.BundleRef{{Name: "web-app"}}}
	}
	ownedByA := liveRelease(api.KeyOf("team-a", "web").OwnerLabels())
	ownedByA.Labels[api.LabelBundle] = "web-app"
	legacy := liveRelease(map[string]string{api.LabelGitRepo: "web", api.LabelBundle: "web-app"})

	require.Empty(t, releaseConflict(ownedByA, rel, target("team-a")))
	require.Equal(t, `release app/web-app belongs to GitRepo "team-a/web" (bundle "web-app"): refusing to take it over; `+
		`give this bundle its own helm.releaseName (or namespace), or set helm.takeOwnership: true to adopt the release`,
		releaseConflict(ownedByA, rel, target("team-b")))
	require.Contains(t, releaseConflict(ownedByA, rel, target("")), `belongs to GitRepo "team-a/web"`)

	require.Empty(t, releaseConflict(legacy, rel, target("")), "a release labelled before workspaces is fleet-default's")
	require.Empty(t, releaseConflict(legacy, rel, target(fleet.DefaultNamespace)))
	require.Contains(t, releaseConflict(legacy, rel, target("team-a")), `belongs to GitRepo "fleet-default/web" (bundle "web-app")`)

	other := liveRelease(map[string]string{api.LabelGitRepo: "shop", api.LabelBundle: "shop-app"})
	require.Contains(t, releaseConflict(other, rel, target("")), `belongs to GitRepo "shop" (bundle "shop-app")`, "fleet-default names as before")

	adopt := &render.Release{Bundle: "web-app", Options: fleet.BundleDeploymentOptions{Helm: &fleet.HelmOptions{TakeOwnership: true}}}
	require.Empty(t, releaseConflict(ownedByA, adopt, target("team-a")), "takeOwnership adopts a release of its own workspace")
	require.Empty(t, releaseConflict(liveRelease(map[string]string{}), adopt, target("team-b")), "and one no Flotilla GitRepo owns")
	require.Equal(t, `release app/web-app belongs to GitRepo "team-a/web" of workspace "team-a": helm.takeOwnership adopts only a release `+
		`no Flotilla GitRepo owns, or one of this GitRepo's own workspace ("team-b"); give this bundle its own helm.releaseName (or namespace)`,
		releaseConflict(ownedByA, adopt, target("team-b")), "never another workspace's")
	require.Contains(t, releaseConflict(legacy, adopt, target("team-b")), `of workspace "fleet-default"`)
}

// Uninstall and sweep list releases by the name label and keep only their GitRepo's own.
func TestOnlyTheGitReposOwnReleasesAreUninstalled(t *testing.T) {
	rels := []agentclient.ReleaseState{
		liveRelease(map[string]string{api.LabelGitRepo: "web"}),
		liveRelease(map[string]string{api.LabelGitRepo: "web", api.LabelGitRepoNamespace: "team-a"}),
		liveRelease(map[string]string{api.LabelGitRepo: "web", api.LabelGitRepoNamespace: "team-b"}),
	}
	names := func(rs []agentclient.ReleaseState) []string {
		var out []string
		for _, r := range rs {
			out = append(out, api.ReleaseOwner(r.Labels).Qualified())
		}
		return out
	}
	require.Equal(t, []string{"fleet-default/web"}, names(ownedBy(rels, api.KeyOf("", "web"))))
	require.Equal(t, []string{"team-a/web"}, names(ownedBy(rels, api.KeyOf("team-a", "web"))))
	require.Empty(t, ownedBy(rels, api.KeyOf("team-c", "web")))
}

// Releases of fleet-default GitRepos are labelled as before workspaces; others carry their namespace.
func TestReleasesNameTheirGitReposNamespaceOutsideFleetDefault(t *testing.T) {
	rel := &render.Release{Name: "web-app", Namespace: "app", Bundle: "web-app", DeploymentID: "s-1"}
	def := ApplyRequestFor(rel, api.KeyOf("", "web"), "edge", "0123456789abcdef")
	require.Equal(t, map[string]string{api.LabelDeploymentID: "s-1", api.LabelGitRepo: "web", api.LabelBundle: "web-app",
		api.LabelCluster: "edge", api.LabelCommit: api.ShortCommit("0123456789abcdef")}, def.Labels)
	require.Equal(t, "flotilla: gitrepo web commit "+api.ShortCommit("0123456789abcdef"), def.Description)
	a := ApplyRequestFor(rel, api.KeyOf("team-a", "web"), "edge", "0123456789abcdef")
	require.Equal(t, "team-a", a.Labels[api.LabelGitRepoNamespace])
	require.Equal(t, "flotilla: gitrepo team-a/web commit "+api.ShortCommit("0123456789abcdef"), a.Description)
}
