package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// ContentWorkflow serves one chunk of a package to an agent (ADR 22): the agent dials out to Temporal
// only, so what it applies reaches it as the result of a short workflow that any worker of the
// installation can run, at most api.ContentChunkSize at a time.
func ContentWorkflow(ctx workflow.Context, in api.ReadContentInput) ([]byte, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: observeTimeout,
		RetryPolicy:         retries(3),
		Summary:             "read " + in.Digest + " for bundle " + in.Bundle,
	})
	var data []byte
	err := workflow.ExecuteActivity(ctx, api.ActivityReadContent, in).Get(ctx, &data)
	return data, err
}
