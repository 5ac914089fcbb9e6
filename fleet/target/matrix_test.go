package target_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// The clusters of the matrix, after Fleet's own target matrix: three clusters, two groups that carry labels
// of their own, and the "default" group that holds them all.
var (
	matrixClusters = []fleet.Cluster{
		cluster("one", map[string]string{"env": "prod", "region": "eu"}),
		cluster("two", map[string]string{"env": "prod", "region": "us", "management.cattle.io/cluster-display-name": "shop-us"}),
		cluster("three", map[string]string{"env": "dev", "region": "eu"}),
	}
	matrixGroups = []fleet.ClusterGroup{
		group("prod", map[string]string{"tier": "critical"}, "env", "prod"),
		group("eu", map[string]string{"geo": "europe"}, "region", "eu"),
	}
)

func cluster(name string, labels map[string]string) fleet.Cluster {
	return fleet.Cluster{Metadata: fleet.ObjectMeta{Name: name, Labels: labels}}
}

func group(name string, labels map[string]string, selectKey, selectValue string) fleet.ClusterGroup {
	return fleet.ClusterGroup{Metadata: fleet.ObjectMeta{Name: name, Labels: labels},
		Spec: fleet.ClusterGroupSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{selectKey: selectValue}}}}
}

// outcome is what one targeted cluster gets of a bundle.
type outcome struct {
	customization string
	skipped       bool
	// options is the merged options in fleet.yaml's spelling; not compared when skipped.
	options string
}

func deployed(options string) outcome { return outcome{options: options} }

func customized(name, options string) outcome { return outcome{customization: name, options: options} }

func skippedBy(name string) outcome { return outcome{customization: name, skipped: true} }

const web = "defaultNamespace: web"

// everywhere is an outcome for each cluster named.
func everywhere(o outcome, clusters ...string) map[string]outcome {
	m := map[string]outcome{}
	for _, c := range clusters {
		m[c] = o
	}
	return m
}

type matrixCase struct {
	name string
	// targets is the GitRepo's spec.targets.
	targets   string
	fleetYAML string
	// want holds exactly the clusters the bundle is targeted at.
	want map[string]outcome
}

// A GitRepo's targets choose the clusters; a bundle's overrideTargets replace them; targetCustomizations
// never add a cluster, only change what a targeted one gets.
func TestTargetsChooseExactlyTheseClusters(t *testing.T) {
	runMatrix(t, []matrixCase{
		{name: "no targets: the default group, every cluster", fleetYAML: web,
			want: everywhere(deployed(web), "one", "two", "three")},
		{name: "clusterName is the object's name", targets: "- clusterName: one", fleetYAML: web,
			want: everywhere(deployed(web), "one")},
		{name: "clusterName is also Rancher's display name", targets: "- clusterName: shop-us", fleetYAML: web,
			want: everywhere(deployed(web), "two")},
		{name: "clusterSelector with labels", targets: "- clusterSelector: {matchLabels: {env: prod}}", fleetYAML: web,
			want: everywhere(deployed(web), "one", "two")},
		{name: "clusterSelector with an expression",
			targets:   "- clusterSelector: {matchExpressions: [{key: region, operator: In, values: [eu]}]}",
			fleetYAML: web, want: everywhere(deployed(web), "one", "three")},
		{name: "an empty clusterSelector selects every cluster", targets: "- clusterSelector: {}", fleetYAML: web,
			want: everywhere(deployed(web), "one", "two", "three")},
		{name: "clusterGroup", targets: "- clusterGroup: eu", fleetYAML: web,
			want: everywhere(deployed(web), "one", "three")},
		{name: "clusterGroupSelector reads the group's labels, not the cluster's",
			targets: "- clusterGroupSelector: {matchLabels: {tier: critical}}", fleetYAML: web,
			want: everywhere(deployed(web), "one", "two")},
		{name: "the criteria of one target are AND-ed",
			targets: "- clusterSelector: {matchLabels: {region: eu}}\n  clusterGroup: prod", fleetYAML: web,
			want: everywhere(deployed(web), "one")},
		{name: "clusterGroup and clusterGroupSelector must hold for one and the same group",
			targets: "- clusterGroup: eu\n  clusterGroupSelector: {matchLabels: {tier: critical}}", fleetYAML: web,
			want: everywhere(deployed(web))},
		{name: "a target without criteria matches nothing", targets: "- name: nothing", fleetYAML: web,
			want: everywhere(deployed(web))},
		{name: "targets are OR-ed", targets: "- clusterName: one\n- clusterName: three", fleetYAML: web,
			want: everywhere(deployed(web), "one", "three")},
		{name: "doNotDeploy on the first matching target excludes the cluster",
			targets: "- clusterName: one\n  doNotDeploy: true\n- clusterSelector: {}", fleetYAML: web,
			want: everywhere(deployed(web), "two", "three")},
		{name: "the first matching target decides: a doNotDeploy after it excludes nothing",
			targets: "- clusterSelector: {}\n- clusterName: one\n  doNotDeploy: true", fleetYAML: web,
			want: everywhere(deployed(web), "one", "two", "three")},
		{name: "overrideTargets replace the GitRepo's targets", targets: "- clusterName: two",
			fleetYAML: web + "\noverrideTargets:\n- clusterGroup: eu",
			want:      everywhere(deployed(web), "one", "three")},
		{name: "overrideTargets take doNotDeploy as targets do", targets: "- clusterName: two",
			fleetYAML: web + "\noverrideTargets:\n- clusterName: three\n  doNotDeploy: true\n- clusterGroup: eu",
			want:      everywhere(deployed(web), "one")},
		{name: "a targetCustomization does not add a cluster", targets: "- clusterName: one",
			fleetYAML: web + "\ntargetCustomizations:\n- name: two\n  clusterName: two\n  namespace: elsewhere",
			want:      everywhere(deployed(web), "one")},
	})
}

