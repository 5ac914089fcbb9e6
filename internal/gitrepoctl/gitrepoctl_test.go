package gitrepoctl

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/api"
)

// describer answers DescribeWorkflowExecution; other methods panic through the nil embedded client.
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

func run(managedBy string) *workflowpb.WorkflowExecutionInfo {
	info := &workflowpb.WorkflowExecutionInfo{TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}
	if managedBy != "" {
		p, _ := converter.GetDefaultDataConverter().ToPayload(managedBy)
		info.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{api.SearchAttrManagedBy: p}}
	}
	return info
}

// One source of truth at a time: the CLI may not change a GitRepo its object in a management cluster
// declares, and the controller does not take over one the CLI applied. Either may start a new one, and
// each changes its own.
func TestEachSideChangesOnlyTheGitReposItOwns(t *testing.T) {
	c := describer{runs: map[string]*workflowpb.WorkflowExecutionInfo{
		"gitrepo/team-a/object": run(api.ManagedByController),
		"gitrepo/team-a/cli":    run(""),
	}}
	ctx := context.Background()
	object, cli, fresh := api.KeyOf("team-a", "object"), api.KeyOf("team-a", "cli"), api.KeyOf("team-a", "new")

	require.NoError(t, MayApply(ctx, c, "flotilla", object, false, api.ManagedByController))
	require.NoError(t, MayApply(ctx, c, "flotilla", cli, false, ""))
	require.NoError(t, MayApply(ctx, c, "flotilla", fresh, false, ""))
	require.NoError(t, MayApply(ctx, c, "flotilla", fresh, false, api.ManagedByController))

	require.EqualError(t, MayApply(ctx, c, "flotilla", object, false, ""),
		`gitrepo "team-a/object" is managed by its GitRepo object team-a/object in the management cluster (flotilla-controller): `+
			`change or delete that object (kubectl -n team-a edit gitrepo object), not the workflow behind it`)
	require.EqualError(t, Steer(ctx, c, "flotilla", object, ""), MayApply(ctx, c, "flotilla", object, false, "").Error())
	require.EqualError(t, MayApply(ctx, c, "flotilla", cli, false, api.ManagedByController),
		`gitrepo "team-a/cli" was applied with flotilla apply and runs without a GitRepo object: delete it there `+
			`(flotilla delete -n team-a cli) and this object takes it over once it has ended`)
	require.NoError(t, Steer(ctx, c, "flotilla", cli, ""))
}

// GitRepo names are shared by the installations on a namespace: a command of one never reads or steers
// the other's GitRepo, and `apply` may take a name only once the other's GitRepo has ended.
func TestACommandLeavesAnotherInstallationsGitRepoAlone(t *testing.T) {
	c := describer{runs: map[string]*workflowpb.WorkflowExecutionInfo{
		"gitrepo/mine":    {TaskQueue: "flotilla-b", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/theirs":  {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/deleted": {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED},
	}}
	ctx := context.Background()

	require.NoError(t, Own(ctx, c, "flotilla-b", api.KeyOf("", "mine")))
	require.NoError(t, Own(ctx, c, "flotilla-b", api.KeyOf("", "new")), "a GitRepo that never ran is the command's own call to report")
	require.EqualError(t, Own(ctx, c, "flotilla-b", api.KeyOf("", "theirs")),
		`gitrepo "theirs" belongs to the Flotilla installation on task queue "flotilla", not to this one ("flotilla-b"): `+
			`installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue flotilla for that one)`)
	require.Error(t, Own(ctx, c, "flotilla-b", api.KeyOf("", "deleted")), "an ended GitRepo's status is still the other installation's")

	require.NoError(t, MayApply(ctx, c, "flotilla-b", api.KeyOf("", "mine"), false, ""))
	require.NoError(t, MayApply(ctx, c, "flotilla-b", api.KeyOf("", "new"), false, ""))
	require.NoError(t, MayApply(ctx, c, "flotilla-b", api.KeyOf("", "deleted"), false, ""), "an ended GitRepo's name is free again")
	var other *OtherInstallationError
	require.ErrorAs(t, MayApply(ctx, c, "flotilla-b", api.KeyOf("", "theirs"), false, ""), &other)
}

// The check is by key: the GitRepo "theirs" of workspace team-a is not the fleet-default "theirs" of
// another installation, and is named with its namespace when it is another installation's.
func TestTheInstallationCheckIsByNamespaceAndName(t *testing.T) {
	c := describer{runs: map[string]*workflowpb.WorkflowExecutionInfo{
		"gitrepo/theirs":        {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/team-a/theirs": {TaskQueue: "flotilla-b", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
		"gitrepo/team-b/theirs": {TaskQueue: "flotilla", Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING},
	}}
	ctx := context.Background()
	require.NoError(t, Own(ctx, c, "flotilla-b", api.KeyOf("team-a", "theirs")))
	require.NoError(t, MayApply(ctx, c, "flotilla-b", api.KeyOf("team-c", "theirs"), false, ""))
	require.EqualError(t, Own(ctx, c, "flotilla-b", api.KeyOf("team-b", "theirs")),
		`gitrepo "team-b/theirs" belongs to the Flotilla installation on task queue "flotilla", not to this one ("flotilla-b"): `+
			`installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue flotilla for that one)`)
}
