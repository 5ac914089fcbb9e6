package main

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/gitrepoctl"
)

// A GitRepo's workflow ID (gitrepo/NAME, gitrepo/NAMESPACE/NAME outside fleet-default) is the same in every
// Flotilla installation on a Temporal namespace (ADR 13), so a name is the Temporal namespace's: the
// GitRepo on another task queue is another installation's.
// Every command that reads, steers or applies a GitRepo by name checks whose it is first, so that
// `flotilla --task-queue b delete shop` cannot uninstall installation a's shop.

// ownGitRepo is nil when the GitRepo's latest run is on this installation's task queue, or when it never
// ran (the command's own call then says it is not found).
func (g *globals) ownGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey) error {
	return gitrepoctl.Own(ctx, c, g.taskQueue, key)
}

// mayApplyGitRepo is gitrepoctl.MayApply for the CLI: a GitRepo flotilla-controller owns is refused.
func (g *globals) mayApplyGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey, helmOp bool) error {
	return gitrepoctl.MayApply(ctx, c, g.taskQueue, key, helmOp, "")
}
