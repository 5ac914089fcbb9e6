package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
)

// describer answers DescribeWorkflowExecution for GitRepo workflows; other methods panic through the nil
// embedded client.
type describer struct {
	client.Client
	runs map[string]*workflowpb.WorkflowExecutionInfo
}

func (d describer) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	info, ok := d.runs[id]
	if !ok {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}, nil
}

// GitRepo names are shared by the installations on a namespace: a command of one never reads or steers
// the other's GitRepo, and `apply` may take a name only once the other's GitRepo has ended.
func TestACommandLeavesAnotherInstallationsGitRepoAlone(t *testing.T) {
	c := describer{runs: map[string]*workflowpb.WorkflowExecutionInfo{
		"gitrepo/mine":    {TaskQueue: "flotilla-b", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/theirs":  {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/deleted": {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
	}}
	g := &globals{taskQueue: "flotilla-b"}
	ctx := context.Background()

	require.NoError(t, g.ownGitRepo(ctx, c, api.KeyOf("", "mine")))
	require.NoError(t, g.ownGitRepo(ctx, c, api.KeyOf("", "new")), "a GitRepo that never ran is the command's own call to report")
	require.EqualError(t, g.ownGitRepo(ctx, c, api.KeyOf("", "theirs")),
		`gitrepo "theirs" belongs to the Flotilla installation on task queue "flotilla", not to this one ("flotilla-b"): `+
			`installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue flotilla for that one)`)
	require.Error(t, g.ownGitRepo(ctx, c, api.KeyOf("", "deleted")), "an ended GitRepo's status is still the other installation's")

	require.NoError(t, g.mayApplyGitRepo(ctx, c, api.KeyOf("", "mine"), false))
	require.NoError(t, g.mayApplyGitRepo(ctx, c, api.KeyOf("", "new"), false))
	require.NoError(t, g.mayApplyGitRepo(ctx, c, api.KeyOf("", "deleted"), false), "an ended GitRepo's name is free again")
	var other *otherInstallationError
	require.ErrorAs(t, g.mayApplyGitRepo(ctx, c, api.KeyOf("", "theirs"), false), &other)
}

// The check is by key: the GitRepo "theirs" of workspace team-a is not the fleet-default "theirs" of
// another installation, and is named with its namespace when it is another installation's.
func TestTheInstallationCheckIsByNamespaceAndName(t *testing.T) {
	c := describer{runs: map[string]*workflowpb.WorkflowExecutionInfo{
		"gitrepo/theirs":        {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/team-a/theirs": {TaskQueue: "flotilla-b", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/team-b/theirs": {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
	}}
	g := &globals{taskQueue: "flotilla-b"}
	ctx := context.Background()
	require.NoError(t, g.ownGitRepo(ctx, c, api.KeyOf("team-a", "theirs")))
	require.NoError(t, g.mayApplyGitRepo(ctx, c, api.KeyOf("team-c", "theirs"), false))
	require.EqualError(t, g.ownGitRepo(ctx, c, api.KeyOf("team-b", "theirs")),
		`gitrepo "team-b/theirs" belongs to the Flotilla installation on task queue "flotilla", not to this one ("flotilla-b"): `+
			`installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue flotilla for that one)`)
}
