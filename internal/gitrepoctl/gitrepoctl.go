// Package gitrepoctl is what changes a GitRepo's workflow or the inventory from outside Temporal, shared by
// the flotilla CLI and flotilla-controller so that both start, hand over and check GitRepos the same way:
// the installation a name belongs to (ADR 13), a GitRepo and a HelmOp never sharing a name (ADR 21), and
// who owns a GitRepo's spec, the CLI or a GitRepo object in a management cluster (ADR 38).
package gitrepoctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/visibility"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// OtherInstallationError is a GitRepo name taken by the installation on another task queue.
type OtherInstallationError struct {
	Key          api.GitRepoKey
	Theirs, Ours string
}

func (e *OtherInstallationError) Error() string {
	return fmt.Sprintf("gitrepo %q belongs to the Flotilla installation on task queue %q, not to this one (%q): "+
		"installations sharing a Temporal namespace need distinct GitRepo names (use --task-queue %s for that one)",
		e.Key.String(), e.Theirs, e.Ours, e.Theirs)
}

// ManagedElsewhereError is a change refused because another side owns the GitRepo's spec: the CLI may not
// change what a GitRepo object in the management cluster declares, nor the controller take over a GitRepo
// the CLI applied.
type ManagedElsewhereError struct {
	Key api.GitRepoKey
	// Kind is GitRepo or HelmOp.
	Kind string
	// By owns it: api.ManagedByController, or "" for the CLI.
	By string
}

func (e *ManagedElsewhereError) Error() string {
	if e.By == api.ManagedByController {
		return fmt.Sprintf("gitrepo %q is managed by its %s object %s/%s in the management cluster (flotilla-controller): "+
			"change or delete that object (kubectl -n %s edit %s %s), not the workflow behind it",
			e.Key.String(), e.Kind, fleet.Workspace(e.Key.Namespace), e.Key.Name, fleet.Workspace(e.Key.Namespace), strings.ToLower(e.Kind), e.Key.Name)
	}
	return fmt.Sprintf("gitrepo %q was applied with flotilla apply and runs without a %s object: delete it there "+
		"(flotilla delete -n %s %s) and this object takes it over once it has ended", e.Key.String(), e.Kind, fleet.Workspace(e.Key.Namespace), e.Key.Name)
}

// NameTakenError is a GitRepo applied under the name of a running HelmOp, or the reverse.
type NameTakenError struct {
	Key api.GitRepoKey
	// Kind is what runs under the name.
	Kind string
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a %s named %q runs in this workspace; GitRepos and HelmOps share names: delete it first or choose another name",
		e.Kind, e.Key.Name)
}

// LatestRun describes the GitRepo's latest run; nil when it never ran.
func LatestRun(ctx context.Context, c client.Client, key api.GitRepoKey) (*workflowpb.WorkflowExecutionInfo, error) {
	d, err := c.DescribeWorkflowExecution(ctx, key.WorkflowID(), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitrepo %q: %w", key, err)
	}
	return d.GetWorkflowExecutionInfo(), nil
}

// ManagedBy is who owns the spec of the run info describes (SearchAttrManagedBy).
func ManagedBy(info *workflowpb.WorkflowExecutionInfo) string {
	return visibility.Keyword(info, api.SearchAttrManagedBy)
}

// Own is nil when the GitRepo's latest run is on this installation's task queue, or when it never ran (the
// caller's own call then says it is not found).
func Own(ctx context.Context, c client.Client, taskQueue string, key api.GitRepoKey) error {
	info, err := LatestRun(ctx, c, key)
	if err != nil || info == nil || info.GetTaskQueue() == taskQueue {
		return err
	}
	return &OtherInstallationError{Key: key, Theirs: info.GetTaskQueue(), Ours: taskQueue}
}

// Steer is Own for a change of a running GitRepo's spec or state (pause, resume, delete) by `by`: refused
// when the other side owns it.
func Steer(ctx context.Context, c client.Client, taskQueue string, key api.GitRepoKey, by string) error {
	info, err := LatestRun(ctx, c, key)
	if err != nil || info == nil {
		return err
	}
	if info.GetTaskQueue() != taskQueue {
		return &OtherInstallationError{Key: key, Theirs: info.GetTaskQueue(), Ours: taskQueue}
	}
	if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING && ManagedBy(info) != by {
		return &ManagedElsewhereError{Key: key, Kind: kindOf(info), By: ManagedBy(info)}
	}
	return nil
}

