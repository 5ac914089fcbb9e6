package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/fieldvariants"
)

// The usual sequence is: a check renders, an apply follows, then checks only. The chart is rendered once
// for the pair, and not kept once it is used.
func TestRenderCacheKeepsTheChartForOneApplyOnly(t *testing.T) {
	a, h, target, ref := oneBundleRepo(t)

	checked, err := a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	require.NotNil(t, checked.Chart, "a check's rendering keeps its chart for the apply that may follow")

	applied, err := a.render(context.Background(), h, target, ref, true)
	require.NoError(t, err)
	require.Same(t, checked, applied, "the apply uses the check's rendering instead of rendering again")

	next, err := a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	require.Nil(t, next.Chart, "after the apply only what checks need is kept")
	require.Equal(t, checked.DeploymentID, next.DeploymentID)

	again, err := a.render(context.Background(), h, target, ref, true)
	require.NoError(t, err)
	require.NotNil(t, again.Chart, "a later apply renders afresh")
	require.Equal(t, checked.DeploymentID, again.DeploymentID)
}

// After a restart a check renders and nothing is applied: the chart is dropped at the next check.
func TestRenderCacheDropsAnUnusedChartAtTheNextCheck(t *testing.T) {
	a, h, target, ref := oneBundleRepo(t)

	_, err := a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	_, err = a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	third, err := a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	require.Nil(t, third.Chart)
}

// oneBundleRepo is a checkout holding one bundle of one ConfigMap, and a cluster to render it for.
func oneBundleRepo(t *testing.T) (*Activities, *clusterHandle, api.ClusterTarget, api.BundleRef) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "web"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "web", "cm.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n"), 0o644))
	h := &clusterHandle{info: fleet.ClusterInfo{Name: "edge-1", Namespace: fleet.DefaultNamespace}, dir: root, digest: "d1"}
	return &Activities{}, h, api.ClusterTarget{GitRepo: "shop", Cluster: "edge-1", Commit: "0123456789abcdef0123"},
		api.BundleRef{Name: "web", Path: "web"}
}

// A GitRepo option changed without a commit reaches the next rendering: the cache does not answer with
// the rendering made under the old option.
func TestRenderCacheSeesAnOptionChangedWithoutACommit(t *testing.T) {
	a, h, target, ref := oneBundleRepo(t)
	target.Options.CorrectDrift = &fleet.CorrectDrift{Enabled: false}
	before, err := a.render(context.Background(), h, target, ref, false)
	require.NoError(t, err)
	require.False(t, before.Options.CorrectDrift.Enabled)

	target.Options.CorrectDrift = &fleet.CorrectDrift{Enabled: true}
	after, err := a.render(context.Background(), freshHandle(h), target, ref, false)
	require.NoError(t, err)
	require.True(t, after.Options.CorrectDrift.Enabled, "correctDrift turned on without a commit is what the next check renders with")
}

// Every field of every input of a rendering (the target with its options, the bundle's reference, the
// cluster's entry) changes the cache key when it alone changes. The fields are found by reflection, so a
// field added later is covered without editing this test.
func TestRenderCacheKeyCoversEveryInput(t *testing.T) {
	_, h, target, ref := oneBundleRepo(t)
	base, ok := freshHandle(h).renderKey(target, ref)
	require.True(t, ok)

	checked := 0
	for path, v := range fieldvariants.Of(target, "target", "target.Bundles") {
		key, ok := freshHandle(h).renderKey(v.(api.ClusterTarget), ref)
		require.True(t, ok, path)
		require.NotEqual(t, base, key, "changing %s alone must change the render cache key", path)
		checked++
	}
	for path, v := range fieldvariants.Of(ref, "bundle") {
		key, ok := freshHandle(h).renderKey(target, v.(api.BundleRef))
		require.True(t, ok, path)
		require.NotEqual(t, base, key, "changing %s alone must change the render cache key", path)
		checked++
	}
	for path, v := range fieldvariants.Of(h.info, "cluster") {
		other := freshHandle(h)
		other.info = v.(fleet.ClusterInfo)
		key, ok := other.renderKey(target, ref)
		require.True(t, ok, path)
		require.NotEqual(t, base, key, "changing %s alone must change the render cache key", path)
		checked++
	}
	require.Greater(t, checked, 30, "the walk found the options, correctDrift's fields among them")

	other := freshHandle(h)
	other.dir = h.dir + "-other"
	key, _ := other.renderKey(target, ref)
	require.NotEqual(t, base, key, "another checkout")
	other = freshHandle(h)
	other.digest = "d2"
	key, _ = other.renderKey(target, ref)
	require.NotEqual(t, base, key, "another inventory entry")

	sibling := target
	sibling.Bundles = []api.BundleRef{{Name: "db", Path: "db"}}
	key, _ = freshHandle(h).renderKey(sibling, ref)
	require.Equal(t, base, key, "the target's other bundles are not this rendering's input")
}

// freshHandle is h as a new activity would resolve it: the same cluster and checkout, nothing digested yet.
func freshHandle(h *clusterHandle) *clusterHandle {
	return &clusterHandle{info: h.info, client: h.client, dir: h.dir, digest: h.digest, prepared: h.prepared}
}