// shop's fleet.yaml sets every kind of option at its root and three customizations that overlap on "one"
// (env=prod, in group eu) and on "three" (env=dev, in group eu).
const shopRoot = `defaultNamespace: web
helm:
  chart: ./chart
  values:
    image: {repository: web, tag: "1.0"}
    hosts: [a.example.com, b.example.com]
    replicas: 1
  templateValues:
    fqdn: "${ .ClusterName }.example.com"
    region: "${ .ClusterLabels.region }"
  valuesFiles: [values.yaml]
  atomic: true
  takeOwnership: true
yaml:
  overlays: [base]
diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, operations: [{op: remove, path: /spec/replicas}]}
correctDrift: {enabled: true, force: true}
forceSyncGeneration: 1
`

const shop = shopRoot + `targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  namespace: web-prod
  helm:
    values:
      image: {tag: "2.0"}
      hosts: [shop.example.com]
    templateValues:
      region: "prod-${ .ClusterLabels.region }"
    valuesFiles: [prod.yaml]
    force: true
    takeOwnership: false
  yaml:
    overlays: [prod]
  diff:
    comparePatches:
    - {apiVersion: v1, kind: Service, name: web, operations: [{op: ignore}]}
  correctDrift: {enabled: true}
  keepResources: true
  forceSyncGeneration: 2
- name: europe
  clusterGroup: eu
  defaultNamespace: web-eu
  helm:
    values:
      replicas: 3
      image: {repository: mirror.eu/web}
  yaml:
    overlays: [eu]
  forceSyncGeneration: 3
- name: dev-off
  clusterSelector: {matchLabels: {env: dev}}
  doNotDeploy: true
`

// shopForProd is shop's root options with the customization "prod" merged over them: scalars set replace,
// values deep-merge with lists replaced, templateValues merge by key, valuesFiles and overlays append,
// comparePatches merge by the object they name, booleans OR (takeOwnership: false cannot turn the root's off), correctDrift is
// replaced whole.
const shopForProd = `defaultNamespace: web
namespace: web-prod
helm:
  chart: ./chart
  values:
    image: {repository: web, tag: "2.0"}
    hosts: [shop.example.com]
    replicas: 1
  templateValues:
    fqdn: "${ .ClusterName }.example.com"
    region: "prod-${ .ClusterLabels.region }"
  valuesFiles: [values.yaml, prod.yaml]
  atomic: true
  takeOwnership: true
  force: true
yaml:
  overlays: [base, prod]
diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, operations: [{op: remove, path: /spec/replicas}]}
  - {apiVersion: v1, kind: Service, name: web, operations: [{op: ignore}]}
correctDrift: {enabled: true}
keepResources: true
forceSyncGeneration: 2
`

// shopForEurope is shop's root options with the customization "europe" merged over them.
const shopForEurope = `defaultNamespace: web-eu
helm:
  chart: ./chart
  values:
    image: {repository: mirror.eu/web, tag: "1.0"}
    hosts: [a.example.com, b.example.com]
    replicas: 3
  templateValues:
    fqdn: "${ .ClusterName }.example.com"
    region: "${ .ClusterLabels.region }"
  valuesFiles: [values.yaml]
  atomic: true
  takeOwnership: true
yaml:
  overlays: [base, eu]
diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, operations: [{op: remove, path: /spec/replicas}]}
correctDrift: {enabled: true, force: true}
forceSyncGeneration: 3
`

