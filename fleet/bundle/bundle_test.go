package bundle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-gitops/flotilla/fleet/names"
)

func write(t *testing.T, root string, files map[string]string) {
	for p, c := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

func TestDiscoverFindsBundlesButNotTheirInsides(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"apps/web/fleet.yaml":               "name: web\n",
		"apps/web/chart/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"apps/web/chart/templates/cm.yaml":  "kind: ConfigMap\n",
		"apps/web/overlays/prod/cm.yaml":    "kind: ConfigMap\n",
		"apps/plain/cm.yaml":                "kind: ConfigMap\n",
		"apps/plain/sub/more.yaml":          "kind: ConfigMap\n",
		"apps/kust/kustomization.yaml":      "resources: [base]\n",
		"apps/kust/base/kustomization.yaml": "resources: [d.yaml]\n",
		"apps/kust/base/d.yaml":             "kind: Deployment\n",
		"apps/plain/nested/fleet.yaml":      "defaultNamespace: x\n",
		"apps/broken/fleet.yaml":            "helm: [\n",
		"docs/readme.md":                    "not a bundle",
	})
	refs, err := Discover(root, "repo", []string{"apps/*"})
	require.NoError(t, err)
	require.Equal(t, []Ref{
		{Name: "repo-apps-broken", Path: "apps/broken"},
		{Name: "repo-apps-kust", Path: "apps/kust"},
		{Name: "repo-apps-plain", Path: "apps/plain"},
		{Name: "repo-apps-plain-nested", Path: "apps/plain/nested"},
		{Name: "web", Path: "apps/web"},
	}, refs)

	_, err = Discover(root, "repo", []string{"nowhere"})
	require.ErrorContains(t, err, `paths[0] "nowhere"`)
}

func TestLoadNamesFileAndLine(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"a/fleet.yaml": "name: a\nhelm:\n  values:\n    x: [1, 2\n",
		"b/fleet.yaml": "name: b\nhelm:\n  values: just-a-string\n",
	})
	_, err := Load(root, Ref{Name: "a", Path: "a"})
	require.ErrorContains(t, err, "a/fleet.yaml: line")
	_, err = Load(root, Ref{Name: "b", Path: "b"})
	require.ErrorContains(t, err, "b/fleet.yaml: line 3: helm.values")
}

func TestANameThatCannotBeALabelValueIsRefusedWithItsLine(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, name := range []string{"web app", "-web", "web-", "wéb", long} {
		root := t.TempDir()
		write(t, root, map[string]string{"apps/web/fleet.yaml": "defaultNamespace: web\nname: " + name + "\n", "apps/web/cm.yaml": "kind: ConfigMap\n"})
		refs, err := Discover(root, "shop", nil)
		require.NoError(t, err)
		require.Equal(t, []Ref{{Name: "shop-apps-web", Path: "apps/web"}}, refs,
			"the bundle goes by its derived name: %q never becomes a label value", name)
		_, err = Load(root, refs[0])
		require.ErrorContains(t, err, `apps/web/fleet.yaml: line 2: name "`+name+`": must be a Kubernetes label value`)
	}
	for _, name := range []string{"Web_App.v2", strings.Repeat("a", 63), "7"} {
		root := t.TempDir()
		write(t, root, map[string]string{"web/fleet.yaml": "name: '" + name + "'\n"})
		refs, err := Discover(root, "shop", nil)
		require.NoError(t, err)
		require.Equal(t, name, refs[0].Name)
		_, err = Load(root, refs[0])
		require.NoError(t, err, name)
	}
}

func TestABundleKeepsItsNameWhenAnotherKeyOfItsFleetYAMLIsWrong(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"apps/web/fleet.yaml": "name: web\nhelm:\n  relaseName: x\n"})
	refs, err := Discover(root, "shop", nil)
	require.NoError(t, err)
	require.Equal(t, "web", refs[0].Name, "its live release, labelled web, stays its own while the error shows")
	_, err = Load(root, refs[0])
	require.ErrorContains(t, err, `unknown key "relaseName"`)
}

func TestDerivedNamesAreValidLabelValuesAndReleaseNames(t *testing.T) {
	for _, in := range []string{
		"shop", "shop/apps/web", "Shop/Apps/Web", "shop/apps/web.v2", "shop/ünïcödé/😀", "shop/" + strings.Repeat("x/", 60),
		"shop/" + strings.Repeat("a-", 40) + "b", "shop/--/__/..", "", "/", "-",
	} {
		got := names.HelmReleaseName(in)
		require.Empty(t, validation.IsValidLabelValue(got), "%q → %q", in, got)
		require.Empty(t, validation.IsDNS1123Label(got), "%q → %q", in, got)
		require.LessOrEqual(t, len(got), 53, "%q → %q", in, got)
	}
}

func TestBundlesThatWouldShareAReleaseAreRefused(t *testing.T) {
	for _, tc := range []struct {
		files map[string]string
		want  []string
	}{
		{map[string]string{"b/c/cm.yaml": "kind: ConfigMap\n", "b-c/cm.yaml": "kind: ConfigMap\n"},
			[]string{`"a-b-c"`, `"b/c"`, `"b-c"`}},
		{map[string]string{"x/fleet.yaml": "name: web\n", "y/fleet.yaml": "name: web\n"},
			[]string{`"web"`, `"x"`, `"y"`}},
		{map[string]string{"x/fleet.yaml": "name: a--b\n", "y/fleet.yaml": "name: a-b\n"},
			[]string{`"x" (named "a--b")`, `"y" (named "a-b")`, `Helm release "a-b"`}},
	} {
		root := t.TempDir()
		write(t, root, tc.files)
		_, err := Discover(root, "a", nil)
		require.Error(t, err)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w)
		}
	}
}
