package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// ContentWorkflow serves chunks of packages to an agent (ADR 22): the agent dials out to Temporal only, so
// what it applies reaches it as the result of a short workflow that any worker of the installation can
// run, at most api.ContentChunkSize at a time.
func ContentWorkflow(ctx workflow.Context, in api.ReadContentInput) ([]byte, error) {
	// The heartbeat timeout, not the start-to-close one, is what an agent waits when the worker reading
	// its package dies: two minutes of a stalled rollout before this had one.
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: observeTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(3),
		Summary:             fmt.Sprintf("read %d chunk(s) for %s", len(in.Chunks), in.Target.Cluster),
	})
	var data []byte
	err := workflow.ExecuteActivity(ctx, api.ActivityReadContent, in).Get(ctx, &data)
	return data, err
}
