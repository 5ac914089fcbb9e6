package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// diffAgentWait is how long a pull-mode cluster's diff waits for its agent to pick the task up: longer
// than a check waits (agentPresenceMax), since a person waits for the answer and an agent may be busy
// applying.
const diffAgentWait = 30 * time.Second

// diffTimeout bounds one cluster's diff: renders and dry runs of all its bundles.
const diffTimeout = 5 * time.Minute

// DiffWorkflow asks each target's cluster what the next apply would change (api.ActivityDiff), all at
// once, and returns the answers in the targets' order; a cluster that cannot answer has its error, and the
// others their diffs. It applies nothing and keeps no state: `flotilla diff` starts one per page of
// targets (api.DiffPageSize), so its result stays small.
func DiffWorkflow(ctx workflow.Context, in api.DiffWorkflowInput) (api.DiffResult, error) {
	res := api.DiffResult{Commit: in.Commit, Clusters: make([]api.ClusterDiff, len(in.Targets))}
	done := 0
	for i, t := range in.Targets {
		workflow.Go(ctx, func(gctx workflow.Context) {
			res.Clusters[i] = diffCluster(gctx, t)
			done++
		})
	}
	if err := workflow.Await(ctx, func() bool { return done == len(in.Targets) }); err != nil {
		return api.DiffResult{}, err
	}
	return res, nil
}

func diffCluster(ctx workflow.Context, dt api.DiffTarget) api.ClusterDiff {
	t := dt.Target
	failed := func(err error) api.ClusterDiff {
		msg := errorMessage(err)
		if agentAway(err) {
			msg = fmt.Sprintf("cluster %q: agent offline: no flotilla-agent picked up the diff within %s", t.Cluster, diffAgentWait)
		}
		return api.ClusterDiff{Cluster: t.Cluster, Commit: t.Commit, Error: msg}
	}
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: diffTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(2),
		Summary:             "diff " + t.Cluster,
	}
	in := api.DiffClusterInput{Target: t}
	if t.Agent {
		prepared, err := prepareFor(ctx, t, dt.Generation)
		if err != nil {
			return failed(err)
		}
		in.Prepared, in.Generation, in.Grant = prepared.Bundles, dt.Generation, prepared.Grant
		opts.TaskQueue = api.AgentTaskQueue(workflow.GetInfo(ctx).TaskQueueName, t.Namespace, t.Cluster)
		opts.ScheduleToStartTimeout = diffAgentWait
	}
	var out api.ClusterDiff
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), api.ActivityDiff, in).Get(ctx, &out); err != nil {
		return failed(err)
	}
	return out
}
