package render

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
)

// renderedIn is the bundle at dir of a repository of files, rendered for a cluster, for seeds.
func renderedIn(tb testing.TB, files map[string]string, dir string) *Release {
	tb.Helper()
	root := tb.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(tb, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(tb, os.WriteFile(full, []byte(content), 0o644))
	}
	b, err := bundle.Load(root, bundle.Ref{Name: dir, Path: dir})
	require.NoError(tb, err)
	rel, err := ForCluster(Input{RepoRoot: root, Bundle: b, Cluster: fleet.ClusterInfo{Name: "c", Labels: map[string]string{"env": "dev"}},
		GitRepo: "shop", TargetNamespace: ""})
	require.NoError(tb, err)
	return rel
}

func gzipped(tb testing.TB, s string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write([]byte(s))
	require.NoError(tb, err)
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

// nestedCharts is a package whose chart nests subcharts depth deep.
func nestedCharts(depth int) string {
	c := `{"metadata":{"name":"leaf","version":"0.1.0"}}`
	for i := range depth {
		c = fmt.Sprintf(`{"metadata":{"name":"c%d","version":"0.1.0"},"dependencies":[%s]}`, i, c)
	}
	return `{"v":1,"bundle":"deep","chart":` + c + `}`
}

// fuzzPackageLimit stands for MaxPackageSize, small enough for the fuzzer to reach.
const fuzzPackageLimit = 1 << 20

// A package is data from another process. Whatever its bytes, decoding refuses them naming the package,
// past the size bound too, or gives a release that packages again into bytes that decode to the same
// package: the agent can always hand on what it accepted.
func FuzzUnmarshalPackage(f *testing.F) {
	for _, repo := range []map[string]string{chartRepo(), manifestsRepo()} {
		data, err := renderedIn(f, repo, "app").MarshalPackage()
		require.NoError(f, err)
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(append(append([]byte{}, data...), data...))
	}
	for _, plain := range []string{
		`{"v":1,"bundle":"app","name":"app","namespace":"apps","deploy":true,"values":{"a":[1,2.5,"x",null,{"b":true}]},` +
			`"postRenderer":{"extra":"YXBpVmVyc2lvbjogdjEK","forceNamespace":"apps","labels":{"k":"v"},"keepCRDs":true}}`,
		`{"v":1,"chart":{"metadata":{"name":"web"},"templates":[{"name":"templates/a.yaml","data":"a2luZDogQ29uZmlnTWFw"},null],"dependencies":[{}]}}`,
		`{"v":1,"chart":{"lock":{"generated":"2026-01-01T00:00:00Z","digest":"d","dependencies":[null]}}}`,
		`{"v":2,"bundle":"app"}`,
		`{"v":1,"bundle":"app","deploy":true}`,
		`{"v":1,"bundle":"app","deploy":true,"chart":{"metadata":{"name":"web","version":"1.0.0"},"dependencies":[{"values":{}}]}}`,
		`{"v":1,"bundle":"app","valuesFrom":[{"secret":true,"namespace":"n","name":"s","key":"k"}],"chartLocks":[{}],"remoteChart":{}}`,
		nestedCharts(maxChartDepth),
		nestedCharts(maxChartDepth + 1),
		`{"v":1,"values":{"pad":"` + strings.Repeat("x", fuzzPackageLimit) + `"}}`,
		`null`,
		`[]`,
		`{"v":1`,
	} {
		f.Add(gzipped(f, plain))
	}
	f.Add([]byte("not gzip"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		rel, err := unmarshalPackage(data, fuzzPackageLimit)
		if err != nil {
			require.Contains(t, err.Error(), "package", "a refusal names the package")
			if zr, zerr := gzip.NewReader(bytes.NewReader(data)); zerr == nil {
				if n, _ := io.Copy(io.Discard, io.LimitReader(zr, fuzzPackageLimit+1)); n > fuzzPackageLimit {
					require.EqualError(t, err, "package: over the 1 MiB limit once decompressed")
				}
			}
			return
		}
		// What Helm's install dereferences: a package that would crash the agent's render is refused.
		if rel.Deploy {
			require.NotNil(t, rel.Chart)
		}
		requireMetadata(t, rel.Chart)
		once, err := rel.MarshalPackage()
		require.NoError(t, err, "what was accepted packages again")
		again, err := UnmarshalPackage(once)
		require.NoError(t, err)
		twice, err := again.MarshalPackage()
		require.NoError(t, err)
		require.Equal(t, plainPackage(t, once), plainPackage(t, twice), "a package decodes to what packaged it")
		require.True(t, bytes.Equal(once, twice), "and to the same bytes: the digest names it")
	})
}

func requireMetadata(t *testing.T, c *chart.Chart) {
	if c == nil {
		return
	}
	require.NotNil(t, c.Metadata)
	for _, d := range c.Dependencies() {
		requireMetadata(t, d)
	}
}

func plainPackage(t *testing.T, data []byte) string {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	return string(plain)
}

// A release packaged and decoded is the release: its fields, its chart's files and subcharts, its values
// and its post-renderer's parameters, whatever they hold.
func FuzzPackageRoundTrip(f *testing.F) {
	f.Add("app", "shop-app", "apps", []byte(`{"replicas":3,"greeting":"hello","cache":{"size":64}}`), []byte("kind: ConfigMap\n"), []byte("apiVersion: v1\nkind: Service\n"), "", true, uint8(1))
	f.Add("crds", "crds", "operators", []byte(`null`), []byte{}, []byte{0, 1, 2, 0xff}, "forced", false, uint8(0))
	f.Add("a/b", "x", "", []byte(`{"a":1e300,"b":-0.0,"c":12345678901234567890,"d":["\u00e9",null]}`), []byte("{{ .Values.a }}"), []byte(nil), "ns", false, uint8(5))
	f.Fuzz(func(t *testing.T, bundleName, name, namespace string, valuesJSON, template, extra []byte, forceNamespace string, keepCRDs bool, depth uint8) {
		for _, s := range []string{bundleName, name, namespace, forceNamespace} {
			if !utf8.ValidString(s) {
				t.Skip("JSON carries text as UTF-8: fleet.yaml names are")
			}
		}
		var values map[string]any
		if json.Unmarshal(valuesJSON, &values) != nil {
			values = nil
		}
		c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "0.1.0"},
			Templates: []*chart.File{{Name: "templates/t.yaml", Data: template}}, Raw: []*chart.File{{Name: "values.yaml", Data: valuesJSON}},
			Values: values, Schema: extra}
		parent := c
		for i := range int(depth % (maxChartDepth + 1)) {
			sub := &chart.Chart{Metadata: &chart.Metadata{Name: fmt.Sprintf("sub%d", i), Version: "1.0.0"},
				Files: []*chart.File{{Name: "f", Data: extra}}}
			parent.AddDependency(sub)
			parent = sub
		}
		rel := &Release{Bundle: bundleName, Name: name, Namespace: namespace, Chart: c, Values: values, Deploy: true,
			ForcedNamespace: forceNamespace, ObjectLabels: map[string]string{"flotilla.dev/bundle": bundleName},
			PostRenderer: &postRenderer{extra: extra, forceNamespace: forceNamespace, keepCRDs: keepCRDs, labels: map[string]string{"n": name}}}
		data, err := rel.MarshalPackage()
		require.NoError(t, err)
		got, err := UnmarshalPackage(data)
		require.NoError(t, err)

		require.Equal(t, fieldsOf(rel), fieldsOf(got))
		require.Equal(t, c.Metadata, got.Chart.Metadata)
		require.True(t, bytes.Equal(template, got.Chart.Templates[0].Data))
		require.True(t, bytes.Equal(valuesJSON, got.Chart.Raw[0].Data))
		require.True(t, bytes.Equal(extra, got.Chart.Schema))
		if len(values) == 0 {
			// Helm reads no values and empty values alike; the package leaves both out.
			require.Empty(t, got.Values)
			require.Empty(t, got.Chart.Values)
		} else {
			require.Equal(t, values, got.Values)
			require.Equal(t, values, got.Chart.Values)
		}
		sub, want := got.Chart, c
		for len(want.Dependencies()) > 0 {
			require.Len(t, sub.Dependencies(), 1)
			sub, want = sub.Dependencies()[0], want.Dependencies()[0]
			require.Equal(t, want.Metadata, sub.Metadata)
			require.Equal(t, want.Parent().Name(), sub.Parent().Name(), "a subchart knows its parent again")
			require.True(t, bytes.Equal(extra, sub.Files[0].Data))
		}
		require.Empty(t, sub.Dependencies())
		p := got.PostRenderer.(*postRenderer)
		require.True(t, bytes.Equal(extra, p.extra))
		require.Equal(t, forceNamespace, p.forceNamespace)
		require.Equal(t, keepCRDs, p.keepCRDs)
		require.Equal(t, map[string]string{"n": name}, p.labels)
	})
}

