package render

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/fieldvariants"
)

// chartRepo is a chart with templates, defaults overridden by fleet.yaml, a schema, a file read by a
// template, a CRD, an enabled subchart it sets values of, and a subchart its condition disables.
func chartRepo() map[string]string {
	return map[string]string{
		"app/fleet.yaml": "defaultNamespace: shop\nhelm:\n  chart: ./chart\n" +
			"  values: {replicas: 3, greeting: hello, cache: {enabled: true, size: 64}}\n",
		"app/chart/Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n" +
			"- {name: cache, version: 0.2.0, condition: cache.enabled}\n- {name: debug, version: 0.3.0, condition: debug.enabled}\n",
		"app/chart/values.yaml":        "replicas: 1\ngreeting: hi\ncache: {enabled: false, size: 8}\ndebug: {enabled: false}\n",
		"app/chart/values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`,
		"app/chart/motd.txt":           "welcome aboard\n",
		"app/chart/crds/widget.yaml":   "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
		"app/chart/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n" +
			"  replicas: {{ .Values.replicas }}\n",
		"app/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\ndata:\n" +
			"  greeting: {{ .Values.greeting | quote }}\n  motd: {{ .Files.Get \"motd.txt\" | quote }}\n",
		"app/chart/charts/cache/Chart.yaml":         "apiVersion: v2\nname: cache\nversion: 0.2.0\n",
		"app/chart/charts/cache/values.yaml":        "size: 1\n",
		"app/chart/charts/cache/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cache\ndata:\n  size: {{ .Values.size | quote }}\n",
		"app/chart/charts/debug/Chart.yaml":         "apiVersion: v2\nname: debug\nversion: 0.3.0\n",
		"app/chart/charts/debug/templates/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: debug\n",
	}
}

func manifestsRepo() map[string]string {
	return map[string]string{
		"app/fleet.yaml": "defaultNamespace: apps\n",
		"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: \"1\"\n",
		"app/svc.yaml":   "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n",
	}
}

// rendered is the bundle at dir rendered for cluster, not yet templated: Helm drops a chart's disabled
// subcharts from it as it templates it, and the worker packages what ForCluster returns.
func rendered(t *testing.T, root, dir string, cluster fleet.ClusterInfo, targetNamespace string) *Release {
	t.Helper()
	b, err := bundle.Load(root, bundle.Ref{Name: dir, Path: dir})
	require.NoError(t, err)
	rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: cluster, GitRepo: "bench", TargetNamespace: targetNamespace})
	require.NoError(t, err)
	return rel
}

// repackaged is the release as an agent gets it: packaged, then decoded.
func repackaged(t *testing.T, rel *Release) *Release {
	t.Helper()
	data, err := rel.MarshalPackage()
	require.NoError(t, err)
	out, err := UnmarshalPackage(data)
	require.NoError(t, err)
	return out
}

// requireSameRendering templates both releases and requires the same objects, byte for byte.
func requireSameRendering(t *testing.T, want, got *Release) string {
	t.Helper()
	wantOut, err := Template(want, TemplateOptions{})
	require.NoError(t, err)
	gotOut, err := Template(got, TemplateOptions{})
	require.NoError(t, err)
	require.Equal(t, string(wantOut), string(gotOut))
	require.Equal(t, want.DeploymentID, got.DeploymentID)
	return string(gotOut)
}

// An agent applying a chart's package renders what the management worker would have: the chart's
// templates, values, files, schema, CRDs and enabled subchart, and not the disabled one.
func TestAChartsPackageRendersTheSameManifests(t *testing.T) {
	root := writeRepo(t, chartRepo())
	rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.Len(t, rel.Chart.Dependencies(), 2)
	decoded := repackaged(t, rel)
	require.Len(t, decoded.Chart.Dependencies(), 2)
	require.Equal(t, "app", decoded.Chart.Dependencies()[0].Parent().Name(), "subcharts know their parent again")

	out := requireSameRendering(t, rel, decoded)
	objs := decode(t, out)
	require.EqualValues(t, 3, field(find(t, objs, "Deployment", rel.Name+"-web"), "spec", "replicas"))
	require.Equal(t, "welcome aboard\n", field(find(t, objs, "ConfigMap", "greeting"), "data", "motd"))
	require.Equal(t, "64", field(find(t, objs, "ConfigMap", "cache"), "data", "size"), "the parent's values reach the subchart")
	find(t, objs, "CustomResourceDefinition", "widgets.example.com")
	for _, o := range objs {
		require.NotEqual(t, "Pod", o["kind"], "the disabled subchart stays out")
	}
}

