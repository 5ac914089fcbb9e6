// Package visibility walks the workflows a Temporal visibility query finds, a page at a time.
package visibility

import (
	"context"

	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// Each calls fn for every workflow execution query finds, pageSize at a time (0: the server's default),
// and stops at the first error.
func Each(ctx context.Context, c client.Client, query string, pageSize int32, fn func(*workflowpb.WorkflowExecutionInfo) error) error {
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: pageSize})
		if err != nil {
			return err
		}
		for _, e := range page.Executions {
			if err := fn(e); err != nil {
				return err
			}
		}
		if token = page.NextPageToken; len(token) == 0 {
			return nil
		}
	}
}
