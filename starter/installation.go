package main

import (
	"context"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
)

// A GitRepo's workflow ID (gitrepo/NAME, gitrepo/NAMESPACE/NAME outside fleet-default) is the same in every
// Flotilla installation on a Temporal namespace (ADR 13), so a name is the Temporal namespace's: the
// GitRepo on another task queue is another installation's.
// Every command that reads, steers or applies a GitRepo by name checks whose it is first, so that
// `flotilla --task-queue b delete shop` cannot uninstall installation a's shop.

// otherInstallationError is a GitRepo name taken by the installation on another task queue.
type otherInstallationError = gitrepoctl.OtherInstallationError

// ownGitRepo is nil when the GitRepo's latest run is on this installation's task queue, or when it never
// ran (the command's own call then says it is not found).
func (g *globals) ownGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey) error {
	return gitrepoctl.Own(ctx, c, g.taskQueue, key)
}

// mayApplyGitRepo is gitrepoctl.MayApply for the CLI: a GitRepo flotilla-controller owns is refused.
func (g *globals) mayApplyGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey, helmOp bool) error {
	return gitrepoctl.MayApply(ctx, c, g.taskQueue, key, helmOp, "")
}

// latestRun describes the GitRepo's latest run; nil when it never ran.
func latestRun(ctx context.Context, c client.Client, key api.GitRepoKey) (*workflowpb.WorkflowExecutionInfo, error) {
	return gitrepoctl.LatestRun(ctx, c, key)
}
