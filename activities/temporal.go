package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
)

// ListClusterWorkflows lists the running cluster workflows of a GitRepo through Temporal's visibility.
func (a *Activities) ListClusterWorkflows(ctx context.Context, in api.ListClusterWorkflowsInput) (api.ListClusterWorkflowsResult, error) {
	query := fmt.Sprintf("WorkflowType = '%s' AND %s = '%s' AND ExecutionStatus = 'Running'",
		api.ClusterWorkflowType, api.SearchAttrGitRepo, in.GitRepo)
	res := api.ListClusterWorkflowsResult{Clusters: []string{}}
	var token []byte
	for {
		page, err := a.Temporal.ListWorkflow(ctx, listRequest(query, token))
		if err != nil {
			return res, err
		}
		for _, e := range page.Executions {
			if p := e.GetSearchAttributes().GetIndexedFields()[api.SearchAttrCluster]; p != nil {
				var name string
				if err := decodePayload(p, &name); err == nil {
					res.Clusters = append(res.Clusters, name)
				}
			}
		}
		token = page.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	sort.Strings(res.Clusters)
	return res, nil
}

// NotifyGitRepos signals `sync` to every running GitRepo workflow, so a cluster added, changed or removed
// is planned at once rather than at the next poll. A GitRepo that ends meanwhile is skipped.
func (a *Activities) NotifyGitRepos(ctx context.Context, in api.NotifyGitReposInput) (api.NotifyGitReposResult, error) {
	const query = "WorkflowType = '" + api.GitRepoWorkflowType + "' AND ExecutionStatus = 'Running'"
	res := api.NotifyGitReposResult{}
	var token []byte
	for {
		page, err := a.Temporal.ListWorkflow(ctx, listRequest(query, token))
		if err != nil {
			return res, err
		}
		for _, e := range page.Executions {
			err := a.Temporal.SignalWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", api.SignalSync, nil)
			var nf *serviceerror.NotFound
			if err != nil && !errors.As(err, &nf) {
				return res, err
			}
			res.Notified++
		}
		if token = page.NextPageToken; len(token) == 0 {
			return res, nil
		}
	}
}

func listRequest(query string, token []byte) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000}
}

func decodePayload(p *commonpb.Payload, v any) error {
	return converter.GetDefaultDataConverter().FromPayload(p, v)
}
