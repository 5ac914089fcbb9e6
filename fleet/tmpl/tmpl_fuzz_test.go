package tmpl

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// fuzzSecretEnv holds a value no template may ever render: templates cannot read the environment. The
// value is random, so that no input the fuzzer keeps can spell it.
const fuzzSecretEnv = "FLOTILLA_FUZZ_SECRET"

func newMarker(f *testing.F) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		f.Fatal(err)
	}
	return "mk" + hex.EncodeToString(b)
}

// timedOut is the one limit that depends on the machine: a render that ran out of time may not run
// out the next time.
func timedOut(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ran longer than its limit")
}

// FuzzRenderText renders any text as a template for a cluster. It checks the limits the package
// documents (the output is at most MaxOutput bytes), that a render gives the same result every time,
// that the environment never reaches the output, and that an error names the template unless it is a
// limit (which the callers' TemplateError names).
func FuzzRenderText(f *testing.F) {
	marker := newMarker(f)
	f.Setenv(fuzzSecretEnv, marker)
	for _, s := range []string{
		normalValuesFile,
		"fqdn: ${ .ClusterValues.generated.cluster_metadata.fqdn }\n",
		"who: ${ .ClusterName }/${ .ClusterLabels.env }\n",
		`guarded: ${ if hasKey .ClusterLabels "zone" }${ .ClusterLabels.zone }${ else }none${ end }` + "\n",
		"${- range $k, $v := .ClusterLabels }\n${ $k }: ${ $v | quote }\n${- end }\n",
		`v: ${ dict "a" 1 "b" (list 1 2 3) | toJson }` + "\n",
		`v: ${ .ClusterValues | toYaml | nindent 2 }` + "\n",
		`v: ${ date "2006-01-02" 0 }` + "\n",
		`v: ${ keys .ClusterValues | join "," }` + "\n",
		`v: ${ env "` + fuzzSecretEnv + `" }` + "\n",
		`v: ${ expandenv "$` + fuzzSecretEnv + `" }` + "\n",
		`v: ${ include "x" . }` + "\n",
		"v: ${ repeat 200000000 \"x\" }\n",
		"${ range until 100000000 }x${ end }\n",
		"${ $x := \"x\" }${ range until 40 }${ $x = cat $x $x }${ end }v: ${ len $x }\n",
		"${ $d := dict }${ $_ := set $d \"self\" $d }v: ${ $d }\n",
		"v: ${ printf \"%1000000v\" (until 2000) }\n",
		"v: ${ .ClusterValues.missing.key }\n",
		"${ define \"x\" }y${ end }\n",
		"v: ${ regexMatch (repeat 11 \"x{1000}\") \"a\" }\n",
		"v: ${ untilStep 0 9223372036854775807 4611686018427387904 | toJson }\n",
		"${", "${ }", "${ \"unterminated }\n", "${ /* comment */ }", "}${{",
	} {
		f.Add(s, "prod")
	}
	f.Fuzz(func(t *testing.T, text, label string) {
		c := normalCluster
		c.Labels = map[string]string{"env": label, "zone": "z-" + label}
		out, err := RenderText("values.yaml", text, c)
		out2, err2 := RenderText("values.yaml", text, c)
		if len(out) > MaxOutput {
			t.Fatalf("rendered %d bytes, over MaxOutput (%d)", len(out), MaxOutput)
		}
		if !timedOut(err) && !timedOut(err2) && (out != out2 || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error()) {
			t.Fatalf("not reproducible: %q, %v; then %q, %v", clipped(out), err, clipped(out2), err2)
		}
		if strings.Contains(out, marker) || err != nil && strings.Contains(err.Error(), marker) {
			t.Fatalf("the environment reached the render: %q, %v", clipped(out), err)
		}
		if err != nil {
			var le *limitError
			if !errors.As(err, &le) && !strings.HasPrefix(err.Error(), "template: values.yaml:") {
				t.Fatalf("the error names no template: %v", err)
			}
		}
	})
}

