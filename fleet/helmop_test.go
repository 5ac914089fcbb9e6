package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
	yaml12 "go.yaml.in/yaml/v3"
)

// A HelmOp's values reach its bundle as written: a string that YAML 1.2 would read as a number unless
// quoted is quoted, and a document that already read back as written keeps its bytes (its digest is the
// HelmOp's commit, which a running HelmOp must not see change).
func TestAHelmOpDocumentReadsBackAsWritten(t *testing.T) {
	fy := &FleetYAML{BundleDeploymentOptions: BundleDeploymentOptions{Helm: &HelmOptions{Chart: "web", Values: map[string]any{"octal": "0o+0", "replicas": 2}}}}
	data, _, err := HelmOpDocument(fy)
	require.NoError(t, err)
	var read struct {
		Helm struct {
			Values map[string]any `yaml:"values"`
		} `yaml:"helm"`
	}
	require.NoError(t, yaml12.Unmarshal(data, &read), "%s", data)
	require.Equal(t, "0o+0", read.Helm.Values["octal"], "%s", data)
	require.Equal(t, 2, read.Helm.Values["replicas"])

	plain := &FleetYAML{BundleDeploymentOptions: BundleDeploymentOptions{Helm: &HelmOptions{Chart: "web", Values: map[string]any{"replicas": 2}}}}
	data, _, err = HelmOpDocument(plain)
	require.NoError(t, err)
	require.Equal(t, "helm:\n  chart: web\n  values:\n    replicas: 2\nignore: {}\n", string(data), "written as before")
}
