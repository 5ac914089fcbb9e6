package render

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

// valuesFromRepo is a chart bundle that takes values from the cluster: a ConfigMap and a Secret in one
// entry, and a Secret of another namespace under a key of its own; prod adds one more and repeats one.
func valuesFromRepo(extra string) map[string]string {
	return map[string]string{
		"web/fleet.yaml": `defaultNamespace: shop
helm:
  chart: ./chart
  values: {color: red, size: {from: values, width: 1}, region: "${ .ClusterLabels.region }"}
  valuesFrom:
  - configMapKeyRef: {name: web-config}
    secretKeyRef: {name: web-creds}
  - secretKeyRef: {name: shared, namespace: config, key: shop.yaml}
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  helm:
    valuesFrom:
    - secretKeyRef: {name: shared, namespace: config, key: shop.yaml}
    - configMapKeyRef: {name: prod-config}
` + extra,
		"web/chart/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	}
}

func renderWeb(t *testing.T, files map[string]string, in Input) (*Release, error) {
	t.Helper()
	root := writeRepo(t, files)
	b, err := bundle.Load(root, bundle.Ref{Name: "web", Path: "web"})
	require.NoError(t, err)
	in.RepoRoot, in.Bundle, in.GitRepo = root, b, "shop"
	return ForCluster(in)
}

// Each reference is resolved as Fleet's agent resolves it: the release's namespace and the key values.yaml
// when it names none; an entry's ConfigMap before its Secret; a customization's entries merged by
// reference, a repeated one keeping its place, a new one appended.
func TestValuesFromSourcesAreResolvedWithFleetsDefaults(t *testing.T) {
	dev := fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"env": "dev", "region": "eu"}}
	rel, err := renderWeb(t, valuesFromRepo(""), Input{Cluster: dev})
	require.NoError(t, err)
	require.Equal(t, []ValuesSource{
		{Namespace: "shop", Name: "web-config", Key: "values.yaml"},
		{Secret: true, Namespace: "shop", Name: "web-creds", Key: "values.yaml"},
		{Secret: true, Namespace: "config", Name: "shared", Key: "shop.yaml"},
	}, rel.ValuesFrom)

	prod := fleet.ClusterInfo{Name: "prod", Labels: map[string]string{"env": "prod", "region": "us"}}
	rel, err = renderWeb(t, valuesFromRepo(""), Input{Cluster: prod})
	require.NoError(t, err)
	require.Equal(t, []ValuesSource{
		{Namespace: "shop", Name: "web-config", Key: "values.yaml"},
		{Secret: true, Namespace: "shop", Name: "web-creds", Key: "values.yaml"},
		{Secret: true, Namespace: "config", Name: "shared", Key: "shop.yaml"},
		{Namespace: "shop", Name: "prod-config", Key: "values.yaml"},
	}, rel.ValuesFrom)

	rel, err = renderWeb(t, valuesFromRepo(""), Input{Cluster: dev, TargetNamespace: "config"})
	require.NoError(t, err)
	require.Equal(t, "config", rel.ValuesFrom[0].Namespace, "the release's namespace is the GitRepo's targetNamespace")
}

// A GitRepo's targetNamespace and a cluster's confineToNamespace keep a repository in one namespace of the
// cluster, for reading as for writing: a source elsewhere is an error naming it, not a read.
func TestValuesFromOutsideAForcedNamespaceIsRefused(t *testing.T) {
	dev := fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"region": "eu"}}
	_, err := renderWeb(t, valuesFromRepo(""), Input{Cluster: dev, TargetNamespace: "shop"})
	require.EqualError(t, err, `bundle "web": web/fleet.yaml: valuesFrom secret "config/shared" key "shop.yaml": `+
		`namespace "config" is outside namespace "shop", the only one this bundle may read or write on this cluster`)

	dev.ConfineToNamespace = "dev"
	_, err = renderWeb(t, valuesFromRepo(""), Input{Cluster: dev})
	require.ErrorContains(t, err, `namespace "config" is outside namespace "dev"`)

	files := valuesFromRepo("")
	files["web/fleet.yaml"] = "helm:\n  valuesFrom:\n  - {}\n"
	_, err = renderWeb(t, files, Input{Cluster: dev})
	require.EqualError(t, err, `bundle "web": web/fleet.yaml: helm.valuesFrom[0]: names neither a configMapKeyRef nor a secretKeyRef`)
}

