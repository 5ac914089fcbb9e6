package chartcheck

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/flotilla-gitops/flotilla/agentclient"
)

// webChart uses what real charts use: helpers, values of several types, release fields, a hook, a
// subchart that a condition switches on, and a default from values.yaml.
func webChart(t *testing.T) *chart.Chart {
	return loadChart(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n" +
			"dependencies:\n- name: cache\n  version: 0.1.0\n  condition: cache.enabled\n",
		"values.yaml":                    "replicas: 1\nimage: nginx\ncache:\n  enabled: false\n",
		"templates/_helpers.tpl":         `{{ define "web.name" }}{{ .Release.Name }}-{{ .Chart.Name }}{{ end }}`,
		"templates/deployment.yaml":      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ include \"web.name\" . }}\n  namespace: {{ .Release.Namespace }}\nspec:\n  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n      - name: web\n        image: {{ .Values.image }}\n",
		"templates/release.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release\ndata:\n  revision: {{ .Release.Revision | quote }}\n  upgrade: {{ .Release.IsUpgrade | quote }}\n  big: {{ .Values.big | quote }}\n  ratio: {{ .Values.ratio | quote }}\n  none: {{ .Values.none | quote }}\n  list: {{ .Values.list | toJson | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
		"templates/hook.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n",
		"templates/NOTES.txt":            "installed {{ .Release.Name }}\n",
		"charts/cache/Chart.yaml":        "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
		"charts/cache/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cache\n",
	})
}

// webValues hold the Go types values arrive with; an int64 must not come out as a float64 (1e+06).
func webValues() map[string]any {
	return map[string]any{"replicas": int64(3), "big": int64(1000000), "ratio": 0.5, "none": nil,
		"list": []any{"a", int64(2)}, "cache": map[string]any{"enabled": true}}
}

// helmInstall is what Helm itself renders for an install without a cluster (`helm template`).
func helmInstall(t *testing.T, c *chart.Chart, values map[string]any) *release.Release {
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.ReleaseName, in.Namespace, in.ClientOnly, in.DryRun = "web", "shop", true, true
	rel, err := in.Run(c, values)
	require.NoError(t, err)
	return rel
}

// helmUpgrade is what Helm itself renders upgrading a release whose latest revision is latest.
func helmUpgrade(t *testing.T, c *chart.Chart, values map[string]any, latest int) *release.Release {
	mem := driver.NewMemory()
	mem.SetNamespace("shop")
	cfg := &action.Configuration{Releases: storage.Init(mem), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities.Copy(), Log: func(string, ...any) {}}
	require.NoError(t, cfg.Releases.Create(&release.Release{Name: "web", Namespace: "shop", Version: latest, Chart: c,
		Info: &release.Info{Status: release.StatusDeployed}}))
	up := action.NewUpgrade(cfg)
	up.Namespace, up.ResetValues, up.DryRun = "shop", true, true
	rel, err := up.Run("web", c, values)
	require.NoError(t, err)
	return rel
}

func hookManifests(rel *release.Release) []string {
	var out []string
	for _, h := range rel.Hooks {
		out = append(out, h.Manifest)
	}
	return out
}

func TestANormalChartPassesAndRendersWhatHelmRenders(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	ans, err := c.check(context.Background(), install(webChart(t), webValues()))
	require.NoError(t, err)
	want := helmInstall(t, webChart(t), webValues())
	require.Equal(t, want.Manifest, ans.Manifest)
	require.Equal(t, hookManifests(want), ans.Hooks)
	require.Contains(t, ans.Manifest, "name: web-web")
	require.Contains(t, ans.Manifest, "replicas: 3")
	require.Contains(t, ans.Manifest, `big: "1000000"`)
	require.Contains(t, ans.Manifest, `revision: "1"`)
	require.Contains(t, ans.Manifest, "name: cache", "the subchart its condition switches on")
}

func TestAnUpgradeRendersTheRevisionHelmWillWrite(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	r := install(webChart(t), webValues())
	r.Latest = agentclient.ReleaseState{Exists: true, Name: "web", Namespace: "shop", Status: "deployed", Revision: 3}
	ans, err := c.check(context.Background(), r)
	require.NoError(t, err)
	want := helmUpgrade(t, webChart(t), webValues(), 3)
	require.Equal(t, want.Manifest, ans.Manifest)
	require.Contains(t, ans.Manifest, `revision: "4"`)
	require.Contains(t, ans.Manifest, `upgrade: "true"`)
}

func TestATemplateErrorNamesTheChartAndIsNoLimit(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	err := c.Check(context.Background(), install(chartWith(t, "data: {{ .Values.missing.key }}\n"), nil))
	require.Error(t, err)
	require.Contains(t, err.Error(), `chart "web": `)
	require.Contains(t, err.Error(), "web/templates/web.yaml")
	require.Contains(t, err.Error(), "nil pointer evaluating interface {}.key")
	var le *LimitError
	require.False(t, errors.As(err, &le))
}

// Manifests and kustomize output travel in an empty chart (render's emptyChart): nothing to render,
// so no child is started.
func TestAChartWithoutTemplatesIsNotChecked(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	empty := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: "0.0.0+abc"}}
	require.NoError(t, c.Check(context.Background(), install(empty, map[string]any{"a": 1})))
	require.Zero(t, c.started.Load())
	var none *Checker
	require.NoError(t, none.Check(context.Background(), install(chartWith(t, "{{ range 1000000000 }}x{{ end }}"), nil)),
		"a nil Checker checks nothing")
}
