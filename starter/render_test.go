package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/render/*.golden from the current output")

// TestMain lets a test run this binary as the `flotilla` CLI, to see its exit code and stderr.
func TestMain(m *testing.M) {
	if os.Getenv("FLOTILLA_TEST_RUN_CLI") == "1" {
		os.Args = append([]string{"flotilla"}, strings.Fields(os.Getenv("FLOTILLA_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const examples = "testdata/fleet-examples"

// flotilla runs the CLI in process, as `flotilla ARGS...`.
func flotilla(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// flotillaBinary runs the CLI as a process and returns its exit code.
func flotillaBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLOTILLA_TEST_RUN_CLI=1", "FLOTILLA_TEST_ARGS="+strings.Join(args, " "))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", "render", name+".golden")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, []byte(got), 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "run `go test ./starter -run TestRender -update` to create it")
	require.Equal(t, string(want), got, "%s differs; after checking the change, run `go test ./starter -run TestRender -update`", file)
}

// Every fleet-examples layout renders to the objects its golden file holds, per environment where the
// bundle has targetCustomizations, and never with Flotilla's own labels.
func TestRenderFleetExamplesMatchGoldenFiles(t *testing.T) {
	cases := []struct {
		golden string
		args   []string
	}{
		{"single-cluster-helm", []string{"single-cluster/helm"}},
		{"single-cluster-manifests", []string{"single-cluster/manifests"}},
		{"single-cluster-kustomize", []string{"single-cluster/kustomize"}},
		{"single-cluster-helm-kustomize", []string{"single-cluster/helm-kustomize"}},
		{"single-cluster-helm-cluster-values", []string{"single-cluster/helm-cluster-values", "--name", "edge-1", "--namespace", "fleet-edge",
			"-l", "env=dev", "-l", "region=eu", "--values", "testdata/render/edge-1-values.yaml"}},
		{"multi-cluster-helm-dev", []string{"multi-cluster/helm", "-l", "env=dev"}},
		{"multi-cluster-helm-test", []string{"multi-cluster/helm", "-l", "env=test"}},
		{"multi-cluster-helm-prod", []string{"multi-cluster/helm", "-l", "env=prod"}},
		{"multi-cluster-manifests-dev", []string{"multi-cluster/manifests", "-l", "env=dev"}},
		{"multi-cluster-manifests-test", []string{"multi-cluster/manifests", "-l", "env=test"}},
		{"multi-cluster-manifests-prod", []string{"multi-cluster/manifests", "-l", "env=prod"}},
		{"multi-cluster-kustomize-dev", []string{"multi-cluster/kustomize", "-l", "env=dev"}},
		{"multi-cluster-kustomize-test", []string{"multi-cluster/kustomize", "-l", "env=test"}},
		{"multi-cluster-kustomize-prod", []string{"multi-cluster/kustomize", "-l", "env=prod"}},
		// A folder of several bundles, named as a GitRepo `fleet-examples` with paths [multi-cluster] names them.
		{"multi-cluster-all-prod", []string{".", "--path", "multi-cluster", "-l", "env=prod"}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			args := append([]string{"render", filepath.Join(examples, c.args[0])}, c.args[1:]...)
			out, stderr, err := flotilla(t, args...)
			require.NoError(t, err, stderr)
			require.NotContains(t, out, "flotilla.dev/", "Flotilla's bookkeeping labels are left out, as fleet test leaves out Fleet's")
			golden(t, c.golden, out)
		})
	}
}

func objectsOf(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, stderr, err := flotilla(t, append(append([]string{"render"}, args...), "-o", "json")...)
	require.NoError(t, err, stderr)
	var res []clusterResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 1)
	var objs []map[string]any
	for _, b := range res[0].Bundles {
		objs = append(objs, b.Objects...)
	}
	return objs
}

func object(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o["kind"] == kind && o["metadata"].(map[string]any)["name"] == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, objs)
	return nil
}

func field(o map[string]any, path ...string) any {
	var v any = o
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// The same folder renders differently per environment label: the first matching targetCustomization wins.
func TestRenderProdAndDevGetTheirOwnCustomization(t *testing.T) {
	helm := filepath.Join(examples, "multi-cluster/helm")
	dev, prod := objectsOf(t, helm, "-l", "env=dev"), objectsOf(t, helm, "-l", "env=prod")
	require.EqualValues(t, 1, field(object(t, dev, "Deployment", "frontend"), "spec", "replicas"), "dev keeps the chart's replicas")
	require.EqualValues(t, 3, field(object(t, prod, "Deployment", "frontend"), "spec", "replicas"), "prod: replicas 3")
	require.Equal(t, "NodePort", field(object(t, dev, "Service", "frontend"), "spec", "type"))
	require.Equal(t, "LoadBalancer", field(object(t, prod, "Service", "frontend"), "spec", "type"), "prod: serviceType LoadBalancer")
	require.Equal(t, "master", field(object(t, dev, "Service", "redis-slave"), "spec", "selector", "role"), "dev: replication false")
	require.Equal(t, "slave", field(object(t, prod, "Service", "redis-slave"), "spec", "selector", "role"))

	manifests := filepath.Join(examples, "multi-cluster/manifests")
	dev, prod = objectsOf(t, manifests, "-l", "env=dev"), objectsOf(t, manifests, "-l", "env=prod")
	require.Equal(t, "master", field(object(t, dev, "Service", "redis-slave"), "spec", "selector", "role"), "dev: overlay noreplication")
	require.EqualValues(t, 1, field(object(t, dev, "Deployment", "frontend"), "spec", "replicas"))
	require.EqualValues(t, 3, field(object(t, prod, "Deployment", "frontend"), "spec", "replicas"), "prod: overlay scale3")
	require.Equal(t, "LoadBalancer", field(object(t, prod, "Service", "frontend"), "spec", "type"), "prod: overlay servicelb")

	kustomize := filepath.Join(examples, "multi-cluster/kustomize")
	dev, prod = objectsOf(t, kustomize, "-l", "env=dev"), objectsOf(t, kustomize, "-l", "env=prod")
	require.EqualValues(t, 0, field(object(t, dev, "Deployment", "redis-follower"), "spec", "replicas"), "dev: overlays/dev")
	require.EqualValues(t, 3, field(object(t, prod, "Deployment", "frontend"), "spec", "replicas"), "prod: overlays/prod")
	require.Equal(t, "LoadBalancer", field(object(t, prod, "Service", "frontend"), "spec", "type"))
}

// `${ .ClusterValues.x }` takes x from --values; .ClusterName, .ClusterNamespace and .ClusterLabels from the flags.
func TestRenderTemplatesClusterValuesFromTheValuesFile(t *testing.T) {
	objs := objectsOf(t, filepath.Join(examples, "single-cluster/helm-cluster-values"), "--name", "edge-1", "--namespace", "fleet-edge",
		"-l", "env=dev", "--values", "testdata/render/edge-1-values.yaml")
	data := field(object(t, objs, "ConfigMap", "sleeper"), "data").(map[string]any)
	require.Equal(t, "edge-1.example.com", data["fqdn"])
	require.Equal(t, "Always", data["imagePullPolicy"], "hasKey .ClusterValues \"policy\"")
	require.Equal(t, "name-edge-1", data["name"])
	require.Equal(t, "fleet-edge", data["namespace"], "--namespace is the cluster namespace, not Temporal's")
	require.JSONEq(t, `{"env":"dev"}`, data["labels"].(string))
}

// A missing template value fails the render: exit code 1, the message on stderr names the bundle and the key.
func TestRenderTemplateErrorExitsNonZeroNamingTheKey(t *testing.T) {
	dir := filepath.Join(examples, "single-cluster/helm-cluster-values")
	stdout, stderr, code := flotillaBinary(t, "render", dir, "--name", "edge-2", "-l", "env=dev")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, `bundle "helm-cluster-values"`)
	require.Contains(t, stderr, `map has no entry for key "fqdn"`)
	require.NotContains(t, stdout, "kind: ConfigMap", "nothing half-rendered")

	_, stderr, code = flotillaBinary(t, "render", dir, "--name", "edge-2", "--values", "testdata/render/edge-1-values.yaml")
	require.Equal(t, 0, code, stderr)
}

// No file outside DIR is ever read: `../` and symlinks that leave it are refused, and their content never shows.
func TestRenderRefusesPathsLeavingTheFolder(t *testing.T) {
	tmp := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "secret.yaml"), []byte("password: hunter2\n"), 0o600))
	write := func(rel, content string) {
		p := filepath.Join(tmp, "repo", rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	chart := "apiVersion: v2\nname: app\nversion: 0.1.0\n"
	write("dotdot/fleet.yaml", "helm:\n  valuesFiles: [../../secret.yaml]\n")
	write("dotdot/Chart.yaml", chart)
	write("symlink/Chart.yaml", chart)
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "repo", "symlink", "templates"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(tmp, "secret.yaml"), filepath.Join(tmp, "repo", "symlink", "templates", "cm.yaml")))

	for _, bundle := range []string{"dotdot", "symlink"} {
		t.Run(bundle, func(t *testing.T) {
			out, stderr, err := flotilla(t, "render", filepath.Join(tmp, "repo", bundle))
			require.Error(t, err)
			require.Regexp(t, `leaves the repository|resolves outside the repository`, err.Error())
			require.NotContains(t, out+stderr+err.Error(), "hunter2")
		})
	}
}

// Flags of the other mode are refused rather than ignored; a bad output format is a usage error.
func TestRenderRefusesFlagsOfTheOtherMode(t *testing.T) {
	for _, args := range [][]string{
		{"render", examples, "--cluster", "a"},
		{"render", "--gitrepo", "x", "-l", "env=dev"},
		{"render", examples, "--gitrepo", "x"},
		{"render"},
		{"render", examples, "-o", "table"},
	} {
		_, _, err := flotilla(t, args...)
		var ee *exitError
		require.ErrorAs(t, err, &ee, "%v", args)
		require.Equal(t, 2, ee.code, "%v", args)
	}
}

// Fleet runs a helm bundle's kustomize.dir over the chart's output (it adds the output to the
// kustomization's resources as fleet-manifests.yaml), so fleet-examples' helm-kustomize overlay patches
// the chart; the preview shows it patched, as the worker deploys it.
func TestRenderHelmKustomizePatchesTheChartOutput(t *testing.T) {
	objs := objectsOf(t, filepath.Join(examples, "single-cluster/helm-kustomize"))
	require.Len(t, objs, 2)
	require.EqualValues(t, 0, field(object(t, objs, "Deployment", "redis-follower"), "spec", "replicas"))
	require.Equal(t, "leader", field(object(t, objs, "Service", "redis-follower"), "spec", "selector", "role"))
}

// The preview says what the worker will do with a bundle beyond its objects: correctDrift, keepResources
// and paused as fleet.yaml and the matching targetCustomization merge them, per cluster.
func TestRenderShowsEachClustersEffectiveOptions(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: b}\n")
	write("app/fleet.yaml", `correctDrift: {enabled: true}
targetCustomizations:
- name: prod
  clusterSelector: {matchLabels: {env: prod}}
  keepResources: true
  correctDrift: {enabled: false}
  forceSyncGeneration: 3
`)
	options := func(args ...string) map[string]any {
		stdout, stderr, err := flotilla(t, append([]string{"render", dir, "-o", "json"}, args...)...)
		require.NoError(t, err, stderr)
		var res []map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		return res[0]["bundles"].([]any)[0].(map[string]any)["options"].(map[string]any)
	}
	require.Equal(t, map[string]any{"correctDrift": true, "keepResources": false, "paused": false, "syncGeneration": 0.0},
		options("-l", "env=dev"), "dev: fleet.yaml's correctDrift")
	require.Equal(t, map[string]any{"correctDrift": false, "keepResources": true, "paused": false, "syncGeneration": 0.0,
		"forceSyncGeneration": 3.0}, options("-l", "env=prod"), "prod: its customization's")

	stdout, _, err := flotilla(t, "render", dir, "-l", "env=prod")
	require.NoError(t, err)
	require.Contains(t, stdout, "# Options: correctDrift=false keepResources=true paused=false syncGeneration=0 forceSyncGeneration=3\n")
}

// A preview reads no cluster, as `fleet test` reads none: a bundle with helm.valuesFrom renders from its
// other values, and the output says which of the cluster's ConfigMap and Secret keys the worker merges over them.
func TestRenderNamesTheValuesFromSourcesItDoesNotRead(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"web/fleet.yaml": "defaultNamespace: shop\nhelm:\n  chart: ./chart\n  values: {color: red}\n  valuesFrom:\n" +
			"  - configMapKeyRef: {name: web-config}\n  - secretKeyRef: {name: web-creds, namespace: vault, key: creds.yaml}\n",
		"web/chart/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  color: {{ .Values.color }}\n",
	}
	for p, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644))
	}
	out, stderr, err := flotilla(t, "render", filepath.Join(dir, "web"))
	require.NoError(t, err, stderr)
	require.Contains(t, out, "# Rendered without the values the cluster holds in valuesFrom "+
		`configmap "shop/web-config" key "values.yaml", secret "vault/web-creds" key "creds.yaml" (read on the cluster when deployed)`+"\n")
	require.Contains(t, out, "color: red")

	out, stderr, err = flotilla(t, "render", filepath.Join(dir, "web"), "-o", "json")
	require.NoError(t, err, stderr)
	var res []clusterResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, []string{`configmap "shop/web-config" key "values.yaml"`, `secret "vault/web-creds" key "creds.yaml"`}, res[0].Bundles[0].ValuesFrom)
}
