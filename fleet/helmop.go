package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	yaml12 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// KindHelmOp is Fleet's HelmOp: a chart from a Helm repository or an OCI registry deployed to clusters
// with no git repository at all.
const KindHelmOp = "HelmOp"

// HelmOpRepoPrefix starts the spec.repo of the GitRepo a HelmOp runs as: no git URL has it, so a HelmOp is
// told from a GitRepo by it wherever only the repo is known (visibility, `get gitrepos`).
const HelmOpRepoPrefix = "helmop:"

// HelmOp is Fleet's HelmOp (fleet.cattle.io/v1alpha1, Fleet v0.12).
type HelmOp struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       HelmOpSpec `json:"spec"`
}

// HelmOpSpec is Fleet's HelmOp spec: a bundle's options (its chart named by helm.repo, helm.chart and
// helm.version) with the targets that choose clusters and customize it for them.
type HelmOpSpec struct {
	BundleDeploymentOptions
	// Targets choose clusters, each with the options it overrides, as a Bundle's targets: empty is the
	// ClusterGroup "default".
	Targets []BundleTarget `json:"targets,omitempty"`
	// TargetCustomizationMode is FirstMatch (when empty) or AllMatches, as in fleet.yaml.
	TargetCustomizationMode string            `json:"targetCustomizationMode,omitempty"`
	Labels                  map[string]string `json:"labels,omitempty"`
	Paused                  bool              `json:"paused,omitempty"`
	// PollingInterval is how often the chart's version is resolved again; empty is 15s.
	PollingInterval string `json:"pollingInterval,omitempty"`
	// HelmSecretName names the worker's credentials for the chart's repository or registry.
	HelmSecretName        string `json:"helmSecretName,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
	// RolloutStrategy is how a new chart version reaches the clusters, as a bundle's.
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty"`
}

// AsGitRepo is the GitRepo a HelmOp runs as: one bundle, the HelmOp's options as its fleet.yaml, deployed
// by the same workflows as a GitRepo's bundles, with spec.helmOp in place of a repository.
func (h HelmOp) AsGitRepo() (GitRepo, error) {
	s := h.Spec
	name := h.Metadata.Name
	if s.Helm == nil || s.Helm.Chart == "" {
		return GitRepo{}, fmt.Errorf("helmop %q: spec.helm.chart is required", name)
	}
	if s.Helm.Repo == "" && !strings.Contains(s.Helm.Chart, "://") {
		return GitRepo{}, fmt.Errorf("helmop %q: spec.helm.chart %q: a HelmOp has no repository of its own: give spec.helm.repo, an https URL or an oci:// reference", name, s.Helm.Chart)
	}
	if len(s.Helm.ValuesFiles) > 0 {
		return GitRepo{}, fmt.Errorf("helmop %q: spec.helm.valuesFiles: a HelmOp has no files; give spec.helm.values", name)
	}
	fy := &FleetYAML{Name: name, Labels: s.Labels, BundleDeploymentOptions: s.BundleDeploymentOptions,
		TargetCustomizationMode: s.TargetCustomizationMode, Paused: s.Paused, RolloutStrategy: s.RolloutStrategy}
	var targets []GitTarget
	for _, t := range s.Targets {
		targets = append(targets, GitTarget{Name: t.Name, ClusterName: t.ClusterName, ClusterSelector: t.ClusterSelector,
			ClusterGroup: t.ClusterGroup, ClusterGroupSelector: t.ClusterGroupSelector, DoNotDeploy: t.DoNotDeploy})
		fy.TargetCustomizations = append(fy.TargetCustomizations, t)
	}
	return GitRepo{APIVersion: APIVersion, Kind: KindGitRepo, Metadata: h.Metadata, Spec: GitRepoSpec{
		Repo: HelmOpRepoPrefix + name, Targets: targets, PollingInterval: s.PollingInterval,
		HelmSecretName: s.HelmSecretName, InsecureSkipTLSVerify: s.InsecureSkipTLSVerify, HelmOp: fy,
	}}, nil
}

// IsHelmOp says whether a GitRepo is the one a HelmOp runs as.
func (g GitRepo) IsHelmOp() bool { return g.Spec.HelmOp != nil }

// HelmOpDocument is the fleet.yaml a HelmOp's bundle is loaded from (GitRepoSpec.HelmOp, written out), and
// what stands for its commit: the document's digest, so a changed spec is planned and delivered as a new
// commit would be. The worker and `flotilla render` both write it from here, so a preview loads what the
// worker loads.
func HelmOpDocument(fy *FleetYAML) (data []byte, commit string, err error) {
	if data, err = yaml.Marshal(fy); err != nil {
		return nil, "", fmt.Errorf("helmop: %w", err)
	}
	if data, err = readsAsWritten(fy, data); err != nil {
		return nil, "", fmt.Errorf("helmop: %w", err)
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])[:40], nil
}

// readsAsWritten returns data unless fleet.yaml's reader, which reads YAML 1.2 (go.yaml.in/yaml/v3), would
// read one of its plain scalars as something else: sigs.k8s.io/yaml writes by YAML 1.1's rules and leaves a
// string such as "0o+0" unquoted, which YAML 1.2 reads as the number 0. Such a document is written again
// by the reader's own library, which quotes what it would not read back as written. A document that
// already reads back keeps its bytes, and so its digest: a running HelmOp is not given a new commit.
func readsAsWritten(fy *FleetYAML, data []byte) ([]byte, error) {
	want, err := viaJSON(fy)
	if err != nil {
		return nil, err
	}
	var read any
	if yaml12.Unmarshal(data, &read) == nil {
		if got, err := viaJSON(read); err == nil && reflect.DeepEqual(got, want) {
			return data, nil
		}
	}
	var buf bytes.Buffer
	enc := yaml12.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(want); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// viaJSON is v as fleet.yaml's reader hands it on: through JSON, numbers as float64.
func viaJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}
