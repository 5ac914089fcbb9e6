package activities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
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
