// Package visibility walks the workflows a Temporal visibility query finds, a page at a time, and reads
// their keyword search attributes.
package visibility

import (
	"context"

	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
)

// Lister is the part of the SDK's client.Client a walk needs.
type Lister interface {
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// Each calls fn for every workflow execution query finds, pageSize at a time (0: the server's default),
// and stops at the first error.
func Each(ctx context.Context, c Lister, query string, pageSize int32, fn func(*workflowpb.WorkflowExecutionInfo) error) error {
	var token []byte
	for {
		page, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: pageSize})
		if err != nil {
			return err
		}
		for _, e := range page.GetExecutions() {
			if err := fn(e); err != nil {
				return err
			}
		}
		if token = page.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}

// Keyword is the value of a keyword search attribute of e, or "" when it has none.
func Keyword(e *workflowpb.WorkflowExecutionInfo, attr string) string {
	return keyword(e.GetSearchAttributes(), attr)
}

func keyword(sa *commonpb.SearchAttributes, attr string) string {
	var s string
	if p := sa.GetIndexedFields()[attr]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}
