package activities

import (
	"context"
	"errors"
	"sort"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
)

// ListClusterWorkflows lists the running cluster workflows of a GitRepo of this installation through
// Temporal's visibility.
func (a *Activities) ListClusterWorkflows(ctx context.Context, in api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
	res := api.ListClusterWorkflowsResult{Clusters: []string{}}
	key := in.Key()
	err := a.eachWorkflow(ctx, api.RunningClusterWorkflowsQuery(a.TaskQueue, key), func(e *workflowpb.WorkflowExecutionInfo) error {
		// The query of a fleet-default GitRepo also finds the cluster workflows of GitRepos of its name in
		// other workspaces (RunningClusterWorkflowsQuery): the ID says whose each is.
		if owner, cluster, ok := api.ParseClusterWorkflowID(e.GetExecution().GetWorkflowId()); ok && owner == key {
			res.Clusters = append(res.Clusters, cluster)
		}
		return nil
	})
	sort.Strings(res.Clusters)
	return res, err
}

// NotifyGitRepos signals `sync` to every running GitRepo workflow of this installation, so a cluster added, changed or removed
// is planned at once rather than at the next poll. A GitRepo that ends meanwhile is skipped.
func (a *Activities) NotifyGitRepos(ctx context.Context, in api.NotifyGitReposInput) (api.NotifyGitReposResult, error) {
	res := api.NotifyGitReposResult{}
	err := a.eachWorkflow(ctx, api.RunningGitReposQuery(a.TaskQueue), func(e *workflowpb.WorkflowExecutionInfo) error {
		err := a.Temporal.SignalWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", api.SignalSync, api.SyncRequest{InventoryGeneration: in.Generation})
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			return err
		}
		res.Notified++
		return nil
	})
	return res, err
}

// eachWorkflow calls fn for every workflow execution a visibility query finds, a thousand at a time, and
// stops at the first error.
func (a *Activities) eachWorkflow(ctx context.Context, query string, fn func(*workflowpb.WorkflowExecutionInfo) error) error {
	return visibility.Each(ctx, a.Temporal, query, 1000, fn)
}
