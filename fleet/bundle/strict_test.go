package bundle

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// loadOne writes one fleet.yaml (or fleet.yml) into a bundle folder "web" and loads it.
func loadOne(t *testing.T, file, content string) (*Bundle, error) {
	t.Helper()
	root := t.TempDir()
	write(t, root, map[string]string{"web/" + file: content})
	return Load(root, Ref{Name: "web", Path: "web"})
}

func TestAMisspeltKeyIsAnErrorNamingFileLineKeyAndTheKeyMeant(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"name: web\nhelm:\n  chart: ./chart\n  relaseName: web\n",
			`web/fleet.yaml: line 4: unknown key "relaseName" in helm (did you mean "releaseName"?)`},
		{"helm:\n  valuesFile: [prod.yaml]\n",
			`web/fleet.yaml: line 2: unknown key "valuesFile" in helm (did you mean "valuesFiles"?)`},
		{"defaultNamespace: web\nvaluesFile: [prod.yaml]\n",
			`web/fleet.yaml: line 2: unknown key "valuesFile" (did you mean "helm.valuesFiles"?)`},
		{"namespcae: web\n",
			`web/fleet.yaml: line 1: unknown key "namespcae" (did you mean "namespace"?)`},
		{"targetCustomizations:\n- name: prod\n  clusterSelector:\n    matchLabels: {env: prod}\n  helm:\n    relaseName: web-prod\n",
			`web/fleet.yaml: line 6: unknown key "relaseName" in targetCustomizations[0].helm (did you mean "releaseName"?)`},
		{"targetCustomizations:\n- name: dev\n  clusterName: dev\n- name: prod\n  clustrName: prod\n",
			`web/fleet.yaml: line 5: unknown key "clustrName" in targetCustomizations[1] (did you mean "clusterName"?)`},
		{"overrideTargets:\n- clusterSelector:\n    matchLabel: {env: prod}\n",
			`web/fleet.yaml: line 3: unknown key "matchLabel" in overrideTargets[0].clusterSelector (did you mean "matchLabels"?)`},
	} {
		_, err := loadOne(t, "fleet.yaml", tc.yaml)
		require.EqualError(t, err, tc.want, tc.yaml)
		var le *LoadError
		require.ErrorAs(t, err, &le, "the error stays a LoadError with file and line")
	}

	_, err := loadOne(t, "fleet.yaml", "frobnicate: true\n")
	require.EqualError(t, err, `web/fleet.yaml: line 1: unknown key "frobnicate"`, "no suggestion when nothing is close")

	_, err = loadOne(t, "fleet.yml", "helm:\n  chart: ./chart\nkustomise:\n  dir: overlays\n")
	require.EqualError(t, err, `web/fleet.yml: line 3: unknown key "kustomise" (did you mean "kustomize"?)`)
}

func TestKeysFleetDocumentsButFlotillaIgnoresAreWarnings(t *testing.T) {
	b, err := loadOne(t, "fleet.yaml", `name: web
helm:
  chart: ./chart
  valuesFrom:
  - secretKeyRef: {name: web-values, key: values.yaml}
rolloutStrategy:
  maxUnavailable: 10%
dependsOn:
- name: db
paused: true
targetCustomizations:
- name: prod
  clusterName: prod
  downstreamResources:
  - {kind: Secret, name: tls}
  helm:
    disableDNS: true
targets:
- clusterName: dev
`)
	require.NoError(t, err)
	require.Equal(t, []string{
		"web/fleet.yaml: line 14: targetCustomizations[0].downstreamResources is not supported yet and is ignored",
		"web/fleet.yaml: line 17: targetCustomizations[0].helm.disableDNS is not supported yet and is ignored",
		"web/fleet.yaml: line 18: targets is not supported yet and is ignored; targetCustomizations does the same",
	}, b.Warnings)
	require.Equal(t, "./chart", b.FleetYAML.Helm.Chart, "the keys Flotilla knows are read as before")
	require.Equal(t, "10%", b.FleetYAML.RolloutStrategy.MaxUnavailable.String(), "a percentage is read as Fleet reads it")
	require.Equal(t, "prod", b.FleetYAML.TargetCustomizations[0].ClusterName)
	require.Equal(t, []fleet.Dependency{{Name: "db"}}, b.FleetYAML.DependsOn, "dependsOn is read, not warned about")
	require.Equal(t, []fleet.ValuesFrom{{SecretKeyRef: &fleet.ValuesKeyRef{Name: "web-values", Key: "values.yaml"}}},
		b.FleetYAML.Helm.ValuesFrom, "helm.valuesFrom is read, not warned about")
}

