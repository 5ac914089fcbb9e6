package activities

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/cachedir"
)

// helmOpCheckout is a HelmOp's checkout: a folder holding only its fleet.yaml, content-addressed beside the
// git checkouts, which any worker writes again from the payload when it lacks it.
func (a *Activities) helmOpCheckout(fy *fleet.FleetYAML) (string, error) {
	data, commit, err := fleet.HelmOpDocument(fy)
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
	tmp, err := os.MkdirTemp(filepath.Dir(dir), cachedir.HelmOpTemp)
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
