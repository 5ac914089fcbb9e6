package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/content"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/inventory"
	"github.com/flotilla-gitops/flotilla/render"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
)

type fixedInventory inventory.Inventory

func (f fixedInventory) Read(context.Context) (inventory.Inventory, error) {
	return inventory.Inventory(f), nil
}

// heldTargets are the desired states cluster workflows hold, by cluster name.
type heldTargets map[string]api.ClusterTarget

func (h heldTargets) DiffTarget(context.Context, api.GitRepoKey, string) (api.ClusterTarget, error) {
	return api.ClusterTarget{}, errors.New("no diff planned")
}

func (h heldTargets) Target(_ context.Context, key api.GitRepoKey, cluster string) (api.ClusterTarget, error) {
	t, ok := h[cluster]
	if !ok || t.Key() != key {
		return api.ClusterTarget{}, fmt.Errorf("workflow %s not found", key.ClusterWorkflowID(cluster))
	}
	return t, nil
}

// managementWorker is a worker of its own (own checkouts, own content store) over the same inventory and
// cluster workflows.
func managementWorker(t *testing.T, inv inventory.Inventory, held ...api.ClusterTarget) *Activities {
	dir := t.TempDir()
	targets := heldTargets{}
	for _, h := range held {
		targets[h.Cluster] = h
	}
	return &Activities{Git: &gitcache.Cache{Dir: filepath.Join(dir, "git"), AllowLocal: true}, Inventory: fixedInventory(inv),
		Content: &content.Store{Dir: filepath.Join(dir, "content")}, Targets: targets}
}

// agentRepo is a repository with a chart bundle templated per cluster and one that fails on a cluster
// without the value it needs.
func agentRepo(t *testing.T) (url, commit string) {
	dir := t.TempDir()
	files := map[string]string{
		"web/fleet.yaml":                     "defaultNamespace: web\nhelm:\n  chart: ./chart\n  values:\n    fqdn: ${ .ClusterValues.fqdn }\n",
		"web/chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  fqdn: {{ .Values.fqdn | quote }}\n",
		"api/fleet.yaml":                     "defaultNamespace: api\nhelm:\n  values:\n    region: ${ .ClusterValues.region }\n",
		"api/cm.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\n",
	}
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	head, err := devenv.InitRepo(dir, "")
	require.NoError(t, err)
	return "file://" + dir, head
}

// The management side renders an agent cluster's bundles into packages the agent fetches by digest; a
// bundle that does not render there carries its typed error instead; and a second worker that never
// prepared the package serves its chunks all the same, by rendering it again from the request's recipe.
func TestPreparedPackagesAreServedByAnyWorker(t *testing.T) {
	url, commit := agentRepo(t)
	inv := inventory.Inventory{Generation: 1, Clusters: []fleet.Cluster{{
		Metadata: fleet.ObjectMeta{Name: "edge-1"},
		Spec:     fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}, TemplateValues: map[string]any{"fqdn": "edge-1.example"}},
	}}}
	target := api.ClusterTarget{GitRepo: "shop", Cluster: "edge-1", Repo: url, Commit: commit, Agent: true,
		Bundles: []api.BundleRef{{Name: "shop-web", Path: "web"}, {Name: "shop-api", Path: "api"}}}
	ctx := context.Background()

	first := managementWorker(t, inv)
	res, err := first.Prepare(ctx, api.PrepareInput{Target: target})
	require.NoError(t, err)
	require.Len(t, res.Bundles, 2)
	web, apiBundle := res.Bundles[0], res.Bundles[1]
	require.Empty(t, web.Error)
	require.NotEmpty(t, web.Package)
	require.Equal(t, api.ErrTypeTemplate, apiBundle.ErrorType, "the template error travels typed")
	require.Contains(t, apiBundle.Error, `"region"`)
	require.Empty(t, apiBundle.Package)
	summary, err := render.UnmarshalSummary(web.Release)
	require.NoError(t, err)
	require.Nil(t, summary.Chart, "a summary carries no chart")

	again, err := first.Prepare(ctx, api.PrepareInput{Target: target})
	require.NoError(t, err)
	require.Equal(t, web, again.Bundles[0], "the same rendering is the same package")

	second := managementWorker(t, inv, target)
	require.False(t, second.Content.Has(web.Package))
	all, err := content.FetchAll(ctx, []content.Want{{Digest: web.Package, Size: web.PackageSize}}, 100, func(ctx context.Context, batch []content.Piece) ([]byte, error) {
		in := api.ReadContentInput{Target: target}
		for _, p := range batch {
			in.Chunks = append(in.Chunks, api.ContentChunk{Digest: web.Package, Offset: p.Offset, Length: p.Length, Bundle: "shop-web"})
		}
		return second.ReadContent(ctx, in)
	})
	require.NoError(t, err, "a worker that lacks the package makes it again")
	rel, err := render.UnmarshalPackage(all[0])
	require.NoError(t, err)
	require.Equal(t, summary.DeploymentID, rel.DeploymentID)
	require.Equal(t, "edge-1.example", rel.Values["fqdn"], "rendered for the agent's cluster")

	// A recipe that no longer gives the package asked for is refused, never served as if it did.
	moved := inventory.Inventory{Generation: 2, Clusters: []fleet.Cluster{{
		Metadata: fleet.ObjectMeta{Name: "edge-1"},
		Spec:     fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}, TemplateValues: map[string]any{"fqdn": "elsewhere.example"}},
	}}}
	third := managementWorker(t, moved, target)
	_, err = third.ReadContent(ctx, api.ReadContentInput{Target: target, Chunks: []api.ContentChunk{{Digest: web.Package, Length: 10, Bundle: "shop-web"}}})
	require.ErrorContains(t, err, `the desired state cluster "edge-1" holds now gives sha256:`)
}