// helm.valuesFrom is Fleet's schema exactly: a misspelt key of a reference is an error naming it.
func TestValuesFromIsReadStrictly(t *testing.T) {
	b, err := loadOne(t, "fleet.yaml", `helm:
  valuesFrom:
  - configMapKeyRef: {name: web, namespace: config}
    secretKeyRef: {name: web-creds, key: creds.yaml}
targetCustomizations:
- name: prod
  clusterName: prod
  helm:
    valuesFrom:
    - secretKeyRef: {name: prod-creds}
`)
	require.NoError(t, err)
	require.Empty(t, b.Warnings)
	require.Equal(t, []fleet.ValuesFrom{{ConfigMapKeyRef: &fleet.ValuesKeyRef{Name: "web", Namespace: "config"},
		SecretKeyRef: &fleet.ValuesKeyRef{Name: "web-creds", Key: "creds.yaml"}}}, b.FleetYAML.Helm.ValuesFrom)
	require.Equal(t, "prod-creds", b.FleetYAML.TargetCustomizations[0].Helm.ValuesFrom[0].SecretKeyRef.Name)

	_, err = loadOne(t, "fleet.yaml", "helm:\n  valuesFrom:\n  - secretKeyRef: {name: web, keys: values.yaml}\n")
	require.EqualError(t, err, `web/fleet.yaml: line 3: unknown key "keys" in helm.valuesFrom[0].secretKeyRef (did you mean "key"?)`)
}

// targetCustomizationMode (Fleet v0.16) is read, not warned about; Fleet's CRD accepts only its two
// spellings, so any other is an error with the file, the line and the value.
func TestTargetCustomizationModeIsReadAndAnUnknownOneIsAnError(t *testing.T) {
	for _, mode := range []string{"FirstMatch", "AllMatches"} {
		b, err := loadOne(t, "fleet.yaml", "targetCustomizationMode: "+mode+"\ntargetCustomizations:\n- name: prod\n  clusterName: prod\n")
		require.NoError(t, err, mode)
		require.Empty(t, b.Warnings, mode)
		require.Equal(t, mode, b.FleetYAML.TargetCustomizationMode)
	}
	for _, mode := range []string{"allMatches", "All"} {
		_, err := loadOne(t, "fleet.yaml", "name: web\ntargetCustomizationMode: "+mode+"\n")
		require.EqualError(t, err, `web/fleet.yaml: line 2: targetCustomizationMode: unknown mode "`+mode+`" (want FirstMatch or AllMatches)`)
	}
}

// deleteNamespace is read at the top of fleet.yaml, as Fleet reads it (the Bundle's spec); under a
// targetCustomization Fleet has no such key, so it is a warning saying where it goes.
func TestDeleteNamespaceIsTheBundlesNotACustomizations(t *testing.T) {
	b, err := loadOne(t, "fleet.yaml", "namespace: web\ndeleteNamespace: true\n")
	require.NoError(t, err)
	require.Empty(t, b.Warnings)
	require.True(t, b.FleetYAML.DeleteNamespace)

	b, err = loadOne(t, "fleet.yaml", "targetCustomizations:\n- name: prod\n  clusterName: prod\n  deleteNamespace: true\n")
	require.NoError(t, err)
	require.Equal(t, []string{"web/fleet.yaml: line 4: targetCustomizations[0].deleteNamespace is not supported yet and is ignored; " +
		"set it at the top of fleet.yaml, where it applies to the bundle on every cluster"}, b.Warnings)
	require.False(t, b.FleetYAML.DeleteNamespace)
}

func TestAKeyWrittenTwiceIsAnErrorWithItsLine(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"name: web\ndefaultNamespace: a\nname: api\n",
			`web/fleet.yaml: line 3: duplicate key "name" (first at line 1)`},
		// encoding/json matches keys whatever their case, so these two would fill one field.
		{"helm:\n  releaseName: a\n  ReleaseName: b\n",
			`web/fleet.yaml: line 3: duplicate key "ReleaseName" in helm (first at line 2)`},
		{"helm:\n  values:\n    replicas: 1\n    image: web\n    replicas: 2\n",
			`web/fleet.yaml: line 5: duplicate key "replicas" in helm.values (first at line 3)`},
		{"targetCustomizations:\n- name: prod\n  clusterName: prod\n  name: dev\n",
			`web/fleet.yaml: line 4: duplicate key "name" in targetCustomizations[0] (first at line 2)`},
	} {
		_, err := loadOne(t, "fleet.yaml", tc.yaml)
		require.EqualError(t, err, tc.want, tc.yaml)
	}

	b, err := loadOne(t, "fleet.yaml", "helm:\n  values:\n    Name: a\n    name: b\n")
	require.NoError(t, err, "values are the chart's: keys differing in case are two keys")
	require.Equal(t, map[string]any{"Name": "a", "name": "b"}, b.FleetYAML.Helm.Values)
}

