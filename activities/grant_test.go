package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/agentkey"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// twoAgentClusters is an inventory of two agent-mode clusters, edge-1 of fleet-default and edge-1 of
// team-b, and the desired states their cluster workflows hold for GitRepo shop of each workspace.
func twoAgentClusters(t *testing.T) (inventory.Inventory, api.ClusterTarget, api.ClusterTarget) {
	url, commit := agentRepo(t)
	agent := fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}, TemplateValues: map[string]any{"fqdn": "edge-1.example", "region": "eu"}}
	inv := inventory.Inventory{Generation: 1, Clusters: []fleet.Cluster{
		{Metadata: fleet.ObjectMeta{Name: "edge-1"}, Spec: agent},
		{Metadata: fleet.ObjectMeta{Name: "edge-1", Namespace: "team-b"}, Spec: agent},
	}}
	mine := api.ClusterTarget{GitRepo: "shop", Cluster: "edge-1", Repo: url, Commit: commit, Agent: true,
		Bundles: []api.BundleRef{{Name: "shop-web", Path: "web"}}}
	theirs := mine
	theirs.Namespace = "team-b"
	return inv, mine, theirs
}

// An agent asks the management side for packages naming a cluster and a GitRepo: it is answered from the
// desired state that cluster's workflow holds, never from the recipe the request carries, so it cannot
// make the worker clone another repository with another team's credentials; and sealed to the named
// cluster's key, so the answer opens for that cluster's agent only.
func TestAPackageIsServedFromTheHeldDesiredStateAndSealedToItsCluster(t *testing.T) {
	inv, mine, theirs := twoAgentClusters(t)
	w, installation, prepared := keyedPrepare(t, inv, mine)
	web := prepared.Bundles[0]
	require.NotEmpty(t, web.Package)
	require.NotEmpty(t, prepared.Grant)

	// The request's recipe is not read: another repository and another team's secret change nothing.
	forged := mine
	forged.Repo, forged.ClientSecretName, forged.Commit = "https://git.attacker.example/x.git", "team-b-git", "0000000000000000000000000000000000000000"
	chunk := []api.ContentChunk{{Digest: web.Package, Length: web.PackageSize, Bundle: "shop-web"}}
	sealed, err := w.ReadContent(context.Background(), api.ReadContentInput{Target: forged, Chunks: chunk})
	require.NoError(t, err)

	own := installation.ForCluster("", "edge-1")
	plain, err := own.Open(ContentAAD("", "edge-1", chunk), sealed)
	require.NoError(t, err)
	stored, err := w.Content.ReadChunk(web.Package, 0, web.PackageSize)
	require.NoError(t, err)
	require.Equal(t, stored, plain, "the cluster's own agent opens its package")
	_, err = installation.ForCluster("team-b", "edge-1").Open(ContentAAD("", "edge-1", chunk), sealed)
	require.ErrorIs(t, err, agentkey.ErrNotSealed, "an agent of another cluster (the same name in another workspace) cannot")

	// Another workspace's cluster, whose workflow holds no such package, is refused, not served.
	_, err = w.ReadContent(context.Background(), api.ReadContentInput{Target: theirs, Chunks: chunk})
	require.ErrorContains(t, err, "workflow gitrepo/team-b/shop/cluster/edge-1 not found")
	// A package the held desired state does not give is refused, whoever asks.
	_, err = w.ReadContent(context.Background(), api.ReadContentInput{Target: mine,
		Chunks: []api.ContentChunk{{Digest: web.Package, Length: 10, Bundle: "shop-db"}}})
	requireType(t, err, api.ErrTypeNotGranted)
}

