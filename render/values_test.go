package render

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

// layeredValues is a bundle that sets Helm values at every level Fleet knows, each level setting its own
// key and every key after it, so the value of each key says which level came last: root helm.values,
// root valuesFiles in order, then each matching targetCustomization's helm.values and its valuesFiles.
func layeredValues(mode string) map[string]string {
	return map[string]string{
		"web/fleet.yaml": `targetCustomizationMode: ` + mode + `
helm:
  chart: ./chart
  values:
    rootValues: root values
    rootFile1: root values
    rootFile2: root values
    prodValues: root values
    prodFile: root values
    euValues: root values
    euFile: root values
    nested: {fromValues: root values}
    list: [root values]
  valuesFiles: [root-1.yaml, root-2.yaml]
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  helm:
    values: {prodValues: prod values, prodFile: prod values, euValues: prod values, euFile: prod values}
    valuesFiles: [prod.yaml]
- name: eu
  clusterSelector: {matchLabels: {region: eu}}
  helm:
    values: {euValues: eu values, euFile: eu values}
    valuesFiles: [eu.yaml]
`,
		"web/root-1.yaml": "rootFile1: root-1.yaml\nrootFile2: root-1.yaml\nprodValues: root-1.yaml\nprodFile: root-1.yaml\n" +
			"euValues: root-1.yaml\neuFile: root-1.yaml\nnested: {fromFile: root-1.yaml}\nlist: [root-1.yaml]\n",
		"web/root-2.yaml":      "rootFile2: root-2.yaml\nprodValues: root-2.yaml\nprodFile: root-2.yaml\neuValues: root-2.yaml\neuFile: root-2.yaml\n",
		"web/prod.yaml":        "prodFile: prod.yaml\neuValues: prod.yaml\neuFile: prod.yaml\n",
		"web/eu.yaml":          "euFile: eu.yaml\n",
		"web/chart/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	}
}

// Helm values are layered as Fleet layers them: at each level (the root, then each matching
// targetCustomization) the inline helm.values first, then that level's valuesFiles in order over them;
// a later level over an earlier one. Fleet's `fleet apply` merges each level's valuesFiles into that level's
// values (bundlereader.parseValuesFiles), and its controller merges each customization's values over the
// root's (options.Merge): a customization's inline values win over the root's files. Maps merge key by
// key; lists and scalars are replaced.
func TestHelmValuesAreLayeredInFleetsOrder(t *testing.T) {
	clusters := map[string]fleet.ClusterInfo{
		"prod-eu": {Name: "prod-eu", Labels: map[string]string{"env": "prod", "region": "eu"}},
		"prod-us": {Name: "prod-us", Labels: map[string]string{"env": "prod", "region": "us"}},
		"dev-eu":  {Name: "dev-eu", Labels: map[string]string{"env": "dev", "region": "eu"}},
	}
	rootOnly := map[string]any{"rootValues": "root values", "rootFile1": "root-1.yaml", "rootFile2": "root-2.yaml",
		"nested": map[string]any{"fromValues": "root values", "fromFile": "root-1.yaml"}, "list": []any{"root-1.yaml"}}
	with := func(kv ...string) map[string]any {
		out := map[string]any{}
		for k, v := range rootOnly {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	prodOnly := with("prodValues", "prod values", "prodFile", "prod.yaml", "euValues", "prod.yaml", "euFile", "prod.yaml")
	euOnly := with("prodValues", "root-2.yaml", "prodFile", "root-2.yaml", "euValues", "eu values", "euFile", "eu.yaml")
	cases := []struct {
		mode string
		want map[string]map[string]any
	}{
		{"AllMatches", map[string]map[string]any{
			"prod-eu": with("prodValues", "prod values", "prodFile", "prod.yaml", "euValues", "eu values", "euFile", "eu.yaml"),
			"prod-us": prodOnly,
			"dev-eu":  euOnly,
		}},
		{"FirstMatch", map[string]map[string]any{
			"prod-eu": prodOnly,
			"prod-us": prodOnly,
			"dev-eu":  euOnly,
		}},
	}
	for _, tc := range cases {
		root := writeRepo(t, layeredValues(tc.mode))
		b, err := bundle.Load(root, bundle.Ref{Name: "web", Path: "web"})
		require.NoError(t, err)
		for name, want := range tc.want {
			rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: clusters[name], GitRepo: "shop"})
			require.NoError(t, err, "%s: cluster %s", tc.mode, name)
			require.Equal(t, want, rel.Values, "%s: cluster %s", tc.mode, name)
		}
	}
}

// Values are templated after they are layered, as Fleet templates the merged values: a root `${ }` that a
// customization replaces is never rendered, so a cluster lacking what it needs can be given a value of its
// own instead of failing. A root value replaced by a root values file is likewise never rendered.
func TestAReplacedTemplateIsNeverRendered(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"web/fleet.yaml": `helm:
  chart: ./chart
  values:
    fqdn: ${ .ClusterValues.fqdn }
    region: ${ .ClusterValues.region }
  valuesFiles: [region.yaml]
targetCustomizations:
- name: no-fqdn
  clusterName: bare
  helm:
    values: {fqdn: bare.example.com}
`,
		"web/region.yaml":      "region: eu-west\n",
		"web/chart/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	})
	b, err := bundle.Load(root, bundle.Ref{Name: "web", Path: "web"})
	require.NoError(t, err)
	rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "bare"}, GitRepo: "shop"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"fqdn": "bare.example.com", "region": "eu-west"}, rel.Values)

	rel, err = ForCluster(Input{RepoRoot: root, Bundle: b, GitRepo: "shop",
		Cluster: fleet.ClusterInfo{Name: "full", TemplateValues: map[string]any{"fqdn": "full.example.com"}}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"fqdn": "full.example.com", "region": "eu-west"}, rel.Values)

	_, err = ForCluster(Input{RepoRoot: root, Bundle: b, GitRepo: "shop", Cluster: fleet.ClusterInfo{Name: "other"}})
	require.ErrorContains(t, err, `web/fleet.yaml: helm.values`)
	require.ErrorContains(t, err, `map has no entry for key "fqdn"`)
}
