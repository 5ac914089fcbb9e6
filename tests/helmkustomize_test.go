package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Fleet's helm-kustomize layout on a real cluster: the chart is rendered by Helm, its output goes through
// kustomize.dir (whose kustomization patches the chart's objects without listing them), and what kustomize
// builds is what is deployed, as `flotilla render` previews it. A changed patch is a new deployment.
func TestAChartsOutputGoesThroughKustomizeDirOnTheCluster(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	patch := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: " + v + "\n"
	}
	repo := s.NewRepo(map[string]string{
		"app/fleet.yaml":                      "defaultNamespace: hk\nhelm:\n  chart: ./chart\n  values: {v: from-chart}\nkustomize:\n  dir: ./overlays/dev\n",
		"app/chart/Chart.yaml":                "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/chart/templates/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: {{ .Values.v }}\n  kept: from-chart\n",
		"app/overlays/dev/kustomization.yaml": "patches:\n- path: patch.yaml\nnameSuffix: -dev\n",
		"app/overlays/dev/patch.yaml":         patch("patched"),
	})
	s.AddCluster("a", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("hk", repo.URL(), "  targets: [{clusterName: a}]\n"))
	s.WaitStatus("hk", 2*time.Minute, "Ready", harness.AllReady)
	require.Equal(t, map[string]string{"v": "patched", "kept": "from-chart"}, s.ConfigMapData("a", "hk", "app-dev"),
		"the chart's object, patched and renamed by the kustomization")
	require.Nil(t, s.ConfigMapData("a", "hk", "app"), "the chart's output is kustomize's input, not deployed beside it")

	res := render(s, "--gitrepo", "hk")
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	require.Contains(t, res.Stdout, "name: app-dev")
	require.Contains(t, res.Stdout, "v: patched")

	kube := s.Kube("a")
	repo.Commit(map[string]string{"app/overlays/dev/patch.yaml": patch("patched-again")}, "change the patch")
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cm, err := kube.CoreV1().ConfigMaps("hk").Get(ctx, "app-dev", metav1.GetOptions{})
		return err == nil && cm.Data["v"] == "patched-again"
	}, harness.Patience(2*time.Minute), 250*time.Millisecond, "the changed patch is deployed")
	require.Len(t, s.History("a", "hk", "hk-app"), 2)
}
