package render

import (
	"fmt"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// ChartLoader brings in what a bundle's chart does not hold in the repository: a chart from a Helm
// repository, an https URL or an OCI registry, and the Chart.yaml dependencies a repository chart does not
// vendor. The worker's loader fetches through its digest-verified cache with its own credentials; render
// itself never reads the network.
type ChartLoader interface {
	// Remote loads the chart the helm options name, pinned by the lock among locks that resolves them
	// (the plan's), or resolved afresh when none does (a preview of a folder).
	Remote(h *fleet.HelmOptions, locks []api.ChartLock) (*chart.Chart, api.ChartLock, error)
	// Dependencies adds to c, the chart of the folder dir of the checkout at root, the Chart.yaml
	// dependencies its charts/ folder lacks, pinned by locks likewise (a file:// dependency is read from the
	// checkout, never from outside it); it returns the lock it used, nil when there was nothing to add.
	Dependencies(c *chart.Chart, root, dir string, h *fleet.HelmOptions, locks []api.ChartLock) (*api.ChartLock, error)
}

// IsRemoteChart reports whether helm options name a chart outside the repository: a name in helm.repo, an
// archive URL, or an oci:// reference.
func IsRemoteChart(h *fleet.HelmOptions) bool {
	return h != nil && (h.Repo != "" || strings.Contains(h.Chart, "://"))
}

// MissingDependencies are the Chart.yaml dependencies of c that its charts/ folder does not hold (by name
// or alias), which `helm dependency build` would fetch.
func MissingDependencies(c *chart.Chart) []*chart.Dependency {
	if c.Metadata == nil {
		return nil
	}
	have := map[string]bool{}
	for _, d := range c.Dependencies() {
		have[d.Name()] = true
	}
	var missing []*chart.Dependency
	for _, d := range c.Metadata.Dependencies {
		if d != nil && !have[d.Name] {
			missing = append(missing, d)
		}
	}
	return missing
}

func (r *Release) setChartLock(l api.ChartLock) {
	r.ChartLocks = append(r.ChartLocks, l)
}

// chartLockDigest is what the deployment ID takes of the locks: the digests pin every byte fetched.
func chartLockDigest(locks []api.ChartLock) string {
	var b strings.Builder
	var walk func([]api.ChartLock)
	walk = func(ls []api.ChartLock) {
		for _, l := range ls {
			fmt.Fprintf(&b, "%s\x00%s\x00%s\x00", l.Source, l.Version, l.Digest)
			walk(l.Dependencies)
		}
	}
	walk(locks)
	return b.String()
}

// addDependencies completes a repository chart with the dependencies its charts/ folder lacks, as
// `helm dependency build` would, unless helm.disableDependencyUpdate. Without a loader they are left to
// Helm, which refuses the chart naming them.
func addDependencies(rel *Release, in Input, dir string, h *fleet.HelmOptions) error {
	if len(MissingDependencies(rel.Chart)) == 0 || h != nil && h.DisableDependencyUpdate || in.Charts == nil {
		return nil
	}
	lock, err := in.Charts.Dependencies(rel.Chart, in.RepoRoot, dir, h, in.ChartLocks)
	if err != nil {
		return fmt.Errorf("%s: %w", fleetFile(in.Bundle), err)
	}
	if lock != nil {
		rel.setChartLock(*lock)
	}
	return nil
}

// chartSourceName names a remote chart source in messages as fleet.yaml wrote it.
func chartSourceName(h *fleet.HelmOptions) string {
	if h.Repo != "" {
		return fmt.Sprintf("helm.repo %q, helm.chart %q", h.Repo, h.Chart)
	}
	return fmt.Sprintf("helm.chart %q", h.Chart)
}

// LoadRepoChart loads the chart in folder dir of the checkout at root, as a bundle's chart is loaded:
// every read stays inside the checkout.
func LoadRepoChart(root, dir string) (*chart.Chart, error) { return loadChart(root, dir, nil) }

// ChartDir is the folder of the checkout holding the chart of a bundle at bundlePath rendered with helm
// options h, or "" when its chart is remote or it has none.
func ChartDir(root, bundlePath string, h *fleet.HelmOptions) string {
	switch {
	case IsRemoteChart(h):
		return ""
	case h != nil && h.Chart != "":
		return path.Join(bundlePath, h.Chart)
	case exists(root, path.Join(bundlePath, "Chart.yaml")):
		return bundlePath
	}
	return ""
}
