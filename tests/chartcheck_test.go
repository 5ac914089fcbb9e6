package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// A chart template that would take gigabytes to render is refused by the render check before Helm
// renders it in the worker: the worker keeps running, the GitRepo's other bundle deploys, and no release
// of the bomb is written.
func TestAChartTemplateBombIsRefusedAndTheWorkerStaysUp(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	worker := s.Worker.PID()
	repo := s.NewRepo(map[string]string{
		"web/fleet.yaml":                     "defaultNamespace: web\nhelm:\n  chart: ./chart\n",
		"web/chart/Chart.yaml":               "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  release: {{ .Release.Name | quote }}\n",
		"bomb/fleet.yaml":                    "defaultNamespace: bomb\nhelm:\n  chart: ./chart\n",
		"bomb/chart/Chart.yaml":              "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		// 2 GB in one string, copied several times over by Helm's engine and manifest sorting.
		"bomb/chart/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\ndata:\n  x: {{ repeat 2000000000 \"x\" }}\n",
	})
	s.AddCluster("test", "a", nil, nil)
	s.Apply(harness.GitRepoYAML("shop", repo.URL(), "  paths: [web, bomb]\n  targets: [{clusterName: test}]\n"))

	bundle := func(c api.ClusterStatus, name string) api.BundleStatus {
		for _, b := range c.Bundles {
			if b.Name == name {
				return b
			}
		}
		return api.BundleStatus{}
	}
	st := s.WaitStatus("shop", 3*time.Minute, "web Ready and the bomb refused", func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, "test")
		return ok && bundle(c, "shop-web").State == api.StateReady && bundle(c, "shop-bomb").State == api.StateErrApplied
	})
	c, _ := harness.Cluster(st, "test")
	require.Contains(t, bundle(c, "shop-bomb").Message, `chart "bomb": rendering exceeded the 1 GiB memory limit for chart templates`)
	require.Equal(t, "shop-web", s.ConfigMapData("a", "web", "web")["release"])

	require.True(t, s.Worker.Alive(), "the worker survived the bomb")
	require.Equal(t, worker, s.Worker.PID(), "and is the same process")
	rels := s.Releases("a", "shop")
	require.Contains(t, rels, "shop-web")
	require.NotContains(t, rels, "shop-bomb")
	require.Empty(t, s.History("a", "bomb", "shop-bomb"), "no revision of the bomb was ever written")
	out := s.CLIRun("status", "shop")
	require.True(t, strings.Contains(out, "1 GiB memory limit"), "the CLI names the limit:\n%s", out)
}
