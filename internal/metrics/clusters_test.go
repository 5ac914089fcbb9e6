package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
)

type fakeLister struct {
	query string
	execs []*workflowpb.WorkflowExecutionInfo
}

func (f *fakeLister) ListWorkflow(_ context.Context, r *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.query = r.Query
	return &workflowservice.ListWorkflowExecutionsResponse{Executions: f.execs}, nil
}

func clusterRun(key api.GitRepoKey, cluster, state string) *workflowpb.WorkflowExecutionInfo {
	e := &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: key.ClusterWorkflowID(cluster)}}
	if state != "" {
		p, _ := converter.GetDefaultDataConverter().ToPayload(state)
		e.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{api.SearchAttrState: p}}
	}
	return e
}

// Each GitRepo's clusters are counted by state, the GitRepo named by the workflow ID (old runs lack
// FlotillaNamespace) and a cluster with no state yet as Unknown; only this installation's queue is read.
func TestClustersAreCountedByGitRepoAndState(t *testing.T) {
	web, db := api.KeyOf("", "web"), api.KeyOf("team-a", "db")
	l := &fakeLister{execs: []*workflowpb.WorkflowExecutionInfo{
		clusterRun(web, "a", api.StateReady), clusterRun(web, "b", api.StateReady), clusterRun(web, "c", api.StateErrApplied),
		clusterRun(db, "a", ""),
		{Execution: &commonpb.WorkflowExecution{WorkflowId: "not-a-cluster-workflow"}},
	}}
	r := New()
	require.NoError(t, r.clusters.count(context.Background(), l, "flotilla-prod"))
	require.Contains(t, l.query, "TaskQueue = 'flotilla-prod'")

	got := map[clusterKey]float64{}
	ch := make(chan prometheus.Metric, 10)
	r.clusters.Collect(ch)
	close(ch)
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		got[clusterKey{labelOf(&d, "gitrepo"), labelOf(&d, "namespace"), labelOf(&d, "state")}] = d.GetGauge().GetValue()
	}
	require.Equal(t, map[clusterKey]float64{
		{"web", api.DefaultNamespace, api.StateReady}:      2,
		{"web", api.DefaultNamespace, api.StateErrApplied}: 1,
		{"db", "team-a", StateUnknown}:                     1,
	}, got)
}
