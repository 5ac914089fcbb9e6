package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

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
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:])[:40], nil
}
