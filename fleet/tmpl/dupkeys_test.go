package tmpl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

func TestDuplicateKeysInAValuesFileAreRefusedWithTheLine(t *testing.T) {
	text := "image:\n  tag: v1\nreplicas: ${ .ClusterValues.replicas }\nimage:\n  tag: v2\n"
	_, err, _ := renderFile(t, text, edge)
	require.EqualError(t, err, `app/values.yaml: line 4: key "image" is set twice (first at line 1)`)
	require.True(t, IsTemplateError(err))

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "app"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "app", "values.yaml"), []byte("a:\n  b: 1\n  b: 2\n"), 0o644))
	_, err = Values(root, "app", &fleet.HelmOptions{ValuesFiles: []string{"values.yaml"}, DisablePreProcess: true}, edge)
	require.EqualError(t, err, `app/values.yaml: line 3: key "b" is set twice (first at line 2)`, "without templating too")
}

func TestDuplicateKeysMadeByTheTemplateAreRefusedWithTheRenderedLine(t *testing.T) {
	c := edge
	c.TemplateValues = map[string]any{"extra": "replicas: 5"}
	_, err, _ := renderFile(t, "replicas: 3\n${ .ClusterValues.extra }\n", c)
	require.EqualError(t, err, `app/values.yaml: line 2 of the rendered values: key "replicas" is set twice (first at line 1)`)

	_, err = Values(t.TempDir(), "app", &fleet.HelmOptions{TemplateValues: map[string]string{"cfg": "a: 1\n${ \"a: 2\" }"}}, edge)
	require.EqualError(t, err, `app/fleet.yaml: helm.templateValues.cfg: key "a" is set twice`)
}

func TestOverridingAMergedKeyIsNotADuplicate(t *testing.T) {
	got, err, _ := renderFile(t, "base: &base\n  a: 1\n  b: 1\nother:\n  <<: *base\n  a: 2\n", edge)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": float64(2), "b": float64(1)}, got["other"])
}
