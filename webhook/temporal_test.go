package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
)

// fakeTemporal answers visibility from pages of (workflow ID, FlotillaRepo), the status query from a map,
// and records signals.
type fakeTemporal struct {
	mu       sync.Mutex
	pages    [][][2]string
	statuses map[string]api.GitRepoStatus
	queryErr map[string]error
	queries  []string
	signals  []string
	queryStr string
}

func (f *fakeTemporal) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.queryStr = req.GetQuery()
	page := 0
	if len(req.GetNextPageToken()) > 0 {
		page = int(req.GetNextPageToken()[0])
	}
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, e := range f.pages[page] {
		p, err := converter.GetDefaultDataConverter().ToPayload(e[1])
		if err != nil {
			return nil, err
		}
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{
			Execution:        &commonpb.WorkflowExecution{WorkflowId: e[0]},
			SearchAttributes: &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{"FlotillaRepo": p}},
		})
	}
	if page+1 < len(f.pages) {
		resp.NextPageToken = []byte{byte(page + 1)}
	}
	return resp, nil
}

type jsonValue struct{ data []byte }

func (v jsonValue) HasValue() bool    { return true }
func (v jsonValue) Get(ptr any) error { return json.Unmarshal(v.data, ptr) }

func (f *fakeTemporal) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	f.mu.Lock()
	f.queries = append(f.queries, id)
	f.mu.Unlock()
	if err := f.queryErr[id]; err != nil {
		return nil, err
	}
	data, err := json.Marshal(f.statuses[id])
	return jsonValue{data}, err
}

func (f *fakeTemporal) SignalWorkflow(_ context.Context, id, _, signal string, _ any) error {
	if id == "gitrepo/gone" {
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	f.signals = append(f.signals, id+" "+signal)
	return nil
}

func TestTemporalListsRunningGitReposOfThePushedRepoWithTheirLiveBranch(t *testing.T) {
	f := &fakeTemporal{
		pages: [][][2]string{
			{{"gitrepo/apps", "https://github.com/org/apps"}, {"gitrepo/infra", "https://github.com/org/infra"}},
			{{"gitrepo/apps-dev", "git@github.com:org/apps.git"}, {"gitrepo/apps/cluster/a", "https://github.com/org/apps"},
				{"gitrepo/slow", "https://github.com/org/apps"}, {"gitrepo/head", "https://github.com/org/apps"}},
		},
		statuses: map[string]api.GitRepoStatus{
			"gitrepo/apps":     {Name: "apps", Repo: "https://github.com/org/apps", Branch: "main"},
			"gitrepo/apps-dev": {Name: "apps-dev", Repo: "git@github.com:org/apps.git", Branch: "dev"},
			"gitrepo/head":     {Name: "head", Repo: "https://github.com/org/apps"},
		},
		queryErr: map[string]error{"gitrepo/slow": context.DeadlineExceeded},
	}
	push := newRepoSet([]string{"https://github.com/org/apps.git"})
	got, err := Temporal{Client: f, TaskQueue: "flotilla"}.List(context.Background(), push.matches)
	require.NoError(t, err)
	require.Equal(t, "WorkflowType = 'GitRepoWorkflow' AND ExecutionStatus = 'Running' AND TaskQueue = 'flotilla'", f.queryStr,
		"only this installation's GitRepos")
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	require.Equal(t, []GitRepo{
		{Name: "apps", Repo: "https://github.com/org/apps", Branch: "main"},
		{Name: "apps-dev", Repo: "git@github.com:org/apps.git", Branch: "dev"},
		{Name: "head", Repo: "https://github.com/org/apps", RefUnknown: true},
		{Name: "slow", Repo: "https://github.com/org/apps", RefUnknown: true},
	}, got, "both pages read; other repos and cluster workflows left out; a failed query syncs anyway")
	require.NotContains(t, f.queries, "gitrepo/infra", "only GitRepos of the pushed repo are queried")
}

// A GitRepo of any workspace is found; the workflow ID says which, as runs started before workspaces lack
// FlotillaNamespace.
func TestTemporalListsTheGitReposOfEveryWorkspace(t *testing.T) {
	f := &fakeTemporal{
		pages: [][][2]string{{
			{"gitrepo/web", "https://github.com/org/apps"},
			{"gitrepo/team-a/web", "https://github.com/org/apps"},
			{"gitrepo/team-a/web/cluster/edge", "https://github.com/org/apps"},
			{"gitrepo/web/cluster/edge", "https://github.com/org/apps"},
		}},
		statuses: map[string]api.GitRepoStatus{
			"gitrepo/web":        {Name: "web", Repo: "https://github.com/org/apps", Branch: "main"},
			"gitrepo/team-a/web": {Name: "web", Repo: "https://github.com/org/apps", Branch: "dev", Namespace: "team-a"},
		},
	}
	push := newRepoSet([]string{"https://github.com/org/apps.git"})
	got, err := Temporal{Client: f, TaskQueue: "flotilla"}.List(context.Background(), push.matches)
	require.NoError(t, err)
	sort.Slice(got, func(i, j int) bool { return got[i].Key().Qualified() < got[j].Key().Qualified() })
	require.Equal(t, []GitRepo{
		{Name: "web", Repo: "https://github.com/org/apps", Branch: "main"},
		{Name: "web", Repo: "https://github.com/org/apps", Branch: "dev", Namespace: "team-a"},
	}, got, "each queried by its own ID; cluster workflows left out")
}

func TestTemporalSyncSignalsAndReportsAnEndedGitRepo(t *testing.T) {
	f := &fakeTemporal{}
	require.NoError(t, Temporal{Client: f}.Sync(context.Background(), api.KeyOf("", "apps")))
	require.NoError(t, Temporal{Client: f}.Sync(context.Background(), api.KeyOf("team-a", "apps")))
	require.Equal(t, []string{"gitrepo/apps sync", "gitrepo/team-a/apps sync"}, f.signals)
	err := Temporal{Client: f}.Sync(context.Background(), api.KeyOf("", "gone"))
	require.True(t, errors.Is(err, ErrNotRunning), "%v", err)
}