// Raw manifests travel in the post-renderer, over an empty chart.
func TestAManifestsPackageRendersTheSameManifests(t *testing.T) {
	root := writeRepo(t, manifestsRepo())
	rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	require.Empty(t, rel.Chart.Templates)
	out := requireSameRendering(t, rel, repackaged(t, rel))
	objs := decode(t, out)
	require.Len(t, objs, 2)
	require.Equal(t, "bench", field(find(t, objs, "Service", "web"), "metadata", "labels", "flotilla.dev/gitrepo"))
}

// A forced namespace is enforced by the post-renderer the agent rebuilds: every object lands in it.
func TestAPackageKeepsTheForcedNamespace(t *testing.T) {
	root := writeRepo(t, manifestsRepo())
	rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c"}, "forced")
	decoded := repackaged(t, rel)
	require.Equal(t, "forced", decoded.ForcedNamespace)
	for _, o := range decode(t, requireSameRendering(t, rel, decoded)) {
		require.Equal(t, "forced", field(o, "metadata", "namespace"))
	}
}

// Every worker, every run, makes the same bytes of the same rendering: they store it under one digest.
func TestPackagesAreDeterministic(t *testing.T) {
	root := writeRepo(t, chartRepo())
	pack := func() []byte {
		rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c", Labels: map[string]string{"a": "1", "b": "2"}}, "")
		data, err := rel.MarshalPackage()
		require.NoError(t, err)
		return data
	}
	require.True(t, bytes.Equal(pack(), pack()), "two renderings of the same input package to the same bytes")
}

// The agent merges the valuesFrom sources it reads on its cluster over a decoded release, as the
// management worker would have over a fresh one, and redacts the Secret's values alike.
func TestAPackagesReleaseTakesValuesFromTheCluster(t *testing.T) {
	files := valuesFromRepo("")
	files["web/chart/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  color: {{ .Values.color }}\n  user: {{ .Values.user }}\n"
	rel, err := renderWeb(t, files, Input{Cluster: fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"region": "eu"}}})
	require.NoError(t, err)
	loaded := []LoadedValues{
		{Source: rel.ValuesFrom[0], UID: "u1", Data: []byte("color: blue\n")},
		{Source: rel.ValuesFrom[1], UID: "u2", Data: []byte("user: s3cr3t-user\n")},
		{Source: rel.ValuesFrom[2], UID: "u3", Data: []byte("{}\n")},
	}
	decoded := repackaged(t, rel)
	want, err := rel.WithValuesFrom(loaded)
	require.NoError(t, err)
	got, err := decoded.WithValuesFrom(loaded)
	require.NoError(t, err)
	requireSameRendering(t, want, got)
	require.Equal(t, "login [redacted] failed", got.Redact("login s3cr3t-user failed"))

	_, err = want.MarshalPackage()
	require.ErrorContains(t, err, `bundle "web"`)
	require.ErrorContains(t, err, "never leave the cluster", "values read from a cluster's Secrets are never packaged")
}

// A kustomize.dir over a chart reads the repository when Helm renders the chart, which an agent cannot.
func TestAKustomizationOverAChartIsNotPackaged(t *testing.T) {
	root := writeRepo(t, helmKustomizeRepo())
	rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	_, err := rel.MarshalPackage()
	require.ErrorContains(t, err, `bundle "app"`)
	require.ErrorContains(t, err, "kustomize.dir")
	require.ErrorContains(t, err, "not supported on agent-mode clusters yet")
}

// A kustomization without a chart is built when rendering: its output travels like raw manifests.
func TestAKustomizationWithoutAChartIsPackaged(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\nnamePrefix: dev-\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
	})
	rel := rendered(t, root, "app", fleet.ClusterInfo{Name: "c"}, "")
	find(t, decode(t, requireSameRendering(t, rel, repackaged(t, rel))), "ConfigMap", "dev-settings")
}

