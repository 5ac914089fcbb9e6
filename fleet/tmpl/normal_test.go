package tmpl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// The documented uses of `${ }` in Fleet: cluster values, labels and names, default, quote, ternary,
// dict/list, toJson, if/else and range over a small list.
const normalValuesFile = `name: ${ .ClusterName }
namespace: ${ .ClusterNamespace }
env: ${ .ClusterLabels.env | quote }
region: ${ get .ClusterValues "region" | default "eu-west" }
replicas: ${ .ClusterValues.replicas }
debug: ${ ternary "true" "false" (eq .ClusterLabels.env "prod") }
${ if hasKey .ClusterLabels "zone" }zone: ${ .ClusterLabels.zone }${ else }zone: none${ end }
hosts:
${- range $i, $h := .ClusterValues.hosts }
  - name: ${ $h | upper | quote }
    index: ${ $i }
${- end }
extra: ${ dict "tier" "critical" "zones" (list "a" "b") | toJson }
owner: ${ .ClusterAnnotations.owner | default "nobody" }
`

var normalCluster = fleet.ClusterInfo{
	Name: "edge-1", Namespace: "fleet-default",
	Labels:      map[string]string{"env": "prod", "fleet.cattle.io/cluster": "edge-1", "kubectl.kubernetes.io/x": "y"},
	Annotations: map[string]string{"owner": "team-a"},
	TemplateValues: map[string]any{
		"replicas":  3,
		"hosts":     []any{"a.example.com", "b.example.com"},
		"generated": map[string]any{"cluster_metadata": map[string]any{"fqdn": "edge-1.example.com"}},
	},
}

var normalHelm = &fleet.HelmOptions{
	Values: map[string]any{
		"fqdn":  "${ .ClusterValues.generated.cluster_metadata.fqdn }",
		"who":   "${ .ClusterName }/${ .ClusterLabels.env }",
		"label": "global.fleet.clusterLabels.env",
	},
	ValuesFiles:    []string{"values.yaml"},
	TemplateValues: map[string]string{"hostList": "${ .ClusterValues.hosts | toJson }", "count": "${ len .ClusterValues.hosts }"},
}

func normalRepo(t testing.TB) string {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "web"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "web", "values.yaml"), []byte(normalValuesFile), 0o644))
	return root
}

func TestDocumentedTemplatesRenderAsBefore(t *testing.T) {
	got, err := Values(normalRepo(t), "web", normalHelm, normalCluster)
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"fqdn": "edge-1.example.com", "who": "edge-1/prod", "label": "prod",
		"name": "edge-1", "namespace": "fleet-default", "env": "prod", "region": "eu-west",
		"replicas": float64(3), "debug": true, "zone": "none",
		"hosts": []any{
			map[string]any{"name": "A.EXAMPLE.COM", "index": float64(0)},
			map[string]any{"name": "B.EXAMPLE.COM", "index": float64(1)},
		},
		"extra":    map[string]any{"tier": "critical", "zones": []any{"a", "b"}},
		"owner":    "team-a",
		"hostList": []any{"a.example.com", "b.example.com"},
		"count":    float64(2),
	}, got)
}

func BenchmarkNormalRender(b *testing.B) {
	root := normalRepo(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Values(root, "web", normalHelm, normalCluster); err != nil {
			b.Fatal(err)
		}
	}
}