// A summary travels in every check's payload. Whatever its bytes, decoding refuses them naming the summary
// (or its bundle), or gives a release without chart, values or post-renderer, whose summary decodes to
// the same summary again.
func FuzzUnmarshalSummary(f *testing.F) {
	for _, repo := range []map[string]string{chartRepo(), manifestsRepo()} {
		data, err := renderedIn(f, repo, "app").MarshalSummary()
		require.NoError(f, err)
		f.Add(data)
	}
	for _, s := range []string{
		`{"v":1,"bundle":"web","options":{"helm":{"values":{"a":1},"maxHistory":4},"defaultNamespace":"x"},"objectLabels":{"a":"b"}}`,
		`{"v":1,"chartLocks":[{"url":"oci://r/c","version":"1","digest":"sha256:00"}],"remoteChart":null,"syncGeneration":-1}`,
		`{"v":9,"bundle":"web"}`,
		`{"v":1,"options":{"diff":{"comparePatches":[{"operations":[{"op":"remove","path":"/a"}]}]}}}`,
		`{"v":1,"options":{"helm":{"timeoutSeconds":"x"}}}`,
		`{"V":1,"Bundle":"case"}`,
		`null`,
		`{`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rel, err := UnmarshalSummary(data)
		if err != nil {
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "release summary: ") || strings.HasPrefix(msg, "bundle "), "%v", err)
			return
		}
		require.Nil(t, rel.Chart)
		require.Nil(t, rel.Values)
		require.Nil(t, rel.PostRenderer)
		once, err := rel.MarshalSummary()
		require.NoError(t, err, "what was accepted summarizes again")
		again, err := UnmarshalSummary(once)
		require.NoError(t, err)
		twice, err := again.MarshalSummary()
		require.NoError(t, err)
		require.Equal(t, string(once), string(twice))
		if h := again.Options.Helm; h != nil {
			require.Nil(t, h.Values, "fleet.yaml's values stay out of a summary")
		}
	})
}

