package api

import "strings"

// Error types: the type of a Temporal application error an activity or workflow fails with, and the
// errorType of a bundle in an observation or apply result. Template and validation errors do not heal by
// retrying.
const (
	ErrTypeTemplate = "TemplateError"
	ErrTypeBundle   = "BundleError"
	// ErrTypeValuesFrom is a helm.valuesFrom ConfigMap or Secret the cluster does not have, may not be read,
	// or whose key is not Helm values; it heals when the source is fixed, at the next check.
	ErrTypeValuesFrom  = "ValuesFromError"
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
	// ErrTypeNotGranted is a task an agent refuses: what it was asked to act on, or the package it was sent,
	// is not the management side's for its cluster (ADR 26).
	ErrTypeNotGranted = "NotGranted"
	// ErrTypeWorkspace is a GitRepo or cluster of a workspace the installation does not serve, or a
	// kubeconfig outside its workspace's folder (ADR 27).
	ErrTypeWorkspace = "WorkspaceNotServed"
)

// Action is a release action the cluster workflow decides and the Apply activity performs; "" is none.
type Action string

// Release actions.
const (
	ActionNone     Action = ""
	ActionInstall  Action = "install"
	ActionUpgrade  Action = "upgrade"
	ActionRecover  Action = "recover"  // a pending-* revision left by a killed worker: drop it, then apply
	ActionRollback Action = "rollback" // drift correction: re-apply the current revision
)

// ReleaseStatus is Helm's status of a release revision (helm.sh/helm/v3/pkg/release.Status), spelled here
// so that deciding from it needs no Helm.
type ReleaseStatus string

// The Helm statuses decisions and status depend on.
const (
	ReleaseDeployed     ReleaseStatus = "deployed"
	ReleaseFailed       ReleaseStatus = "failed"
	ReleaseUninstalling ReleaseStatus = "uninstalling"
)

// Pending reports a revision locked by an operation in progress, or by one whose process died
// (pending-install, pending-upgrade, pending-rollback).
func (s ReleaseStatus) Pending() bool { return strings.HasPrefix(string(s), "pending-") }
