package activities

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// helmOpCommit is what stands for a commit of a HelmOp: the digest of its fleet.yaml, so a changed spec
// is planned and delivered as a new commit would be. Chart versions are resolved by the plan, as for a
// GitRepo's remote charts.
func helmOpCommit(fy *fleet.FleetYAML) (string, []byte, error) {
	data, err := yaml.Marshal(fy)
	if err != nil {
		return "", nil, fmt.Errorf("helmop: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:40], data, nil
}

// helmOpCheckout is a HelmOp's checkout: a folder holding only its fleet.yaml, content-addressed beside the
// git checkouts, which any worker writes again from the payload when it lacks it.
func (a *Activities) helmOpCheckout(fy *fleet.FleetYAML) (string, error) {
	commit, data, err := helmOpCommit(fy)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(a.Git.Dir, "helmops", commit)
	if _, err := os.Stat(filepath.Join(dir, "fleet.yaml")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("helmop: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return "", fmt.Errorf("helmop: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "fleet.yaml"), data, 0o644); err != nil {
		return "", fmt.Errorf("helmop: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "fleet.yaml")); statErr == nil {
			return dir, nil // another activity wrote it first
		}
		return "", fmt.Errorf("helmop: %w", err)
	}
	return dir, nil
}
