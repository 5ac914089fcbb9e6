package activities

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
)

// fakeVisibility answers a visibility query with pages of workflows, each a workflow ID and the value of its
// FlotillaCluster search attribute, and records queries and signals. The methods the activities do not
// call panic through the nil embedded client.
type fakeVisibility struct {
	client.Client
	pages   [][][2]string
	ended   map[string]bool // signalling these answers NotFound
	queries []string
	signals []string
}

func (v *fakeVisibility) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	v.queries = append(v.queries, req.GetQuery())
	page := 0
	if len(req.GetNextPageToken()) > 0 {
		page = int(req.GetNextPageToken()[0])
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, w := range v.pages[page] {
		cluster, err := converter.GetDefaultDataConverter().ToPayload(w[1])
		if err != nil {
			return nil, err
		}
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution:        &commonpb.WorkflowExecution{WorkflowId: w[0]},
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{api.SearchAttrCluster: cluster}},
		})
	}
	if page+1 < len(v.pages) {
		resp.NextPageToken = []byte{byte(page + 1)}
	}
	return resp, nil
}

func (v *fakeVisibility) SignalWorkflow(_ context.Context, id, _, signal string, _ any) error {
	if v.ended[id] {
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	v.signals = append(v.signals, id+" "+signal)
	return nil
}

// A GitRepo's cluster workflows are every page's, sorted, found by the GitRepo's search attribute among
// the workflows of this worker's installation (its task queue).
func TestListClusterWorkflowsReadsEveryPage(t *testing.T) {
	v := &fakeVisibility{pages: [][][2]string{
		{{"gitrepo/shop/cluster/edge-2", "edge-2"}, {"gitrepo/shop/cluster/edge-3", "edge-3"}},
		{{"gitrepo/shop/cluster/edge-1", "edge-1"}},
	}}
	res, err := (&Activities{Temporal: v, TaskQueue: "flotilla-staging"}).ListClusterWorkflows(context.Background(), api.ListClusterWorkflowsInput{GitRepo: "shop"})
	require.NoError(t, err)
	require.Equal(t, []string{"edge-1", "edge-2", "edge-3"}, res.Clusters)
	require.Equal(t, []string{
		"WorkflowType = 'ClusterWorkflow' AND FlotillaGitRepo = 'shop' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla-staging'",
		"WorkflowType = 'ClusterWorkflow' AND FlotillaGitRepo = 'shop' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla-staging'",
	}, v.queries)
}

// An inventory change reaches every running GitRepo of the installation on every page; one that ended
// since it was listed is counted and skipped, not an error that would sync the others again on retry.
func TestNotifyGitReposSyncsEveryRunningGitRepo(t *testing.T) {
	v := &fakeVisibility{
		pages: [][][2]string{{{"gitrepo/shop", ""}, {"gitrepo/gone", ""}}, {{"gitrepo/infra", ""}}},
		ended: map[string]bool{"gitrepo/gone": true},
	}
	res, err := (&Activities{Temporal: v, TaskQueue: "flotilla-staging"}).NotifyGitRepos(context.Background(), api.NotifyGitReposInput{})
	require.NoError(t, err)
	require.Equal(t, 3, res.Notified)
	require.Equal(t, []string{"gitrepo/shop sync", "gitrepo/infra sync"}, v.signals)
	require.Equal(t, "WorkflowType = 'GitRepoWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla-staging'", v.queries[0])
}

// A fleet-default GitRepo's query also finds the cluster workflows of GitRepos of its name in other
// workspaces (those started before workspaces have no FlotillaNamespace to tell them apart): their IDs do.
// Another workspace's GitRepo narrows the query by FlotillaNamespace.
func TestListClusterWorkflowsKeepsTheGitReposOwnWorkspace(t *testing.T) {
	pages := [][][2]string{{
		{"gitrepo/shop/cluster/edge-1", "edge-1"},
		{"gitrepo/team-a/shop/cluster/edge-2", "edge-2"},
		{"gitrepo/team-b/shop/cluster/edge-3", "edge-3"},
	}}
	v := &fakeVisibility{pages: pages}
	res, err := (&Activities{Temporal: v, TaskQueue: "flotilla"}).ListClusterWorkflows(context.Background(), api.ListClusterWorkflowsInput{GitRepo: "shop"})
	require.NoError(t, err)
	require.Equal(t, []string{"edge-1"}, res.Clusters)

	v = &fakeVisibility{pages: pages}
	res, err = (&Activities{Temporal: v, TaskQueue: "flotilla"}).ListClusterWorkflows(context.Background(),
		api.ListClusterWorkflowsInput{GitRepo: "shop", Namespace: "team-a"})
	require.NoError(t, err)
	require.Equal(t, []string{"edge-2"}, res.Clusters)
	require.Equal(t, "WorkflowType = 'ClusterWorkflow' AND FlotillaGitRepo = 'shop' AND FlotillaNamespace = 'team-a' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'",
		v.queries[0])
}