func clipped(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// valuesInput is one level of helm options, a values file's content, and the cluster's values.
type valuesInput struct {
	Helm          fleet.HelmOptions `json:"helm"`
	ClusterValues map[string]any    `json:"clusterValues"`
}

// FuzzValues builds a bundle's Helm values (inline values, a values file of the bundle, templateValues)
// for a cluster. It checks that whatever the input, the values never hold what the environment or a
// file outside the repository holds (a link and ../ lead to one), that building them twice gives the
// same result, that neither the options nor the cluster are changed, and that every error names the
// fleet.yaml field or the values file it comes from.
func FuzzValues(f *testing.F) {
	marker := newMarker(f)
	f.Setenv(fuzzSecretEnv, marker)
	dir := f.TempDir()
	root := filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(root, "web"), filepath.Join(root, "shared")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	outside := filepath.Join(dir, "secret.yaml")
	files := map[string]string{
		outside: "secret: " + marker + "\n",
		filepath.Join(root, "shared", "common.yaml"): "shared: ${ .ClusterName }\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "web", "link.yaml")); err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ options, file string }{
		{"helm:\n  values:\n    fqdn: ${ .ClusterValues.generated.cluster_metadata.fqdn }\n    who: ${ .ClusterName }/${ .ClusterLabels.env }\n" +
			"    label: global.fleet.clusterLabels.env\n  valuesFiles: [values.yaml]\n" +
			"  templateValues:\n    hostList: ${ .ClusterValues.hosts | toJson }\n    count: ${ len .ClusterValues.hosts }\n", normalValuesFile},
		{"helm:\n  valuesFiles: [values.yaml, ../shared/common.yaml]\n", "image:\n  tag: v1\nreplicas: ${ .ClusterValues.replicas }\n"},
		{"helm:\n  values: {nested: {label: global.fleet.clusterLabels.env, list: [global.fleet.clusterLabels.env]}}\n  disablePreProcess: true\n", ""},
		{"helm:\n  values: {a: '${ .ClusterName }'}\n  valuesFiles: [values.yaml]\n  disablePreProcess: true\n", "a: 1\nb: {c: 2}\n"},
		{"helm:\n  valuesFiles: [link.yaml]\n", ""},
		{"helm:\n  valuesFiles: [../../secret.yaml]\n", ""},
		{"helm:\n  valuesFiles: [/etc/hostname]\n", ""},
		{"helm:\n  values: {v: '${ env \"" + fuzzSecretEnv + "\" }'}\n", ""},
		{"helm:\n  templateValues: {cfg: \"a: 1\\n${ \\\"a: 2\\\" }\"}\n", ""},
		{"helm:\n  valuesFiles: [values.yaml]\n", "image:\n  tag: v1\nimage:\n  tag: v2\n"},
		{"helm:\n  valuesFiles: [values.yaml]\n", "replicas: 3\n${ .ClusterValues.extra }\n"},
		{"helm:\n  values: {x: '${ .ClusterValues.missing }'}\nclusterValues: {extra: 'replicas: 5'}\n", "a: [1, 2\n"},
	} {
		f.Add([]byte(s.options), []byte(s.file))
	}
	f.Fuzz(func(t *testing.T, options, file []byte) {
		if len(file) > 64<<10 {
			t.Skip("MaxValuesFile (4 MiB) has its own test; a fuzzed file this large only slows the search")
		}
		var in valuesInput
		if yaml.Unmarshal(options, &in) != nil {
			return
		}
		if err := os.WriteFile(filepath.Join(root, "web", "values.yaml"), file, 0o644); err != nil {
			t.Fatal(err)
		}
		c := normalCluster
		if in.ClusterValues != nil {
			c.TemplateValues = in.ClusterValues
		}
		helmBefore, clusterBefore := snapshot(t, in.Helm), snapshot(t, c)
		got, err := Values(root, "web", &in.Helm, c)
		if !reflect.DeepEqual(helmBefore, snapshot(t, in.Helm)) {
			t.Fatalf("Values changed the helm options it was given")
		}
		if !reflect.DeepEqual(clusterBefore, snapshot(t, c)) {
			t.Fatalf("Values changed the cluster it was given")
		}
		got2, err2 := Values(root, "web", &in.Helm, c)
		if !timedOut(err) && !timedOut(err2) && ((err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || !reflect.DeepEqual(got, got2)) {
			t.Fatalf("not reproducible: %v, then %v", err, err2)
		}
		if text := fmt.Sprint(got, err); strings.Contains(text, marker) {
			t.Fatalf("the environment or a file outside the repository reached the values: %s", clipped(text))
		}
		if err != nil && !namesItsSource(err, in.Helm.ValuesFiles) {
			t.Fatalf("the error names neither the field nor the file: %v", err)
		}
	})
}

// snapshot is v as JSON: what it holds, whatever shares its maps.
func snapshot(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// namesItsSource says whether a Values error starts with the fleet.yaml it came from or one of its values files.
func namesItsSource(err error, files []string) bool {
	msg := err.Error()
	if strings.HasPrefix(msg, "web/fleet.yaml: ") {
		return true
	}
	for _, f := range files {
		rel := path.Join("web", f)
		if path.IsAbs(f) {
			rel = f
		}
		if strings.HasPrefix(msg, path.Clean(rel)+": ") || strings.HasPrefix(msg, rel+": ") {
			return true
		}
	}
	return false
}

// FuzzWithoutReplaced checks what lets LayeredValues template each level's inline values without the
// keys later layers replace: dropping them changes nothing once the later layer is merged over.
func FuzzWithoutReplaced(f *testing.F) {
	for _, s := range [][2]string{
		{"fqdn: ${ .ClusterValues.fqdn }\nimage: {tag: '${ .ClusterLabels.env }', repository: web}\n", "fqdn: web.example.com\n"},
		{"image: {tag: v1, repository: web}\nlist: [1, 2]\n", "image: {tag: v2}\nlist: {a: 1}\n"},
		{"a: {b: {c: 1, d: 2}}\n", "a: {b: null}\n"},
		{"a: 1\n", "a: {b: 1}\n"},
		{"{}", "a: 1\n"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, yv, yover []byte) {
		var v, over map[string]any
		if yaml.Unmarshal(yv, &v) != nil || yaml.Unmarshal(yover, &over) != nil {
			return
		}
		beforeV, beforeOver := snapshot(t, v), snapshot(t, over)
		kept := withoutReplaced(v, over)
		if snapshot(t, v) != beforeV || snapshot(t, over) != beforeOver {
			t.Fatal("withoutReplaced changed its inputs")
		}
		if got, want := target.MergeValues(kept, over), target.MergeValues(v, over); !reflect.DeepEqual(got, want) {
			t.Fatalf("merged over what is kept: %v; over everything: %v", got, want)
		}
	})
}