// A package from a newer Flotilla is refused, not half understood; so is one too large once decompressed.
func TestAnUnknownOrOversizedPackageIsRefused(t *testing.T) {
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, err := zw.Write([]byte(s))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	_, err := UnmarshalPackage(gz(`{"v":2,"bundle":"app"}`))
	require.ErrorContains(t, err, `bundle "app": package version 2 is not known here`)

	_, err = unmarshalPackage(gz(`{"v":1,"bundle":"app","values":{"pad":"`+string(bytes.Repeat([]byte("x"), 2048))+`"}}`), 1024)
	require.ErrorContains(t, err, "over the 1 KiB limit once decompressed")

	_, err = UnmarshalPackage([]byte("not gzip"))
	require.ErrorContains(t, err, "package")
}

// A check's summary carries everything but the chart and the values, and leaves the release it was made
// of as it was.
func TestASummaryRoundTripsWithoutChartAndValues(t *testing.T) {
	rel, err := renderWeb(t, valuesFromRepo(""), Input{Cluster: fleet.ClusterInfo{Name: "dev", Labels: map[string]string{"region": "eu"}}})
	require.NoError(t, err)
	rel.SyncGeneration, rel.DeleteNamespace, rel.Paused, rel.Options.Helm.MaxHistory = 7, true, true, 4
	data, err := rel.MarshalSummary()
	require.NoError(t, err)
	got, err := UnmarshalSummary(data)
	require.NoError(t, err)

	require.Nil(t, got.Chart)
	require.Nil(t, got.Values)
	require.Nil(t, got.PostRenderer)
	require.Nil(t, got.Options.Helm.Values, "fleet.yaml's values stay out of every check's payload")
	require.NotNil(t, rel.Options.Helm.Values, "the release itself keeps them")
	require.Equal(t, 4, got.Options.Helm.MaxHistory)

	want := *rel
	want.Chart, want.Values, want.PostRenderer = nil, nil, nil
	helm := *rel.Options.Helm
	helm.Values, helm.TemplateValues = nil, nil
	want.Options.Helm = &helm
	require.Equal(t, &want, got)

	_, err = UnmarshalSummary([]byte(`{"v":9,"bundle":"web"}`))
	require.ErrorContains(t, err, "release summary version 9 is not known here")
}

// A package is named by its deployment ID and its summary (the management side's index of packages made,
// shared by every cluster and GitRepo): whatever changes a package's bytes must change one of the two, or
// one GitRepo's cluster would be sent a package made for another. Every input field is changed alone, found
// by reflection, so an input added later is covered.
func TestWhatChangesAPackageChangesItsName(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"app/fleet.yaml": "defaultNamespace: apps\nhelm:\n  values:\n    region: ${ .ClusterValues.region }\n    team: ${ .ClusterLabels.team }\n",
		"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
	})
	b, err := bundle.Load(root, bundle.Ref{Name: "app", Path: "app"})
	require.NoError(t, err)
	base := Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c",
		Labels: map[string]string{"team": "a"}, TemplateValues: map[string]any{"region": "eu"}}, GitRepo: "shop", Commit: "c0ffee"}
	name := func(in Input) (string, []byte, bool) {
		rel, err := ForCluster(in)
		if err != nil {
			t.Logf("not rendered: %v", err)
			return "", nil, false
		}
		summary, err := rel.MarshalSummary()
		require.NoError(t, err)
		pkg, err := rel.MarshalPackage()
		require.NoError(t, err)
		return rel.DeploymentID + "\x00" + string(summary), pkg, true
	}
	baseName, basePkg, ok := name(base)
	require.True(t, ok)
	changed := 0
	for path, v := range fieldvariants.Of(base, "input", "input.RepoRoot", "input.Bundle", "input.Charts", "input.ChartLocks") {
		n, pkg, ok := name(v.(Input))
		if !ok || bytes.Equal(pkg, basePkg) {
			continue
		}
		changed++
		require.NotEqual(t, baseName, n, "%s changes the package but not its name", path)
	}
	require.GreaterOrEqual(t, changed, 3, "the GitRepo, its namespace and the target namespace change the package")
}