// The first matching targetCustomization is merged over the root options, and decides doNotDeploy.
func TestTheFirstMatchingCustomizationIsMergedOverTheRootOptions(t *testing.T) {
	runMatrix(t, []matrixCase{
		{name: "each cluster gets its first match", fleetYAML: shop,
			want: map[string]outcome{
				"one":   customized("prod", shopForProd),
				"two":   customized("prod", shopForProd),
				"three": customized("europe", shopForEurope),
			}},
		{name: "a cluster whose first match says doNotDeploy is skipped, whatever matches after",
			fleetYAML: web + "\ntargetCustomizations:\n- name: off\n  clusterName: one\n  doNotDeploy: true\n" +
				"- name: all\n  clusterSelector: {}\n  namespace: web-all",
			want: map[string]outcome{
				"one":   skippedBy("off"),
				"two":   customized("all", web+"\nnamespace: web-all"),
				"three": customized("all", web+"\nnamespace: web-all"),
			}},
		{name: "comparePatches merge by apiVersion, kind, namespace and name: a customization's replaces the root's in place, the first of two counts",
			targets: "- clusterName: one",
			fleetYAML: `diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, jsonPointers: [/spec/replicas]}
  - {apiVersion: apps/v1, kind: Deployment, name: api, jsonPointers: [/spec/replicas]}
targetCustomizations:
- name: one
  clusterName: one
  diff:
    comparePatches:
    - {apiVersion: v1, kind: Service, name: web, operations: [{op: ignore}]}
    - {apiVersion: apps/v1, kind: Deployment, name: web, jsonPointers: [/spec/template]}
    - {apiVersion: apps/v1, kind: Deployment, name: api, namespace: other, jsonPointers: [/spec/template]}
    - {apiVersion: apps/v1, kind: Deployment, name: web, jsonPointers: [/metadata/labels]}`,
			want: map[string]outcome{"one": customized("one", `diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, jsonPointers: [/spec/template]}
  - {apiVersion: apps/v1, kind: Deployment, name: api, jsonPointers: [/spec/replicas]}
  - {apiVersion: v1, kind: Service, name: web, operations: [{op: ignore}]}
  - {apiVersion: apps/v1, kind: Deployment, name: api, namespace: other, jsonPointers: [/spec/template]}`)}},
		{name: "a cluster no customization matches gets the root options", targets: "- clusterSelector: {}",
			fleetYAML: web + "\ntargetCustomizations:\n- name: one\n  clusterName: one\n  namespace: web-one",
			want: map[string]outcome{
				"one":   customized("one", web+"\nnamespace: web-one"),
				"two":   deployed(web),
				"three": deployed(web),
			}},
	})
}

// shopForProdThenEurope is shop's root options with "prod" merged over them, then "europe" over that.
const shopForProdThenEurope = `defaultNamespace: web-eu
namespace: web-prod
helm:
  chart: ./chart
  values:
    image: {repository: mirror.eu/web, tag: "2.0"}
    hosts: [shop.example.com]
    replicas: 3
  templateValues:
    fqdn: "${ .ClusterName }.example.com"
    region: "prod-${ .ClusterLabels.region }"
  valuesFiles: [values.yaml, prod.yaml]
  atomic: true
  takeOwnership: true
  force: true
yaml:
  overlays: [base, prod, eu]
diff:
  comparePatches:
  - {apiVersion: apps/v1, kind: Deployment, name: web, operations: [{op: remove, path: /spec/replicas}]}
  - {apiVersion: v1, kind: Service, name: web, operations: [{op: ignore}]}
correctDrift: {enabled: true}
keepResources: true
forceSyncGeneration: 3
`

