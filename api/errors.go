package api

// Error types: the type of a Temporal application error an activity or workflow fails with, and the
// errorType of a bundle in an observation or apply result. Template and validation errors do not heal by
// retrying.
const (
	ErrTypeTemplate    = "TemplateError"
	ErrTypeBundle      = "BundleError"
	ErrTypeInvalid     = "InvalidManifest"
	ErrTypeUnreachable = "ClusterUnreachable"
	ErrTypeApply       = "ApplyError"
	ErrTypeStale       = "StaleObservation"
	// ErrTypeReleaseConflict is a release under the bundle's name that belongs to someone else.
	ErrTypeReleaseConflict = "ReleaseConflict"
	// ErrTypeChartRenderLimit is a chart whose templates went past a limit of the render check (memory,
	// CPU time, wall-clock time, output size); Helm was not asked to install or upgrade it.
	ErrTypeChartRenderLimit = "ChartRenderLimit"

	// ErrTypeGit is a repository that could not be listed or fetched; it is retried.
	ErrTypeGit = "GitError"
	// ErrTypeRevisionNotFound is a branch or revision the repository does not have.
	ErrTypeRevisionNotFound = "RevisionNotFound"
	// ErrTypeInvalidTargets is a GitRepo's spec.targets that cannot be evaluated.
	ErrTypeInvalidTargets = "InvalidTargets"
	// ErrTypeUnknownCluster is a cluster the inventory does not have (any more).
	ErrTypeUnknownCluster = "UnknownCluster"
	// ErrTypeInvalidGitRepo ends a GitRepo workflow whose document does not validate.
	ErrTypeInvalidGitRepo = "InvalidGitRepo"
	// ErrTypeInvalidCarry ends a GitRepo workflow whose state handed over by continue-as-new does not unpack.
	ErrTypeInvalidCarry = "InvalidCarry"
	// ErrTypeRemoveIncomplete ends a deleted GitRepo that could not be uninstalled from every cluster.
	ErrTypeRemoveIncomplete = "RemoveIncomplete"
)

// Release actions the cluster workflow decides and the Apply activity performs.
const (
	ActionInstall  = "install"
	ActionUpgrade  = "upgrade"
	ActionRecover  = "recover"  // a pending-* revision left by a killed worker: drop it, then apply
	ActionRollback = "rollback" // drift correction: re-apply the current revision
)
