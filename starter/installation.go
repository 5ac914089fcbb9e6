package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
)

// A GitRepo's workflow ID (gitrepo/NAME, gitrepo/NAMESPACE/NAME outside fleet-default) is the same in every
// Flotilla installation on a Temporal namespace (ADR 13), so a name is the Temporal namespace's: the
// GitRepo on another task queue is another installation's.
// Every command that reads, steers or applies a GitRepo by name checks whose it is first, so that
// `flotilla --task-queue b delete shop` cannot uninstall installation a's shop.

// otherInstallationError is a GitRepo name taken by the installation on another task queue.
type otherInstallationError struct {
	key          api.GitRepoKey
	theirs, ours string
}

func (e *otherInstallationError) Error() string {
	return fmt.Sprintf("gitrepo %q belongs to the Flotilla installation on task queue %q, not to this one (%q): "+
		"installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue %s for that one)",
		e.key.String(), e.theirs, e.ours, e.theirs)
}

// ownGitRepo is nil when the GitRepo's latest run is on this installation's task queue, or when it never
// ran (the command's own call then says it is not found).
func (g *globals) ownGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey) error {
	info, err := latestRun(ctx, c, key)
	if err != nil || info == nil || info.GetTaskQueue() == g.taskQueue {
		return err
	}
	return &otherInstallationError{key: key, theirs: info.GetTaskQueue(), ours: g.taskQueue}
}

// mayApplyGitRepo is ownGitRepo for `apply`: a name another installation used is free again once that
// GitRepo has ended (deleted), and the next apply starts it here. Two installations applying one new name
// at the same moment can still meet in one workflow; ADR 13 says why that is left to the operators. A
// running GitRepo is never turned into a HelmOp of the same name, or the reverse: both run as
// gitrepo/<name> in their workspace, so they share names there (ADR 21).
func (g *globals) mayApplyGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey, helmOp bool) error {
	info, err := latestRun(ctx, c, key)
	if err != nil || info == nil || info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return err
	}
	if info.GetTaskQueue() != g.taskQueue {
		return &otherInstallationError{key: key, theirs: info.GetTaskQueue(), ours: g.taskQueue}
	}
	running := strings.HasPrefix(visibility.Keyword(info, api.SearchAttrRepo), fleet.HelmOpRepoPrefix)
	switch {
	case running && !helmOp:
		return fmt.Errorf("a HelmOp named %q runs in this workspace; GitRepos and HelmOps share names: delete it first or choose another name", key.Name)
	case !running && helmOp:
		return fmt.Errorf("a GitRepo named %q runs in this workspace; GitRepos and HelmOps share names: delete it first or choose another name", key.Name)
	}
	return nil
}

// latestRun describes the GitRepo's latest run; nil when it never ran.
func latestRun(ctx context.Context, c client.Client, key api.GitRepoKey) (*workflowpb.WorkflowExecutionInfo, error) {
	d, err := c.DescribeWorkflowExecution(ctx, key.WorkflowID(), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitrepo %q: %w", key, err)
	}
	return d.GetWorkflowExecutionInfo(), nil
}