func TestSpellingsThatWorkedKeepWorking(t *testing.T) {
	b, err := loadOne(t, "fleet.yml", "Name: web\nhelm:\n  ReleaseName: guestbook\n  chart: ./chart\n")
	require.NoError(t, err, "keys match whatever their case, as encoding/json and Fleet's parser match them")
	require.Equal(t, "guestbook", b.FleetYAML.Helm.ReleaseName)
	require.Equal(t, "web", b.FleetYAML.Name)
	require.Empty(t, b.Warnings)

	b, err = loadOne(t, "fleet.yaml", `targetCustomizations:
- &dev
  name: dev
  clusterName: dev
  kustomize: {dir: overlays/dev}
- <<: *dev
  name: prod
  clusterName: prod
`)
	require.NoError(t, err, "a YAML merge key is not a key of its own, and what it merges may be overridden")
	require.Equal(t, "overlays/dev", b.FleetYAML.TargetCustomizations[1].Kustomize.Dir)
	require.Equal(t, "prod", b.FleetYAML.TargetCustomizations[1].Name)

	_, err = loadOne(t, "fleet.yaml", "defaults: &d\n  dir: x\nkustomize: *d\n")
	require.EqualError(t, err, `web/fleet.yaml: line 1: unknown key "defaults"`)

	// Every fleet.yaml shipped in this repository: examples and the fleet-examples test data.
	var files []string
	for _, dir := range []string{"../../examples", "../../starter/testdata"} {
		require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && (d.Name() == "fleet.yaml" || d.Name() == "fleet.yml") {
				files = append(files, p)
			}
			return err
		}))
	}
	require.GreaterOrEqual(t, len(files), 10)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, warnings, err := Parse(f, data)
		require.NoError(t, err, f)
		require.Empty(t, warnings, f)
	}
}

func TestSuggestionsStayClose(t *testing.T) {
	require.Equal(t, 1, editDistance("namespcae", "namespace"), "two neighbours swapped are one edit")
	require.Equal(t, "", fleetYAMLSchema.suggest("labelz-and-more"))
	require.Equal(t, "labels", fleetYAMLSchema.suggest("lables"))
	require.Equal(t, "helm.values", fleetYAMLSchema.suggest("values"), "a helm key written one level too high")
}

func TestARolloutStrategyIsReadAsFleetWritesItAndABadValueIsNamed(t *testing.T) {
	b, err := loadOne(t, "fleet.yaml", `rolloutStrategy:
  maxUnavailable: 1
  autoPartitionThreshold: 10
  partitions:
  - name: canary
    maxUnavailable: 0
    clusterSelector: {matchLabels: {stage: canary}}
  - name: rest
    clusterGroup: prod
    gate: {approval: true, soak: 10m}
`)
	require.NoError(t, err)
	require.Empty(t, b.Warnings)
	rs := b.FleetYAML.RolloutStrategy
	require.Equal(t, 1, rs.MaxUnavailable.IntValue())
	require.Equal(t, 10, *rs.AutoPartitionThreshold)
	require.Len(t, rs.Partitions, 2)
	require.Equal(t, "canary", rs.Partitions[0].Name)
	require.Equal(t, 0, rs.Partitions[0].MaxUnavailable.IntValue())
	require.Equal(t, "prod", rs.Partitions[1].ClusterGroup)
	require.Equal(t, &fleet.PartitionGate{Approval: true, Soak: "10m"}, rs.Partitions[1].Gate, "Flotilla's gate")
	_, err = loadOne(t, "fleet.yaml", "rolloutStrategy:\n  partitions:\n  - gate: {soak: forever}\n")
	require.EqualError(t, err, `web/fleet.yaml: line 1: rolloutStrategy.partitions[0].gate.soak: "forever" is not a positive duration (10m, 1h30m)`)

	_, err = loadOne(t, "fleet.yaml", "rolloutStrategy:\n  partitions:\n  - maxUnavailable: half\n")
	require.EqualError(t, err, `web/fleet.yaml: line 1: rolloutStrategy.partitions[0].maxUnavailable: "half" is neither a number nor a percentage (10%)`)
	_, err = loadOne(t, "fleet.yaml", "rolloutStrategy:\n  maxNew: many\n")
	require.ErrorContains(t, err, "rolloutStrategy.maxNew: cannot be a string")
}