// An agent with its cluster's key acts only on what the management side granted: a task queued by any
// other principal of the namespace, with renderings of its own making or another cluster's grant, is
// refused before anything touches the cluster.
func TestAnAgentRefusesWhatTheManagementSideDidNotGrant(t *testing.T) {
	inv, mine, _ := twoAgentClusters(t)
	_, installation, prepared := keyedPrepare(t, inv, mine)

	agent := &Activities{Inventory: fixedInventory(inv), Local: &LocalCluster{Name: "edge-1", Key: installation.ForCluster("", "edge-1"),
		Store: &content.Store{Dir: t.TempDir()}}}
	apply := func(bundles []api.PreparedBundle, generation int64, grant string) error {
		_, err := agent.Apply(context.Background(), api.ApplyInput{Target: mine, Prepared: bundles, Generation: generation, Grant: grant,
			Actions: []api.BundleAction{{Bundle: "shop-web", Action: api.ActionInstall}}})
		return err
	}
	forgedBundles := append([]api.PreparedBundle(nil), prepared.Bundles...)
	forgedBundles[0].Package = "sha256:feedface"
	requireType(t, apply(prepared.Bundles, 3, ""), api.ErrTypeNotGranted)
	requireType(t, apply(forgedBundles, 3, prepared.Grant), api.ErrTypeNotGranted)
	requireType(t, apply(prepared.Bundles, 4, prepared.Grant), api.ErrTypeNotGranted)
	otherGrant := installation.ForCluster("team-b", "edge-1").Grant(grantPrepared, preparedMessage(mine, 3, prepared.Bundles))
	requireType(t, apply(prepared.Bundles, 3, otherGrant), api.ErrTypeNotGranted)

	_, err := agent.Uninstall(context.Background(), api.UninstallInput{GitRepo: "shop", Cluster: "edge-1", Generation: 3})
	requireType(t, err, api.ErrTypeNotGranted)
	_, err = agent.KeepAgent(context.Background(), api.KeepAgentInput{Cluster: "edge-1", Namespace: "cattle-fleet-system", Digest: "x", Manifests: "kind: Pod"})
	requireType(t, err, api.ErrTypeNotGranted)
}

// A grant recorded in a workflow's history cannot take the cluster back: the agent refuses a generation
// older than one it acted on, until the GitRepo is removed from the cluster.
func TestAnAgentRefusesAnOlderGenerationThanItActedOn(t *testing.T) {
	k, err := agentkey.Generate()
	require.NoError(t, err)
	g := &agentGuard{key: k}
	shop := api.KeyOf("", "shop")
	require.NoError(t, g.act(shop, 5))
	require.NoError(t, g.act(shop, 5), "the same desired state again (a retry)")
	requireType(t, g.act(shop, 4), api.ErrTypeStale)
	require.NoError(t, g.act(api.KeyOf("team-b", "shop"), 1), "another GitRepo has marks of its own")
	g.forget(shop)
	require.NoError(t, g.act(shop, 1), "a GitRepo added again after its removal starts anew")
	require.NoError(t, (*agentGuard)(nil).act(shop, 0))
	require.NoError(t, (&agentGuard{}).act(shop, 0), "an agent without a key trusts its queue, as before keys")
}

// A sweep an agent makes keeps every release of the granted renderings, whatever the task says to keep.
func TestAnAgentsSweepKeepsWhatTheGrantHas(t *testing.T) {
	inv, mine, _ := twoAgentClusters(t)
	w := managementWorker(t, inv, mine)
	prepared, err := w.Prepare(context.Background(), api.PrepareInput{Target: mine})
	require.NoError(t, err)
	k, err := agentkey.Generate()
	require.NoError(t, err)
	agent := &Activities{Local: &LocalCluster{Name: "edge-1", Key: k}}
	s := agent.keptByGrant(api.Sweep{}, append(prepared.Bundles, api.PreparedBundle{Bundle: "shop-api", Error: "boom"}))
	require.Equal(t, []api.ReleaseRef{{Bundle: "shop-web", Namespace: "web", Name: "shop-web"}}, s.Releases)
	require.Equal(t, []string{"shop-api"}, s.KeepBundles)
	require.Empty(t, (&Activities{}).keptByGrant(api.Sweep{}, prepared.Bundles).Releases, "the management worker sweeps as told")
}

// keyedPrepare is a management worker with an installation key, and its Prepare of target at generation 3.
func keyedPrepare(t *testing.T, inv inventory.Inventory, target api.ClusterTarget) (*Activities, agentkey.Key, api.PrepareResult) {
	t.Helper()
	installation, err := agentkey.Generate()
	require.NoError(t, err)
	w := managementWorker(t, inv, target)
	w.InstallationKey = installation
	prepared, err := w.Prepare(context.Background(), api.PrepareInput{Target: target, Generation: 3})
	require.NoError(t, err)
	return w, installation, prepared
}

func requireType(t *testing.T, err error, typ string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, typ, appErr.Type(), appErr.Error())
}
