package target

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// FuzzMergeValues merges Helm values layers decoded from YAML, as helm.values, valuesFiles and
// targetCustomizations give them. It checks what merging over means: the result has every key of both,
// b's value where b sets a key (maps merged key by key), a's elsewhere; merging with an empty layer or
// with itself changes nothing; the result is the same every time; neither input is changed, and the
// result's own keys are its own.
func FuzzMergeValues(f *testing.F) {
	for _, s := range [][2]string{
		{"image: {repository: nginx, tag: '1.25'}\nreplicas: 1\n", "image: {tag: '1.26'}\nreplicas: 3\n"},
		{"ingress: {enabled: false, hosts: [a.example.com]}\n", "ingress: {enabled: true, hosts: [b.example.com, c.example.com]}\n"},
		{"a: {b: {c: {d: 1}}}\n", "a: {b: {c: 2}}\n"},
		{"a: {b: 1}\n", "a: null\n"},
		{"a: 1\n", "a: {b: 1}\n"},
		{"list: [1, 2, {x: 1}]\n", "list: []\n"},
		{"a: &x {b: 1}\nc: *x\n", "c: {d: 2}\n"},
		{"{}", "{}"},
		{"", "a: 1\n"},
		{"a: [1\n", "b: }\n"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, ya, yb []byte) {
		var a, b map[string]any
		if yaml.Unmarshal(ya, &a) != nil || yaml.Unmarshal(yb, &b) != nil {
			return
		}
		beforeA, beforeB := snapshot(t, a), snapshot(t, b)
		got := MergeValues(a, b)
		if snapshot(t, a) != beforeA || snapshot(t, b) != beforeB {
			t.Fatal("MergeValues changed its inputs")
		}
		if again := MergeValues(a, b); !reflect.DeepEqual(got, again) {
			t.Fatalf("not deterministic: %v, then %v", got, again)
		}
		if a == nil && b == nil {
			if got != nil {
				t.Fatalf("nil over nil is %v", got)
			}
			return
		}
		checkMerged(t, "", a, b, got)
		for _, empty := range []map[string]any{nil, {}} {
			if a != nil && !reflect.DeepEqual(MergeValues(a, empty), a) {
				t.Fatalf("merging %v over a changed it", empty)
			}
			if b != nil && !reflect.DeepEqual(MergeValues(empty, b), b) {
				t.Fatalf("merging b over %v is not b", empty)
			}
		}
		if a != nil && !reflect.DeepEqual(MergeValues(a, a), a) {
			t.Fatal("merging a over itself changed it")
		}
		got["fuzz: a key of the result's own"] = true
		if snapshot(t, a) != beforeA || snapshot(t, b) != beforeB {
			t.Fatal("the result's keys are its inputs'")
		}
	})
}

