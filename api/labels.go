package api

// Release labels: how Flotilla finds and owns the Helm releases it installs. A release without
// LabelGitRepo was not installed by Flotilla, and Flotilla never changes it unless a bundle adopts it.
const (
	// LabelDeploymentID records which desired state (rendered chart, values, options) a revision holds.
	LabelDeploymentID = "flotilla.dev/deployment-id"
	LabelGitRepo      = "flotilla.dev/gitrepo"
	LabelBundle       = "flotilla.dev/bundle"
	LabelCluster      = "flotilla.dev/cluster"
	// LabelCommit is the short commit a revision was deployed from.
	LabelCommit = "flotilla.dev/commit"
	// LabelKeepResources marks a release deployed with keepResources, so that whoever uninstalls it later
	// (a sweep after its bundle was deleted from the repository, when its fleet.yaml is gone) keeps its
	// objects.
	LabelKeepResources = "flotilla.dev/keep-resources"

	// LabelGitRepoNamespace is the owning GitRepo's namespace, set only outside fleet-default: a release
	// without it is fleet-default's (ReleaseOwner), as every release written before workspaces existed is.
	LabelGitRepoNamespace = "flotilla.dev/gitrepo-namespace"

	// LabelDeleteNamespace marks a release of a bundle with fleet.yaml deleteNamespace, so that whoever
	// uninstalls it later deletes its namespace (unless protected, kept by keepResources or still holding
	// another release).
	LabelDeleteNamespace = "flotilla.dev/delete-namespace"
)
