package main

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// withOwnGitRepo dials Temporal, checks the GitRepo is this installation's, and runs fn.
func (g *globals) withOwnGitRepo(key api.GitRepoKey, fn func(ctx context.Context, c client.Client) error) error {
	c, err := g.dialGitRepos()
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := g.ctx()
	defer cancel()
	if err := g.ownGitRepo(ctx, c, key); err != nil {
		return err
	}
	return fn(ctx, c)
}

// updateGitRepo runs an update on the GitRepo's workflow and waits for its result; a refusal carries the
// validator's reason.
func updateGitRepo(ctx context.Context, c client.Client, key api.GitRepoKey, update, verb string, arg, result any) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: key.WorkflowID(), UpdateName: update, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, result)
	}
	if err != nil {
		return fmt.Errorf("gitrepo %q: %s: %w", key, verb, err)
	}
	return nil
}