// The marker is what lies outside the repository: a build that shows it, in its output or its error, read
// outside the repository.
const outsideMarker = "outside-marker-5e2b1c"

// A kustomization is the repository author's. Whatever it says, and whichever kustomize.dir a fleet.yaml
// names, a build reads nothing outside the repository (not through `..`, an absolute path, or a symlink out
// of it), runs no git and makes no HTTP request; and an error names the kustomize.dir it built.
func FuzzKustomizeStaysInTheRepository(f *testing.F) {
	base := f.TempDir()
	outside := filepath.Join(base, "outside")
	root := filepath.Join(base, "repo")
	secret := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: secret\ndata:\n  leaked: " + outsideMarker + "\n"
	for p, content := range map[string]string{
		"outside/secret.yaml":            secret,
		"outside/kustomization.yaml":     "resources:\n- secret.yaml\n",
		"outside/patch.yaml":             "- op: add\n  path: /data/leaked\n  value: " + outsideMarker + "\n",
		"repo/app/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\ndata:\n  a: \"1\"\n",
		"repo/app/patch.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\ndata:\n  b: \"2\"\n",
		"repo/app/literals.env":          "KEY=value\n",
		"repo/shared/kustomization.yaml": "resources:\n- cm.yaml\n",
		"repo/shared/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
		"repo/root.yaml":                 "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: root\n",
	} {
		full := filepath.Join(base, p)
		require.NoError(f, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(f, os.WriteFile(full, []byte(content), 0o644))
	}
	require.NoError(f, os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "app", "leak.yaml")))
	require.NoError(f, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(f, os.Symlink("../../outside/patch.yaml", filepath.Join(root, "app", "relleak.yaml")))

	// A git that tells on kustomize, first on the PATH, and a proxy that records every HTTP request: the
	// fuzzer may spell a remote reference no check knows.
	bin := filepath.Join(base, "bin")
	ranGit := filepath.Join(base, "ran-git")
	require.NoError(f, os.MkdirAll(bin, 0o755))
	require.NoError(f, os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+ranGit+"\nexit 1\n"), 0o755))
	f.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var requests atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "no network in this test", http.StatusForbidden)
	}))
	f.Cleanup(proxy.Close)
	f.Setenv("HTTP_PROXY", proxy.URL)
	f.Setenv("HTTPS_PROXY", proxy.URL)
	f.Setenv("NO_PROXY", "")

	for _, seed := range []struct{ kustomization, dir string }{
		{"resources:\n- cm.yaml\nnamePrefix: dev-\n", "app"},
		{"resources:\n- cm.yaml\n- ../shared\npatches:\n- path: patch.yaml\nconfigMapGenerator:\n- name: env\n  envs: [literals.env]\n", "app"},
		{"resources:\n- leak.yaml\n", "app"},
		{"resources:\n- ../out\n", "app"},
		{"resources:\n- ../../outside\n", "app"},
		{"resources:\n- ../../outside/secret.yaml\n", "app"},
		{"resources:\n- /etc/passwd\n", "app"},
		{"resources:\n- " + filepath.Join(outside, "secret.yaml") + "\n", "app"},
		{"resources:\n- /repo/../outside/secret.yaml\n", "app"},
		{"resources:\n- cm.yaml\npatches:\n- path: relleak.yaml\n  target: {kind: ConfigMap}\n", "app"},
		{"resources:\n- cm.yaml\nconfigMapGenerator:\n- name: x\n  files: [k=../../outside/secret.yaml]\n", "app"},
		{"resources:\n- https://example.com/cm.yaml\n", "app"},
		{"resources:\n- github.com/org/repo//base?ref=v1\n", "app"},
		{"resources:\n- git@github.com:org/repo.git\n", "app"},
		{"components:\n- file:///etc\n", "app"},
		{"generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: g}\n  files: [https://example.com/x]\n", "app"},
		{"helmCharts:\n- name: web\n  repo: https://charts.example.com\n", "app"},
		{"resources: [cm.yaml]\n", "shared"},
		{"resources: [cm.yaml]\n", "../outside"},
		{"resources: [cm.yaml]\n", "out"},
		{"resources: [cm.yaml]\n", "/"},
		{"resources: [cm.yaml]\n", "."},
		{"resources: [app]\n", "."},
		{"{{{", "app"},
		{"", "app"},
	} {
		f.Add(seed.kustomization, seed.dir)
	}
	f.Fuzz(func(t *testing.T, kustomization, dir string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, "app", "kustomization.yaml"), []byte(kustomization), 0o644))
		out, err := kustomizeWithin(root, dir, 1<<20)
		require.NotContains(t, string(out), outsideMarker, "the build read outside the repository")
		_, gitErr := os.Stat(ranGit)
		require.True(t, os.IsNotExist(gitErr), "kustomize ran git")
		require.Zero(t, requests.Load(), "kustomize made an HTTP request")
		if err != nil {
			msg := err.Error()
			require.NotContains(t, msg, outsideMarker, "the build read outside the repository")
			require.True(t, strings.HasPrefix(msg, "kustomize "+dir+": ") || strings.HasPrefix(msg, fmt.Sprintf("kustomize.dir %q: ", dir)),
				"an error names the kustomize.dir: %v", err)
		}
	})
}
