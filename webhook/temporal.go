package webhook

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
)

// TemporalClient is the part of client.Client the webhook uses.
type TemporalClient interface {
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	QueryWorkflow(ctx context.Context, workflowID string, runID string, queryType string, args ...any) (converter.EncodedValue, error)
	SignalWorkflow(ctx context.Context, workflowID string, runID string, signalName string, arg any) error
}

// Temporal finds the GitRepos of the installation on TaskQueue through Temporal visibility and syncs them
// with the `sync` signal. Another installation's GitRepos on the same namespace are not its to sync.
type Temporal struct {
	Client    TemporalClient
	TaskQueue string
}

const (
	queryTimeout  = 5 * time.Second
	queryParallel = 8
)

// refs is the part of the `status` query answer (api.GitRepoStatus) that says which ref a GitRepo follows.
type refs struct {
	Repo     string `json:"repo"`
	Branch   string `json:"branch"`
	Revision string `json:"revision"`
}

// List filters on the FlotillaRepo search attribute (the spec's repo URL, set when the run starts), then
// asks each candidate which ref it follows: the status query answers from the live spec, which a `spec`
// signal may have changed since. It sees the GitRepos of every workspace; the workflow ID says whose each
// is (FlotillaNamespace is missing on runs started before workspaces).
func (t Temporal) List(ctx context.Context, matches func(repo string) bool) ([]GitRepo, error) {
	var found []GitRepo
	err := visibility.Each(ctx, t.Client, api.RunningGitReposQuery(t.TaskQueue), 1000, func(e *workflowpb.WorkflowExecutionInfo) error {
		key, isGitRepo := api.ParseGitRepoWorkflowID(e.GetExecution().GetWorkflowId())
		if !isGitRepo {
			return nil
		}
		if repo := visibility.Keyword(e, api.SearchAttrRepo); matches(repo) {
			found = append(found, GitRepo{Namespace: key.PayloadNamespace(), Name: key.Name, Repo: repo})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing running GitRepos: %w", err)
	}
	t.readRefs(ctx, found)
	return found, nil
}

func (t Temporal) readRefs(ctx context.Context, repos []GitRepo) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, queryParallel)
	for i := range repos {
		wg.Add(1)
		slots <- struct{}{}
		go func(g *GitRepo) {
			defer func() { <-slots; wg.Done() }()
			r, err := t.status(ctx, g.Key())
			if err != nil {
				g.RefUnknown = true
				return
			}
			if r.Repo != "" {
				g.Repo = r.Repo
			}
			g.Branch, g.Revision = r.Branch, r.Revision
			// Neither means the repository's HEAD. Such a GitRepo is synced by any push, tags included, as
			// Fleet does for GitRepos without a branch and as docs/guide/metrics-and-webhooks.md says; Follows could narrow that to
			// a push of the default branch the payload names, which would only spare an ls-remote.
			g.RefUnknown = r.Branch == "" && r.Revision == ""
		}(&repos[i])
	}
	wg.Wait()
}

func (t Temporal) status(ctx context.Context, key api.GitRepoKey) (refs, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	var r refs
	v, err := t.Client.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatus)
	if err != nil {
		return r, err
	}
	return r, v.Get(&r)
}

// Sync sends the `sync` signal, which polls at once.
func (t Temporal) Sync(ctx context.Context, key api.GitRepoKey) error {
	err := t.Client.SignalWorkflow(ctx, key.WorkflowID(), "", api.SignalSync, nil)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return fmt.Errorf("gitrepo %q: %w", key, ErrNotRunning)
	}
	if err != nil {
		return fmt.Errorf("gitrepo %q: signal %s: %w", key, api.SignalSync, err)
	}
	return nil
}
