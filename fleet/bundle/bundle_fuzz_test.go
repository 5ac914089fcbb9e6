package bundle

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/rollout"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

const fuzzFile = "apps/web/fleet.yaml"

var warningLine = regexp.MustCompile(`^apps/web/fleet\.yaml: line [1-9][0-9]*: .* is not supported yet and is ignored`)

// FuzzParse reads any text as a fleet.yaml. Every mistake is a LoadError naming the file, every warning
// names the file and the line; what is accepted has a name that can be a label value, a known
// targetCustomizationMode and a valid rolloutStrategy; and what is accepted, written out as the worker
// writes a HelmOp's fleet.yaml (fleet.HelmOpDocument), reads back the same, with no warning.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"name: web\nhelm:\n  chart: ./chart\n  releaseName: web\n  values:\n    replicas: 2\n    image: {repository: nginx, tag: '1.25'}\n",
		"defaultNamespace: web\nnamespace: web\nhelm:\n  repo: https://charts.example.com\n  chart: web\n  version: '>=1.0.0 <2.0.0'\n" +
			"  valuesFiles: [values-prod.yaml]\n  templateValues: {fqdn: '${ .ClusterValues.fqdn }'}\n",
		"kustomize:\n  dir: overlays/prod\ndiff:\n  comparePatches:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: web, operations: [{op: remove, path: /spec/replicas}]}\n",
		"yaml:\n  overlays: [prod]\nnamespaceLabels: {team: a}\ncorrectDrift: {enabled: true, force: true}\nkeepResources: true\n",
		"targetCustomizationMode: AllMatches\ntargetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {env: prod}\n" +
			"  helm: {values: {replicas: 3}}\n- name: dev\n  clusterGroup: dev\n  doNotDeploy: true\n",
		"dependsOn:\n- name: db\n- selector: {matchLabels: {app: cache}}\n  acceptedStates: [Ready, Modified]\n",
		"rolloutStrategy:\n  maxUnavailable: 10%\n  autoPartitionThreshold: 10\n  partitions:\n  - name: canary\n    maxUnavailable: 0\n" +
			"    clusterSelector: {matchLabels: {stage: canary}}\n  - name: rest\n    clusterGroup: prod\n    gate: {approval: true, soak: 10m}\n",
		"helm:\n  valuesFrom:\n  - configMapKeyRef: {name: web, namespace: config}\n    secretKeyRef: {name: web-creds, key: creds.yaml}\n",
		"targetCustomizations:\n- &dev\n  name: dev\n  clusterName: dev\n  kustomize: {dir: overlays/dev}\n- <<: *dev\n  name: prod\n  clusterName: prod\n",
		"imageScans: []\ntargets:\n- clusterName: dev\nhelm: {disableDNS: true}\n",
		"helm:\n  values:\n    octal: '0o17'\n    hex: '0x1F'\n    yes: 'yes'\n    empty: ''\n    nothing: null\n    big: 12345678901234567890\n    float: 1.5e3\n",
		"helm:\n  relaseName: web\n", "name: web\nname: api\n", "name: web app\n", "targetCustomizationMode: All\n",
		"helm: [\n", "- a\n- b\n", "helm:\n  values: just-a-string\n", "dependsOn:\n- acceptedStates: [Sleeping]\n",
		"rolloutStrategy:\n  partitions:\n  - gate: {soak: forever}\n", "a: &a [*a]\n", "", "---\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("fleet.yaml files are kilobytes; a larger one only slows the search")
		}
		fy, warnings, err := Parse(fuzzFile, data)
		fy2, warnings2, err2 := Parse(fuzzFile, data)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || snapshot(t, fy) != snapshot(t, fy2) || len(warnings) != len(warnings2) {
			t.Fatalf("not deterministic: %v, then %v", err, err2)
		}
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || le.File != fuzzFile || le.Line < 0 {
				t.Fatalf("not a LoadError naming the file: %#v", err)
			}
			return
		}
		for _, w := range warnings {
			if !warningLine.MatchString(w) {
				t.Fatalf("the warning names no file and line: %q", w)
			}
		}
		if fy.Name != "" && len(validation.IsValidLabelValue(fy.Name)) > 0 {
			t.Fatalf("accepted the name %q", fy.Name)
		}
		if err := target.CheckMode(fy.TargetCustomizationMode); err != nil {
			t.Fatalf("accepted: %v", err)
		}
		if err := rollout.Validate(fy.RolloutStrategy); err != nil {
			t.Fatalf("accepted: %v", err)
		}
		doc, _, err := fleet.HelmOpDocument(&fy)
		if err != nil {
			t.Fatalf("accepted, and cannot be written out: %v", err)
		}
		back, warnings, err := Parse(fuzzFile, doc)
		if err != nil {
			t.Fatalf("written out, it is refused: %v\n%s", err, doc)
		}
		if len(warnings) > 0 {
			t.Fatalf("written out, it warns: %q", warnings)
		}
		if snapshot(t, back) != snapshot(t, fy) {
			t.Fatalf("written out and read back, it changed:\n%s\nwas:\n%s\nis:\n%s", doc, snapshot(t, fy), snapshot(t, back))
		}
	})
}

func snapshot(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