// targetCustomizationMode: AllMatches (Fleet v0.16) merges every matching customization over the root
// options in the order written, and any match saying doNotDeploy skips the cluster.
func TestAllMatchesMergesEveryMatchingCustomizationInOrder(t *testing.T) {
	runMatrix(t, []matrixCase{
		{name: "FirstMatch written out is the default", fleetYAML: "targetCustomizationMode: FirstMatch\n" + shop,
			want: map[string]outcome{
				"one":   customized("prod", shopForProd),
				"two":   customized("prod", shopForProd),
				"three": customized("europe", shopForEurope),
			}},
		{name: "every match, in order; a doNotDeploy among them skips", fleetYAML: "targetCustomizationMode: AllMatches\n" + shop,
			want: map[string]outcome{
				"one":   customized("prod, europe", shopForProdThenEurope),
				"two":   customized("prod", shopForProd),
				"three": skippedBy("dev-off"),
			}},
		{name: "a doNotDeploy before other matches skips as well",
			fleetYAML: web + "\ntargetCustomizationMode: AllMatches\ntargetCustomizations:\n" +
				"- name: off\n  clusterName: one\n  doNotDeploy: true\n- name: all\n  clusterSelector: {}\n  namespace: web-all",
			want: map[string]outcome{
				"one":   skippedBy("off"),
				"two":   customized("all", web+"\nnamespace: web-all"),
				"three": customized("all", web+"\nnamespace: web-all"),
			}},
		{name: "a later match wins a scalar; an unnamed match merges but names nothing",
			fleetYAML: web + "\ntargetCustomizationMode: AllMatches\ntargetCustomizations:\n" +
				"- clusterSelector: {}\n  namespace: web-all\n  helm: {values: {tier: any}}\n" +
				"- name: eu\n  clusterGroup: eu\n  namespace: web-eu",
			want: map[string]outcome{
				"one":   customized("eu", web+"\nnamespace: web-eu\nhelm: {values: {tier: any}}"),
				"two":   customized("", web+"\nnamespace: web-all\nhelm: {values: {tier: any}}"),
				"three": customized("eu", web+"\nnamespace: web-eu\nhelm: {values: {tier: any}}"),
			}},
		{name: "no match: the root options", targets: "- clusterName: two",
			fleetYAML: "targetCustomizationMode: AllMatches\n" + shopRoot +
				"targetCustomizations:\n- name: eu\n  clusterGroup: eu\n  doNotDeploy: true\n",
			want: map[string]outcome{"two": deployed(shopRoot)}},
	})
}

func runMatrix(t *testing.T, cases []matrixCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := deliver(t, tc.targets, tc.fleetYAML)
			require.ElementsMatch(t, keys(tc.want), keys(got), "the clusters targeted")
			for name, want := range tc.want {
				g := got[name]
				require.Equal(t, want.customization, g.customization, "cluster %q: the customization reported", name)
				require.Equal(t, want.skipped, g.skipped, "cluster %q: skipped by doNotDeploy", name)
				if !want.skipped {
					require.JSONEq(t, optionsJSON(t, want.options), g.options, "cluster %q: the merged options", name)
				}
			}
		})
	}
}

// deliver plans a GitRepo with these targets over a checkout holding one bundle with this fleet.yaml, as
// the worker does, and reports what each targeted cluster gets.
func deliver(t *testing.T, targetsYAML, fleetYAML string) map[string]outcome {
	t.Helper()
	var targets []fleet.GitTarget
	require.NoError(t, yaml.UnmarshalStrict([]byte(targetsYAML), &targets), "the case's targets")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "web"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web", "fleet.yaml"), []byte(fleetYAML), 0o644))
	bundles, err := plan.Load(dir, "shop", []string{"web"}, targets)
	require.NoError(t, err)
	require.Len(t, bundles, 1)
	require.NoError(t, bundles[0].Err)

	got := map[string]outcome{}
	for _, c := range matrixClusters {
		groups, groupLabels := target.GroupsOf(c, matrixGroups)
		ci := fleet.ClusterInfo{Name: c.Metadata.Name, Labels: c.Metadata.Labels, Groups: groups, GroupLabels: groupLabels}
		if len(plan.For(bundles, "", ci)) == 0 {
			continue
		}
		res, err := target.Customize(bundles[0].Bundle.FleetYAML, ci)
		require.NoError(t, err, "cluster %q", ci.Name)
		js, err := json.Marshal(res.Options)
		require.NoError(t, err)
		got[ci.Name] = outcome{customization: res.Name, skipped: !res.Deploy, options: string(js)}
	}
	return got
}

// optionsJSON reads options written as fleet.yaml, through the same parser, so both sides hold the same types.
func optionsJSON(t *testing.T, options string) string {
	t.Helper()
	fy, _, err := bundle.Parse("want.yaml", []byte(options))
	require.NoError(t, err, "the case's expected options")
	js, err := json.Marshal(fy.BundleDeploymentOptions)
	require.NoError(t, err)
	return string(js)
}

func keys(m map[string]outcome) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
