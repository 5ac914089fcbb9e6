package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/activity"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// leavingCheckEvery is how often LeavingHolders looks again while every leaving cluster is still held.
const leavingCheckEvery = time.Second

// LeavingHolders lists what still holds each leaving cluster (ADR 29): GitRepos whose status targets it or
// shows its removal, and cluster workflows on it. It looks again every second and returns as soon as one
// cluster is held by nothing, or after in.Within with what it saw last. A cluster workflow whose GitRepo no
// longer runs (deleted and given up, or terminated) has no one to remove it: it is told to, here.
func (a *Activities) LeavingHolders(ctx context.Context, in api.LeavingHoldersInput) (api.LeavingHoldersResult, error) {
	for _, n := range in.Nudge {
		a.nudgeClusterWorkflows(ctx, n)
	}
	deadline := time.Now().Add(in.Within)
	told := map[string]bool{}
	for {
		res := api.LeavingHoldersResult{Clusters: make([]api.LeavingHolders, 0, len(in.Clusters))}
		statuses, err := a.gitRepoStatuses(ctx)
		free := false
		for _, l := range in.Clusters {
			lh := api.LeavingHolders{Name: l.Name, Namespace: l.Namespace, Generation: l.Generation, Holders: []api.Holder{}}
			if err != nil {
				lh.Error = err.Error()
			} else if lh.Holders, err = a.holders(ctx, l, statuses, told); err != nil {
				lh.Error, err = err.Error(), nil
			}
			free = free || lh.Error == "" && len(lh.Holders) == 0
			res.Clusters = append(res.Clusters, lh)
		}
		activity.RecordHeartbeat(ctx)
		if free || !time.Now().Add(leavingCheckEvery).Before(deadline) {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(leavingCheckEvery):
		}
	}
}

// gitRepoStatus is one running GitRepo of this installation: its status, or why it could not be read.
type gitRepoStatus struct {
	key    api.GitRepoKey
	status api.GitRepoStatus
	err    error
}

func (a *Activities) gitRepoStatuses(ctx context.Context) ([]gitRepoStatus, error) {
	var out []gitRepoStatus
	err := a.eachWorkflow(ctx, api.RunningGitReposQuery(a.TaskQueue), func(e *workflowpb.WorkflowExecutionInfo) error {
		key, ok := api.ParseGitRepoWorkflowID(e.GetExecution().GetWorkflowId())
		if !ok {
			return nil
		}
		// One query per GitRepo: with thousands of them a pass outlasts the heartbeat timeout unless each
		// counts (the SDK throttles what it sends).
		activity.RecordHeartbeat(ctx)
		gs := gitRepoStatus{key: key}
		v, err := a.Temporal.QueryWorkflow(ctx, key.WorkflowID(), "", api.QueryStatus)
		var nf *serviceerror.NotFound
		switch {
		case errors.As(err, &nf):
			return nil // ended meanwhile
		case err != nil:
			gs.err = err
		default:
			gs.err = v.Get(&gs.status)
		}
		out = append(out, gs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing GitRepos: %w", err)
	}
	return out, nil
}

// holders lists what holds one leaving cluster, given the statuses of the running GitRepos.
func (a *Activities) holders(ctx context.Context, l inventory.Leaving, statuses []gitRepoStatus, told map[string]bool) ([]api.Holder, error) {
	ws := fleet.Workspace(l.Namespace)
	running := map[string]bool{}
	hs := []api.Holder{}
	for _, gs := range statuses {
		if fleet.Workspace(gs.key.Namespace) != ws {
			continue // a GitRepo of another workspace never targets this cluster
		}
		name := gs.key.String()
		running[name] = true
		if gs.err != nil {
			hs = append(hs, api.Holder{GitRepo: name, Reason: gs.err.Error()})
			continue
		}
		if reason, holds := holdsCluster(gs.status, l.Name, l.Generation); holds {
			hs = append(hs, api.Holder{GitRepo: name, Reason: reason})
		}
	}
	err := a.eachWorkflow(ctx, api.RunningWorkflowsOnClusterQuery(a.TaskQueue, ws, l.Name), func(e *workflowpb.WorkflowExecutionInfo) error {
		id := e.GetExecution().GetWorkflowId()
		key, cluster, ok := api.ParseClusterWorkflowID(id)
		if !ok || cluster != l.Name || fleet.Workspace(key.Namespace) != ws {
			return nil // the same cluster name in another workspace
		}
		gitRepo := key.String()
		for _, h := range hs {
			if h.GitRepo == gitRepo {
				return nil // said already
			}
		}
		if running[gitRepo] {
			hs = append(hs, api.Holder{GitRepo: gitRepo, Reason: "its workflow on the cluster is ending"})
			return nil
		}
		if !told[id] {
			req := api.RemoveRequest{Forget: l.KeepWorkloads}
			if err := a.Temporal.SignalWorkflow(ctx, id, "", api.SignalRemove, req); err != nil {
				var nf *serviceerror.NotFound
				if errors.As(err, &nf) {
					return nil // ended meanwhile
				}
				return fmt.Errorf("workflow %s: %w", id, err)
			}
			told[id] = true
		}
		hs = append(hs, api.Holder{GitRepo: gitRepo, Reason: "the GitRepo no longer runs; its workflow on the cluster was told to remove itself"})
		return nil
	})
	if err != nil {
		return hs, fmt.Errorf("listing the workflows on cluster %q: %w", fleet.DisplayName(l.Namespace, l.Name), err)
	}
	return hs, nil
}

// nudgeClusterWorkflows has the workflows on a leaving cluster check now: a failing uninstall retries at
// once. Best effort: a workflow that ends meanwhile needs no nudge.
func (a *Activities) nudgeClusterWorkflows(ctx context.Context, c inventory.RemoveInput) {
	ws := fleet.Workspace(c.Namespace)
	_ = a.eachWorkflow(ctx, api.RunningWorkflowsOnClusterQuery(a.TaskQueue, ws, c.Name), func(e *workflowpb.WorkflowExecutionInfo) error {
		if key, cluster, ok := api.ParseClusterWorkflowID(e.GetExecution().GetWorkflowId()); !ok || cluster != c.Name ||
			fleet.Workspace(key.Namespace) != ws {
			return nil
		}
		_ = a.Temporal.SignalWorkflow(ctx, e.GetExecution().GetWorkflowId(), "", api.SignalCheck, nil)
		return nil
	})
}

// holdsCluster judges one GitRepo's status: does it still target, or still uninstall from, a cluster that
// started leaving at inventory generation since? A GitRepo that has not read that generation yet may still
// deliver to it, unless it cannot poll at all (its status has an error) and has nothing there. It is pure.
func holdsCluster(st api.GitRepoStatus, cluster string, since int64) (string, bool) {
	for _, c := range st.Removing {
		if c.Name == cluster {
			return fmt.Sprintf("%s: %s", c.State, c.Message), true
		}
	}
	for _, c := range st.Clusters {
		if c.Name == cluster {
			if st.Error != "" {
				return "still targets it: it cannot read the inventory's change: " + st.Error, true
			}
			return "still targets it: it has not planned since the cluster started leaving", true
		}
	}
	if st.InventoryGeneration < since && st.Error == "" {
		return "has not read the inventory since the cluster started leaving", true
	}
	return "", false
}
