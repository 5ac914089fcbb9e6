package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// dependsOnRepo is Fleet's helm-multi-chart layout, with local charts: a CRD chart, the app that needs it,
// and a few bundles that depend on them in every way dependsOn allows.
func dependsOnRepo(t *testing.T, extra map[string]string) []Bundle {
	files := map[string]string{
		"multi/crd/fleet.yaml":       "labels: {role: crd, tier: infra}\n",
		"multi/crd/Chart.yaml":       "apiVersion: v2\nname: crd\nversion: 0.1.0\n",
		"multi/app/fleet.yaml":       "labels: {tier: app}\ndependsOn:\n- name: shop-multi-crd\n",
		"multi/app/Chart.yaml":       "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"multi/named/fleet.yaml":     "name: named\nlabels: {tier: infra}\n",
		"multi/named/cm.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: named}\n",
		"multi/dashboard/fleet.yaml": "dependsOn:\n- selector: {matchLabels: {tier: infra}}\n  acceptedStates: [Ready, Modified]\n",
		"multi/dashboard/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dashboard}\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	bundles, err := Load(repo(t, files), "shop", nil, nil)
	require.NoError(t, err)
	return bundles
}

func resolved(t *testing.T, bundles []Bundle) map[string]Dependencies {
	t.Helper()
	deps := ResolveDependsOn(bundles, "shop", "")
	require.Len(t, deps, len(bundles))
	out := map[string]Dependencies{}
	for i, b := range bundles {
		out[b.Ref.Name] = deps[i]
	}
	return out
}

func TestDependsOnResolvesNamesAndSelectorsToTheGitReposBundles(t *testing.T) {
	cases := []struct {
		name      string
		fleetYAML string
		want      []Dependency
	}{
		{"Fleet's generated name <gitrepo>-<path>", "dependsOn:\n- name: shop-multi-crd\n",
			[]Dependency{{Name: "shop-multi-crd", Bundles: []string{"shop-multi-crd"}}}},
		{"a name set in fleet.yaml", "dependsOn:\n- name: named\n  acceptedStates: [Ready, NotReady]\n",
			[]Dependency{{Name: "named", Bundles: []string{"named"}, AcceptedStates: []string{"Ready", "NotReady"}}}},
		{"a name no bundle has matches nothing", "dependsOn:\n- name: crd\n",
			[]Dependency{{Name: "crd"}}},
		{"a selector on fleet.yaml labels", "dependsOn:\n- selector: {matchLabels: {tier: infra}}\n",
			[]Dependency{{Selector: "tier=infra", Bundles: []string{"named", "shop-multi-crd"}}}},
		{"a selector with expressions", "dependsOn:\n- selector:\n    matchExpressions: [{key: tier, operator: In, values: [app, infra]}, {key: role, operator: DoesNotExist}]\n",
			[]Dependency{{Selector: "!role,tier in (app,infra)", Bundles: []string{"named", "shop-multi-app"}}}},
		{"a selector on Fleet's own labels", "dependsOn:\n- selector: {matchLabels: {fleet.cattle.io/bundle-name: named, fleet.cattle.io/repo-name: shop, fleet.cattle.io/bundle-namespace: fleet-default}}\n",
			[]Dependency{{Selector: "fleet.cattle.io/bundle-name=named,fleet.cattle.io/bundle-namespace=fleet-default,fleet.cattle.io/repo-name=shop", Bundles: []string{"named"}}}},
		{"a name and a selector must both hold", "dependsOn:\n- name: named\n  selector: {matchLabels: {role: crd}}\n- name: shop-multi-crd\n  selector: {matchLabels: {role: crd}}\n",
			[]Dependency{{Name: "named", Selector: "role=crd"}, {Name: "shop-multi-crd", Selector: "role=crd", Bundles: []string{"shop-multi-crd"}}}},
		{"a selector no bundle matches", "dependsOn:\n- selector: {matchLabels: {tier: db}}\n",
			[]Dependency{{Selector: "tier=db"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deps := resolved(t, dependsOnRepo(t, map[string]string{
				"multi/probe/fleet.yaml": c.fleetYAML,
				"multi/probe/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\n",
			}))
			require.NoError(t, deps["shop-multi-probe"].Err)
			require.Equal(t, c.want, deps["shop-multi-probe"].DependsOn)
		})
	}

	deps := resolved(t, dependsOnRepo(t, nil))
	require.Equal(t, []Dependency{{Selector: "tier=infra", Bundles: []string{"named", "shop-multi-crd"}, AcceptedStates: []string{"Ready", "Modified"}}},
		deps["shop-multi-dashboard"].DependsOn)
	require.Empty(t, deps["shop-multi-crd"].DependsOn)
	for name, d := range deps {
		require.NoError(t, d.Err, name)
	}
}

// A bundle on a dependsOn cycle can never be applied: it gets an error naming the cycle from itself back to
// itself. The bundles outside the cycle, those that depend on it included, resolve as usual.
func TestADependsOnCycleIsAnErrorOnEachBundleOfTheCycle(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  map[string]string
	}{
		{"a → a", map[string]string{"multi/crd/fleet.yaml": "labels: {role: crd, tier: infra}\ndependsOn: [{name: shop-multi-crd}]\n"},
			map[string]string{"shop-multi-crd": "dependsOn cycle: shop-multi-crd → shop-multi-crd"}},
		{"a → b → a", map[string]string{"multi/crd/fleet.yaml": "labels: {role: crd, tier: infra}\ndependsOn: [{name: shop-multi-app}]\n"},
			map[string]string{
				"shop-multi-crd": "dependsOn cycle: shop-multi-crd → shop-multi-app → shop-multi-crd",
				"shop-multi-app": "dependsOn cycle: shop-multi-app → shop-multi-crd → shop-multi-app",
			}},
		{"a selector that matches its own bundle", map[string]string{"multi/named/fleet.yaml": "name: named\nlabels: {tier: infra}\ndependsOn: [{selector: {matchLabels: {tier: infra}}}]\n"},
			map[string]string{
				"named": "dependsOn cycle: named → named",
				// dashboard depends on named and crd, and is on no cycle.
			}},
		{"a → b → c → a, through a selector", map[string]string{
			"multi/crd/fleet.yaml":   "labels: {role: crd, tier: infra}\ndependsOn: [{name: shop-multi-dashboard}]\n",
			"multi/named/fleet.yaml": "name: named\nlabels: {tier: infra}\n"},
			map[string]string{
				"shop-multi-crd":       "dependsOn cycle: shop-multi-crd → shop-multi-dashboard → shop-multi-crd",
				"shop-multi-dashboard": "dependsOn cycle: shop-multi-dashboard → shop-multi-crd → shop-multi-dashboard",
			}},
		{"the shortest of two cycles", map[string]string{
			"multi/crd/fleet.yaml":   "labels: {role: crd, tier: infra}\ndependsOn: [{name: named}, {name: shop-multi-app}]\n",
			"multi/named/fleet.yaml": "name: named\nlabels: {tier: infra}\ndependsOn: [{name: shop-multi-app}]\n"},
			map[string]string{
				"shop-multi-crd": "dependsOn cycle: shop-multi-crd → shop-multi-app → shop-multi-crd",
				"shop-multi-app": "dependsOn cycle: shop-multi-app → shop-multi-crd → shop-multi-app",
				"named":          "dependsOn cycle: named → shop-multi-app → shop-multi-crd → named",
				// dashboard depends on named and crd, which are on cycles, but nothing depends on it.
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deps := resolved(t, dependsOnRepo(t, c.files))
			for name, d := range deps {
				want, onCycle := c.want[name]
				if !onCycle {
					require.NoError(t, d.Err, name)
					continue
				}
				require.EqualError(t, d.Err, want, name)
			}
		})
	}
}

// A bundle whose fleet.yaml does not load has unknown labels and dependencies: a selector is taken to match
// it, so what might depend on it waits; it depends on nothing, so it closes no cycle.
func TestABundleThatDoesNotLoadMatchesEverySelector(t *testing.T) {
	deps := resolved(t, dependsOnRepo(t, map[string]string{
		"multi/broken/fleet.yaml": "labels: {tier: web}\ndependsOn: [{name: shop-multi-dashboard}]\nhelm: {relaseName: x}\n",
		"multi/broken/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken}\n",
		"multi/named/fleet.yaml":  "name: named\nlabels: {tier: infra}\ndependsOn: [{name: shop-multi-broken}]\n",
	}))
	require.Equal(t, []Dependency{{Selector: "tier=infra", Bundles: []string{"named", "shop-multi-broken", "shop-multi-crd"},
		AcceptedStates: []string{"Ready", "Modified"}}}, deps["shop-multi-dashboard"].DependsOn)
	require.Empty(t, deps["shop-multi-broken"].DependsOn)
	require.Equal(t, []Dependency{{Name: "shop-multi-broken", Bundles: []string{"shop-multi-broken"}}}, deps["named"].DependsOn)
	for name, d := range deps {
		require.NoError(t, d.Err, name)
	}
}