// The management worker holds no kubeconfig of an agent cluster and never tries to reach it: a task for it
// that lands here fails saying whose it is.
func TestTheManagementWorkerDoesNotReachAnAgentCluster(t *testing.T) {
	url, commit := agentRepo(t)
	inv := inventory.Inventory{Generation: 1, Clusters: []fleet.Cluster{{
		Metadata: fleet.ObjectMeta{Name: "edge-1"}, Spec: fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}}}}}
	w := managementWorker(t, inv)
	target := api.ClusterTarget{GitRepo: "shop", Cluster: "edge-1", Repo: url, Commit: commit, Bundles: []api.BundleRef{{Name: "shop-web", Path: "web"}}}
	_, err := w.Observe(context.Background(), api.ObserveInput{Target: target})
	require.ErrorContains(t, err, `cluster "edge-1" is registered with an agent: only its flotilla-agent reaches it`)
	_, err = w.Uninstall(context.Background(), api.UninstallInput{GitRepo: "shop", Cluster: "edge-1"})
	require.ErrorContains(t, err, "registered with an agent")
}

// heldAndDiffed is a cluster workflow holding held, and a GitRepo whose last diff planned diffed.
type heldAndDiffed struct{ held, diffed api.ClusterTarget }

func (h heldAndDiffed) Target(context.Context, api.GitRepoKey, string) (api.ClusterTarget, error) {
	return h.held, nil
}

func (h heldAndDiffed) DiffTarget(context.Context, api.GitRepoKey, string) (api.ClusterTarget, error) {
	if h.diffed.Cluster == "" {
		return api.ClusterTarget{}, errors.New("no diff planned")
	}
	return h.diffed, nil
}

// An agent reads the package of a commit its cluster does not run only once its GitRepo planned that commit
// for it, in a diff (`flotilla diff --commit`); asking for it is not enough.
func TestAnAgentReadsAnotherCommitsPackageOnlyWhenItsGitRepoPlannedIt(t *testing.T) {
	ctx := context.Background()
	url, c1 := agentRepo(t)
	dir := strings.TrimPrefix(url, "file://")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web/chart/templates/configmap.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  fqdn: {{ .Values.fqdn | quote }}\n  tier: edge\n"), 0o644))
	c2, err := devenv.Commit(dir, "v2")
	require.NoError(t, err)
	inv := inventory.Inventory{Generation: 1, Clusters: []fleet.Cluster{{
		Metadata: fleet.ObjectMeta{Name: "edge-1"},
		Spec:     fleet.ClusterSpec{Agent: &fleet.ClusterAgent{}, TemplateValues: map[string]any{"fqdn": "edge-1.example"}},
	}}}
	running := api.ClusterTarget{GitRepo: "shop", Cluster: "edge-1", Repo: url, Commit: c1, Agent: true,
		Bundles: []api.BundleRef{{Name: "shop-web", Path: "web"}}}
	next := running
	next.Commit = c2
	w := managementWorker(t, inv)
	prepared, err := w.Prepare(ctx, api.PrepareInput{Target: next})
	require.NoError(t, err)
	ask := api.ReadContentInput{Target: next, Chunks: []api.ContentChunk{{Digest: prepared.Bundles[0].Package, Length: 10, Bundle: "shop-web"}}}

	w.Targets = heldAndDiffed{held: running}
	_, err = w.ReadContent(ctx, ask)
	require.ErrorContains(t, err, `the desired state cluster "edge-1" holds now gives sha256:`)

	other := next
	other.Cluster = "edge-2"
	w.Targets = heldAndDiffed{held: running, diffed: other}
	_, err = w.ReadContent(ctx, ask)
	require.Error(t, err, "a diff planned for another cluster grants this one nothing")

	w.Targets = heldAndDiffed{held: running, diffed: next}
	_, err = w.ReadContent(ctx, ask)
	require.NoError(t, err)
}
