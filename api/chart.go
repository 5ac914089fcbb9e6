package api

// ChartLock pins one chart source of a bundle (the root `helm` options, or a targetCustomization's that
// names another chart) to what the GitRepo's plan resolved it to: every cluster deploys exactly this
// archive, whatever is published after, until a later poll resolves something else. Only names, versions
// and digests travel: chart bytes stay in each worker's cache, credentials in its credentials store.
type ChartLock struct {
	// Source is the key of the fleet.yaml chart source it resolves (charts.Source.Key): repo, chart and
	// version as written, so a cluster finds the lock of the options it renders with.
	Source string `json:"source"`
	// URL is where the archive comes from, never with credentials: https://…/web-1.2.0.tgz or
	// oci://registry/path/web:1.2.0.
	URL     string `json:"url,omitempty"`
	Version string `json:"version,omitempty"`
	// Digest is the archive's sha256 ("sha256:<hex>"): a cached or fetched archive that differs is refused.
	Digest string `json:"digest,omitempty"`
	// CredentialsOrigin is the only scheme://host:port the GitRepo's Helm credentials go to when the
	// archive is fetched: the origin of the repository, archive or registry the fleet.yaml named. Empty
	// (a third-party chart's dependency, a lock from before it was recorded): none.
	CredentialsOrigin string `json:"credentialsOrigin,omitempty"`
	// Dependencies are the Chart.yaml dependencies fetched for it (Source: the dependency's name or alias),
	// as `helm dependency build` would, unless helm.disableDependencyUpdate.
	Dependencies []ChartLock `json:"dependencies,omitempty"`
	// Error says why the source did not resolve (the URL and the HTTP status, a missing dependency): the
	// bundle fails with it on every cluster, and what runs there is left alone.
	Error string `json:"error,omitempty"`
}