// The sources' values are merged over every other value, in order, untemplated, as Fleet's agent merges
// them; the deployment ID covers the sources' content (and their objects' UIDs), so a changed source is a
// new deployment and an unchanged one is not.
func TestValuesFromAreMergedOverTheValuesAndChangeTheDeploymentID(t *testing.T) {
	rel, err := renderWeb(t, valuesFromRepo(""), Input{Cluster: fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"region": "eu"}}})
	require.NoError(t, err)
	load := func(config, creds, shared string) []LoadedValues {
		return []LoadedValues{
			{Source: rel.ValuesFrom[0], UID: "u1", Data: []byte(config)},
			{Source: rel.ValuesFrom[1], UID: "u2", Data: []byte(creds)},
			{Source: rel.ValuesFrom[2], UID: "u3", Data: []byte(shared)},
		}
	}
	with, err := rel.WithValuesFrom(load("color: blue\nsize: {from: configmap}\nnote: ${ .ClusterName }\n",
		"password: hunter22\ncolor: green\n", "size: {width: 3}\n"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"color":    "green",                                                  // the entry's Secret over its ConfigMap, both over helm.values
		"size":     map[string]any{"from": "configmap", "width": float64(3)}, // maps merge key by key
		"region":   "eu",                                                     // helm.values, templated
		"note":     "${ .ClusterName }",                                      // valuesFrom is not templated
		"password": "hunter22",
	}, with.Values)
	require.Equal(t, map[string]any{"color": "red", "size": map[string]any{"from": "values", "width": float64(1)}, "region": "eu"}, rel.Values,
		"the rendering itself is unchanged")
	require.NotEqual(t, rel.DeploymentID, with.DeploymentID)
	require.Regexp(t, `^s-[0-9a-f]{40}$`, with.DeploymentID)

	same, err := rel.WithValuesFrom(load("color: blue\nsize: {from: configmap}\nnote: ${ .ClusterName }\n",
		"password: hunter22\ncolor: green\n", "size: {width: 3}\n"))
	require.NoError(t, err)
	require.Equal(t, with.DeploymentID, same.DeploymentID, "the same sources, the same deployment")
	changed, err := rel.WithValuesFrom(load("color: blue\nsize: {from: configmap}\nnote: ${ .ClusterName }\n",
		"password: hunter23\ncolor: green\n", "size: {width: 3}\n"))
	require.NoError(t, err)
	require.NotEqual(t, with.DeploymentID, changed.DeploymentID, "a changed Secret is a new deployment")
	recreated := load("color: blue\nsize: {from: configmap}\nnote: ${ .ClusterName }\n", "password: hunter22\ncolor: green\n", "size: {width: 3}\n")
	recreated[1].UID = "u2-again"
	again, err := rel.WithValuesFrom(recreated)
	require.NoError(t, err)
	require.NotEqual(t, with.DeploymentID, again.DeploymentID, "the UID salts the digest")
	require.NotContains(t, with.DeploymentID+changed.DeploymentID, "hunter")
}

// What a Secret holds is a credential: a parse error names the source and the line, never the text, and
// Redact takes the Secret's values out of any message about the release.
func TestValuesFromASecretNeverReachAMessage(t *testing.T) {
	rel, err := renderWeb(t, valuesFromRepo(""), Input{Cluster: fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"region": "eu"}}})
	require.NoError(t, err)
	_, err = rel.WithValuesFrom([]LoadedValues{
		{Source: rel.ValuesFrom[0], Data: []byte("color: blue\n")},
		{Source: rel.ValuesFrom[1], Data: []byte("password: hunter22\n- hunter22-again\n")},
		{Source: rel.ValuesFrom[2], Data: nil},
	})
	require.Regexp(t, `^bundle "web": valuesFrom secret "shop/web-creds" key "values.yaml": not a YAML map of Helm values \(line \d+\)$`, err.Error())
	var vf *ValuesFromError
	require.ErrorAs(t, err, &vf)

	_, err = rel.WithValuesFrom([]LoadedValues{
		{Source: rel.ValuesFrom[0], Data: []byte("- hunter22\n")},
		{Source: rel.ValuesFrom[1], Data: nil},
		{Source: rel.ValuesFrom[2], Data: nil},
	})
	require.ErrorContains(t, err, `valuesFrom configmap "shop/web-config" key "values.yaml": not a YAML map of Helm values: `,
		"a ConfigMap holds no credential: the parser's message is kept")

	with, err := rel.WithValuesFrom([]LoadedValues{
		{Source: rel.ValuesFrom[0], Data: []byte("color: blue-sky\n")},
		{Source: rel.ValuesFrom[1], Data: []byte("db: {password: hunter22, port: 5432, tls: true, user: ab}\n")},
		{Source: rel.ValuesFrom[2], Data: []byte("token: hunter22-long\n")},
	})
	require.NoError(t, err)
	require.Equal(t, `ConfigMap "web" is invalid: data[p]: Invalid value: "[redacted]" in blue-sky on port [redacted], user ab`,
		with.Redact(`ConfigMap "web" is invalid: data[p]: Invalid value: "hunter22-long" in blue-sky on port 5432, user ab`),
		"the longest first; a ConfigMap's values and values too short to hide stay")
	require.Equal(t, "hunter22", rel.Redact("hunter22"), "a rendering without sources redacts nothing")
}
