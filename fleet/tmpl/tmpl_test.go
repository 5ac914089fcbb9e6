package tmpl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

var edge = fleet.ClusterInfo{Name: "edge-1", Namespace: "fleet-default", Labels: map[string]string{"env": "prod"},
	TemplateValues: map[string]any{"generated": map[string]any{"cluster_metadata": map[string]any{"fqdn": "edge-1.example.com"}}, "replicas": 3}}

func values(t *testing.T, v map[string]any, c fleet.ClusterInfo) (map[string]any, error) {
	return Values(t.TempDir(), "web", &fleet.HelmOptions{Values: v}, c)
}

func TestClusterValuesLabelsAndNamesRender(t *testing.T) {
	got, err := values(t, map[string]any{
		"fqdn":     "${ .ClusterValues.generated.cluster_metadata.fqdn }",
		"replicas": "${ .ClusterValues.replicas }",
		"who":      "${ .ClusterName }/${ .ClusterLabels.env }",
		"guarded":  `${ if hasKey .ClusterLabels "zone" }${ .ClusterLabels.zone }${ else }none${ end }`,
	}, edge)
	require.NoError(t, err)
	require.Equal(t, "edge-1.example.com", got["fqdn"])
	require.EqualValues(t, 3, got["replicas"], "numbers stay numbers")
	require.Equal(t, "edge-1/prod", got["who"])
	require.Equal(t, "none", got["guarded"])
}

func TestMissingKeyNamesTheKey(t *testing.T) {
	c := edge
	c.TemplateValues = map[string]any{"generated": map[string]any{"cluster_metadata": map[string]any{}}}
	_, err := values(t, map[string]any{"fqdn": "${ .ClusterValues.generated.cluster_metadata.fqdn }"}, c)
	require.ErrorContains(t, err, `map has no entry for key "fqdn"`)
	require.ErrorContains(t, err, "web/fleet.yaml: helm.values")
	require.True(t, IsTemplateError(err))
}

func TestTemplatesCannotReachTheEnvironmentOrNetwork(t *testing.T) {
	for _, expr := range []string{`${ env "HOME" }`, `${ expandenv "$HOME" }`, `${ getHostByName "example.com" }`, `${ include "x" . }`, `${ tpl "x" . }`} {
		_, err := values(t, map[string]any{"v": expr}, edge)
		require.Error(t, err, expr)
		require.Contains(t, err.Error(), "is not available in Flotilla templates", expr)
	}
}

func TestValuesFilesStayInsideTheRepository(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "web"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "shared.yaml"), []byte("shared: ${ .ClusterName }\n"), 0o644))
	require.NoError(t, os.Symlink("/etc/hostname", filepath.Join(root, "web", "link.yaml")))
	got, err := Values(root, "web", &fleet.HelmOptions{ValuesFiles: []string{"../shared.yaml"}}, edge)
	require.NoError(t, err, "../ inside the repository is fine")
	require.Equal(t, "edge-1", got["shared"])
	for file, want := range map[string]string{
		"../../etc/passwd": "leaves the repository",
		"/etc/passwd":      "absolute path",
		"link.yaml":        "symlink that resolves outside the repository",
	} {
		_, err := Values(root, "web", &fleet.HelmOptions{ValuesFiles: []string{file}}, edge)
		require.ErrorContains(t, err, want, file)
		require.ErrorContains(t, err, "valuesFiles", file)
	}
}