// checkMerged checks got against the definition of b merged over a, at path.
func checkMerged(t *testing.T, path string, a, b, got map[string]any) {
	t.Helper()
	if len(got) > len(a)+len(b) {
		t.Fatalf("%s: %d keys, more than the inputs' %d", path, len(got), len(a)+len(b))
	}
	for k, av := range a {
		if _, over := b[k]; !over && !reflect.DeepEqual(got[k], av) {
			t.Fatalf("%s.%s: %v, want a's %v", path, k, got[k], av)
		}
	}
	for k, bv := range b {
		am, aIsMap := a[k].(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		if !aIsMap || !bIsMap {
			if !reflect.DeepEqual(got[k], bv) {
				t.Fatalf("%s.%s: %v, want b's %v", path, k, got[k], bv)
			}
			continue
		}
		gm, ok := got[k].(map[string]any)
		if !ok {
			t.Fatalf("%s.%s: %T, want the two maps merged", path, k, got[k])
		}
		checkMerged(t, path+"."+k, am, bm, gm)
	}
	for k := range got {
		_, inA := a[k]
		_, inB := b[k]
		if !inA && !inB {
			t.Fatalf("%s.%s: a key of neither input", path, k)
		}
	}
}

func snapshot(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzCustomize applies a fleet.yaml's targetCustomizations, decoded from YAML, to a cluster whose labels
// come from the input too. It checks Customize's contract: the fleet.yaml is left as it was; a cluster
// no customization matches gets the root options; doNotDeploy keeps the root options and names the
// customization; FirstMatch applies the first match only, AllMatches names every match applied; and the
// values levels hold, in order, what Options.Helm holds merged (values) and concatenated (valuesFiles).
func FuzzCustomize(f *testing.F) {
	for _, s := range []string{
		"defaultNamespace: web\nhelm:\n  chart: ./chart\n  values: {replicas: 1, image: {tag: v1}}\n" +
			"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm: {values: {replicas: 3}}\n" +
			"- name: eu\n  clusterGroup: eu\n  namespace: web-eu\n",
		"targetCustomizationMode: AllMatches\nhelm:\n  values: {a: {b: 1}}\n  valuesFiles: [base.yaml]\n" +
			"targetCustomizations:\n- name: prod\n  clusterSelector: {matchLabels: {env: prod}}\n  helm: {values: {a: {c: 2}}, valuesFiles: [prod.yaml]}\n" +
			"- name: eu\n  clusterGroupSelector: {matchLabels: {geo: europe}}\n  helm: {values: {a: {b: 3}}}\n- name: never\n  clusterName: other\n",
		"targetCustomizations:\n- name: skip\n  clusterName: one\n  doNotDeploy: true\n- name: late\n  clusterName: one\n  namespace: x\n",
		"targetCustomizationMode: AllMatches\ntargetCustomizations:\n- name: first\n  clusterName: one\n  helm: {values: {a: 1}}\n" +
			"- name: skip\n  clusterSelector: {matchExpressions: [{key: env, operator: Exists}]}\n  doNotDeploy: true\n",
		"targetCustomizations:\n- name: bad\n  clusterSelector: {matchExpressions: [{key: env, operator: Bogus}]}\n",
		"targetCustomizations:\n- name: display\n  clusterName: shop-one\n  yaml: {overlays: [prod]}\n  diff: {comparePatches: [{kind: Deployment, name: web, operations: [{op: remove, path: /spec/replicas}]}]}\n",
		"helm:\n  valuesFrom: [{configMapKeyRef: {name: web}}]\ntargetCustomizations:\n- clusterName: one\n  helm: {valuesFrom: [{configMapKeyRef: {name: web}}, {secretKeyRef: {name: creds}}]}\n",
		"targetCustomizationMode: allMatches\n",
		"targetCustomizations:\n- {}\n",
	} {
		f.Add([]byte(s), "prod")
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		var fy fleet.FleetYAML
		if yaml.Unmarshal(data, &fy) != nil {
			return
		}
		c := fleet.ClusterInfo{Name: "one", Namespace: "fleet-default",
			Labels: map[string]string{"env": env, "region": "eu", displayNameLabel: "shop-one"},
			Groups: []string{"default", "eu"}, GroupLabels: map[string]map[string]string{"eu": {"geo": "europe"}}}
		before := snapshot(t, fy)
		res, err := Customize(fy, c)
		if snapshot(t, fy) != before {
			t.Fatal("Customize changed the fleet.yaml")
		}
		res2, err2 := Customize(fy, c)
		if (err == nil) != (err2 == nil) || err == nil && snapshot(t, res) != snapshot(t, res2) {
			t.Fatalf("not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			if CheckMode(fy.TargetCustomizationMode) == nil && !strings.HasPrefix(err.Error(), "targetCustomizations[") {
				t.Fatalf("the error names no customization: %v", err)
			}
			return
		}
		root := snapshot(t, fy.BundleDeploymentOptions)
		var matched []int
		for i, tc := range fy.TargetCustomizations {
			if Selects(tc.ClusterName, tc.ClusterSelector, tc.ClusterGroup, tc.ClusterGroupSelector, c) {
				matched = append(matched, i)
			}
		}
		var applied []int
		for _, i := range matched {
			tc := fy.TargetCustomizations[i]
			if tc.DoNotDeploy {
				if res.Deploy || res.Name != tc.Name || snapshot(t, res.Options) != root {
					t.Fatalf("doNotDeploy by %d (%q): deploy %v, name %q, or options not the root's", i, tc.Name, res.Deploy, res.Name)
				}
				return
			}
			applied = append(applied, i)
			if fy.TargetCustomizationMode != AllMatches {
				break
			}
		}
		if !res.Deploy {
			t.Fatal("not deployed, and no match says doNotDeploy")
		}
		var names []string
		for _, i := range applied {
			if n := fy.TargetCustomizations[i].Name; n != "" || fy.TargetCustomizationMode != AllMatches {
				names = append(names, n)
			}
		}
		if want := strings.Join(names, ", "); res.Name != want {
			t.Fatalf("name %q, want %q (matched %v)", res.Name, want, matched)
		}
		if len(applied) == 0 && snapshot(t, res.Options) != root {
			t.Fatal("no customization applies, and the options are not the root's")
		}
		checkLevels(t, fy, applied, res)
	})
}

// checkLevels checks the values levels against the customizations applied and the merged options.
func checkLevels(t *testing.T, fy fleet.FleetYAML, applied []int, res Result) {
	t.Helper()
	type level struct {
		field string
		h     *fleet.HelmOptions
	}
	levels := []level{{"helm.values", fy.Helm}}
	for _, i := range applied {
		levels = append(levels, level{fmt.Sprintf("targetCustomizations[%d].helm.values", i), fy.TargetCustomizations[i].Helm})
	}
	var want []string
	for _, l := range levels {
		if l.h != nil && (len(l.h.Values) > 0 || len(l.h.ValuesFiles) > 0) {
			want = append(want, l.field)
		}
	}
	var got []string
	var values map[string]any
	var files []string
	for _, l := range res.ValuesLevels {
		got = append(got, l.Field)
		values = MergeValues(values, l.Values)
		files = append(files, l.ValuesFiles...)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("values levels %q, want %q", got, want)
	}
	h := res.Options.Helm
	if h == nil {
		if len(values) > 0 || len(files) > 0 {
			t.Fatal("values levels without helm options")
		}
		return
	}
	if snapshot(t, nonEmpty(values)) != snapshot(t, nonEmpty(h.Values)) {
		t.Fatalf("the levels merge to %v, the options hold %v", values, h.Values)
	}
	if strings.Join(files, "\x00") != strings.Join(h.ValuesFiles, "\x00") {
		t.Fatalf("the levels list the files %q, the options %q", files, h.ValuesFiles)
	}
}

func nonEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}
