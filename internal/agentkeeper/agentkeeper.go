// Package agentkeeper starts and signals the AgentWorkflows that keep the agents of pull-mode clusters
// (ADR 23): `flotilla cluster add` after each registration, and the worker at start for every agent-mode
// cluster of its inventory, so registrations made before an upgrade are kept too.
package agentkeeper

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Ensure has the AgentWorkflow of a cluster check now, starting it first when none runs: one call, so that
// two callers at once (a worker starting while `cluster add` runs) never start two.
func Ensure(ctx context.Context, c client.Client, taskQueue, workspace, cluster string) error {
	ws := fleet.Workspace(workspace)
	id := api.AgentWorkflowID(taskQueue, ws, cluster)
	_, err := c.SignalWithStartWorkflow(ctx, id, api.SignalCheck, nil, client.StartWorkflowOptions{
		ID:            id,
		TaskQueue:     taskQueue,
		StaticSummary: "Flotilla keeps the agent of cluster " + fleet.DisplayName(ws, cluster),
	}, api.AgentWorkflowType, api.AgentWorkflowInput{Workspace: ws, Cluster: cluster})
	if err != nil {
		return fmt.Errorf("cluster %q: starting the workflow that keeps its agent: %w", fleet.DisplayName(ws, cluster), err)
	}
	return nil
}

// Check has the AgentWorkflow of a cluster check now, if one runs: a cluster that left agent mode ends it.
func Check(ctx context.Context, c client.Client, taskQueue, workspace, cluster string) error {
	err := c.SignalWorkflow(ctx, api.AgentWorkflowID(taskQueue, workspace, cluster), "", api.SignalCheck, nil)
	var nf *serviceerror.NotFound
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("cluster %q: signalling the workflow that keeps its agent: %w", fleet.DisplayName(workspace, cluster), err)
	}
	return nil
}

// EnsureAll is Ensure for every agent-mode cluster of inv: it tries each and returns their failures, joined.
func EnsureAll(ctx context.Context, c client.Client, taskQueue string, inv inventory.Inventory) (kept int, err error) {
	for _, cl := range inv.Clusters {
		if cl.Spec.Agent == nil {
			continue
		}
		if e := Ensure(ctx, c, taskQueue, cl.Metadata.Namespace, cl.Metadata.Name); e != nil {
			err = errors.Join(err, e)
			continue
		}
		kept++
	}
	return kept, err
}