func kindOf(info *workflowpb.WorkflowExecutionInfo) string {
	if strings.HasPrefix(visibility.Keyword(info, api.SearchAttrRepo), fleet.HelmOpRepoPrefix) {
		return fleet.KindHelmOp
	}
	return fleet.KindGitRepo
}

// MayApply is Own for an apply by `by`: a name another installation used is free again once that GitRepo
// has ended (deleted), and the next apply starts it here. Two installations applying one new name at the
// same moment can still meet in one workflow; ADR 13 says why that is left to the operators. A running
// GitRepo is never turned into a HelmOp of the same name, or the reverse: both run as gitrepo/<name> in
// their workspace, so they share names there (ADR 21). Nor is one the other side owns changed.
func MayApply(ctx context.Context, c client.Client, taskQueue string, key api.GitRepoKey, helmOp bool, by string) error {
	info, err := LatestRun(ctx, c, key)
	if err != nil || info == nil || info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return err
	}
	if info.GetTaskQueue() != taskQueue {
		return &OtherInstallationError{Key: key, Theirs: info.GetTaskQueue(), Ours: taskQueue}
	}
	if running := kindOf(info); (running == fleet.KindHelmOp) != helmOp {
		return &NameTakenError{Key: key, Kind: running}
	}
	if ManagedBy(info) != by {
		return &ManagedElsewhereError{Key: key, Kind: kindOf(info), By: ManagedBy(info)}
	}
	return nil
}

// Apply validates gr and starts its workflow on the installation's task queue, or hands a running one the
// new spec, for `by` (SearchAttrManagedBy). It answers "gitrepo" or "helmop", as kubectl names kinds.
func Apply(ctx context.Context, c client.Client, taskQueue string, gr fleet.GitRepo, by string) (string, error) {
	gr.APIVersion, gr.Kind = fleet.APIVersion, fleet.KindGitRepo
	if err := fleet.ValidateGitRepo(gr); err != nil {
		return "", err
	}
	if err := fleet.ValidateSyncWindowSelectors(gr.Spec.SyncWindows); err != nil {
		return "", fmt.Errorf("gitrepo %q: %w", gr.Metadata.Name, err)
	}
	key := api.KeyOf(gr.Metadata.Namespace, gr.Metadata.Name)
	if err := MayApply(ctx, c, taskQueue, key, gr.IsHelmOp(), by); err != nil {
		return "", err
	}
	// The workspace is the run's identity, given at start (GitRepoInput.Workspace); a running GitRepo
	// gets only the spec, whose namespace its own matches, since the ID says the namespace.
	kind, summary := "gitrepo", "GitRepo "+key.String()+" from "+gr.Spec.Repo
	if gr.IsHelmOp() {
		kind, summary = "helmop", "HelmOp "+key.String()+" of chart "+gr.Spec.HelmOp.Helm.Chart
	}
	opts := client.StartWorkflowOptions{TaskQueue: taskQueue, StaticSummary: summary, WorkflowTaskTimeout: api.GitRepoTaskTimeout}
	if by != "" {
		// Only a managed GitRepo carries the attribute, so the CLI's applies need nothing new of a server.
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(temporal.NewSearchAttributeKeyKeyword(api.SearchAttrManagedBy).ValueSet(by))
	}
	if _, err := c.SignalWithStartWorkflow(ctx, key.WorkflowID(), api.SignalSpec, gr, opts, api.GitRepoWorkflowType,
		api.GitRepoInput{GitRepo: gr, Workspace: key.PayloadNamespace()}); err != nil {
		return "", err
	}
	return kind, nil
}

// UpdateInventory runs a validated update on the installation's inventory workflow, starting it if needed.
func UpdateInventory(ctx context.Context, c client.Client, taskQueue, update string, arg any) (inventory.ChangeResult, error) {
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       api.InventoryWorkflowID(taskQueue),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		StaticSummary:            "Flotilla cluster inventory",
	}, api.InventoryWorkflowType, api.InventoryInput{})
	if err != nil {
		return inventory.ChangeResult{}, fmt.Errorf("starting the inventory: %w", err)
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   api.InventoryWorkflowID(taskQueue),
		UpdateName:   update,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return inventory.ChangeResult{}, err
	}
	var res inventory.ChangeResult
	if err := h.Get(ctx, &res); err != nil {
		return inventory.ChangeResult{}, err
	}
	return res, nil
}
