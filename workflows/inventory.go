package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// InventoryWorkflow is the durable cluster inventory: clusters and groups change through validated updates,
// GitRepo plans read it through a query, and its memo lists the clusters in the Web UI.
func InventoryWorkflow(ctx workflow.Context, in api.InventoryInput) error {
	inv := inventory.Inventory{}
	carried, err := unpackInventory(in)
	if err != nil {
		return fmt.Errorf("inventory input: %w", err)
	}
	if carried != nil {
		inv = *carried
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryInventory, func() (inventory.Inventory, error) {
		return inv, nil
	}); err != nil {
		return err
	}
	// Every plan and every check whose cached inventory aged out asks for it; at 10,000 clusters packing it
	// again for each took a tenth of a second. Every change bumps the generation (the counts guard it).
	var packed struct {
		key    string
		answer api.PackedInventory
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryInventoryPacked, func() (api.PackedInventory, error) {
		key := fmt.Sprint(inv.Generation, len(inv.Clusters), len(inv.Groups), len(inv.Leaving))
		if packed.key == key {
			return packed.answer, nil
		}
		answer, err := packInventory(inv)
		if err == nil {
			packed.key, packed.answer = key, answer
		}
		return answer, err
	}); err != nil {
		return err
	}
	leave := newLeaveDecider(&inv)
	if err := workflow.SetQueryHandler(ctx, api.QueryLeavingHolders, func() ([]api.LeavingHolders, error) {
		return leave.leavingHolders(), nil
	}); err != nil {
		return err
	}
	changed := func(ok bool) (inventory.ChangeResult, error) {
		return inventory.ChangeResult{Generation: inv.Generation, Changed: ok}, nil
	}
	handlers := []struct {
		name    string
		handler any
		valid   any
	}{
		{api.UpdateUpsertCluster,
			func(ctx workflow.Context, c fleet.Cluster) (inventory.ChangeResult, error) {
				return changed(inv.UpsertCluster(c))
			},
			func(ctx workflow.Context, c fleet.Cluster) error {
				if err := inventory.ValidateCluster(c); err != nil {
					return err
				}
				if err := inv.CheckClusterOwner(c.Metadata.Namespace, c.Metadata.Name, c.Metadata.Annotations[inventory.AnnotationManagedBy]); err != nil {
					return err
				}
				return inv.CheckNotLeaving(c.Metadata.Namespace, c.Metadata.Name)
			}},
		{api.UpdateAddCluster,
			func(ctx workflow.Context, c fleet.Cluster) (inventory.ChangeResult, error) {
				return changed(inv.UpsertCluster(c))
			},
			func(ctx workflow.Context, c fleet.Cluster) error {
				if err := inventory.ValidateCluster(c); err != nil {
					return err
				}
				if err := inv.CheckNotLeaving(c.Metadata.Namespace, c.Metadata.Name); err != nil {
					return err
				}
				return inv.CheckAdd(c)
			}},
		{api.UpdateLeaveCluster,
			func(ctx workflow.Context, l inventory.LeaveInput) (inventory.ChangeResult, error) {
				ok := inv.Leave(l)
				if ok {
					leave.askNow() // a running ask does not know this cluster yet
				} else {
					leave.leftAgain(l)
				}
				return changed(ok)
			},
			func(ctx workflow.Context, l inventory.LeaveInput) error { return inv.CheckLeave(l) }},
		{api.UpdateAwaitClusterRemoved, leave.await,
			func(ctx workflow.Context, in api.AwaitClusterRemovedInput) error { return leave.validateAwait(in) }},
		{api.UpdateRemoveCluster,
			func(ctx workflow.Context, r inventory.RemoveInput) (inventory.ChangeResult, error) {
				return changed(inv.RemoveCluster(r.Namespace, r.Name))
			},
			func(ctx workflow.Context, r inventory.RemoveInput) error {
				return inv.CheckClusterOwner(r.Namespace, r.Name, r.ManagedBy)
			}},
		{api.UpdateUpsertClusterGroup,
			func(ctx workflow.Context, g fleet.ClusterGroup) (inventory.ChangeResult, error) {
				return changed(inv.UpsertGroup(g))
			},
			func(ctx workflow.Context, g fleet.ClusterGroup) error {
				if err := inventory.ValidateGroup(g); err != nil {
					return err
				}
				return inv.CheckGroupOwner(g.Metadata.Namespace, g.Metadata.Name, g.Metadata.Annotations[inventory.AnnotationManagedBy])
			}},
		{api.UpdateRemoveClusterGroup,
			func(ctx workflow.Context, r inventory.RemoveInput) (inventory.ChangeResult, error) {
				return changed(inv.RemoveGroup(r.Namespace, r.Name))
			},
			func(ctx workflow.Context, r inventory.RemoveInput) error {
				return inv.CheckGroupOwner(r.Namespace, r.Name, r.ManagedBy)
			}},
	}
	for _, h := range handlers {
		if err := workflow.SetUpdateHandlerWithOptions(ctx, h.name, h.handler, workflow.UpdateHandlerOptions{Validator: h.valid}); err != nil {
			return err
		}
	}
	published := int64(-1)
	for {
		if published != inv.Generation {
			first := published < 0
			published = inv.Generation
			publishInventory(ctx, inv)
			if !first && workflow.GetVersion(ctx, inventoryNotifiesGitRepos, workflow.DefaultVersion, 1) == 1 {
				notifyGitRepos(ctx, inv.Generation)
			}
		}
		if len(inv.Leaving) > 0 && !leave.running && workflow.GetVersion(ctx, inventoryDecidesLeave, workflow.DefaultVersion, 1) == 1 {
			leave.start(ctx)
		}
		gen := inv.Generation
		if err := workflow.Await(ctx, func() bool {
			return inv.Generation != gen || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
		}); err != nil {
			return err
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || workflow.GetInfo(ctx).GetCurrentHistoryLength() > MaxHistoryEvents {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			next, err := inventoryInput(inv)
			if err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, InventoryWorkflow, next)
		}
	}
}

// The memo is rewritten on every inventory change, so it stays small: the first clusters and the count.
// At a thousand clusters a memo of every name was 23 KB a write, over the SDK's 2 KB warning.
const (
	inventoryMemoClusters = 50
	inventoryDetailRows   = 200
)

// publishInventory shows the inventory in the Web UI: a memo of the first clusters and a readable table.
func publishInventory(ctx workflow.Context, inv inventory.Inventory) {
	clusters := map[string]any{}
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%d clusters, %d groups** (generation %d)\n\n", len(inv.Clusters), len(inv.Groups), inv.Generation))
	if len(inv.Leaving) > 0 {
		// Leaving clusters are few and each waits for someone: name them before the table.
		b.WriteString(fmt.Sprintf("Leaving (`flotilla cluster remove`): %s\n\n", leavingList(inv.Leaving)))
	}
	b.WriteString("| cluster | labels | kubeconfig |\n|---|---|---|\n")
	for i, c := range inv.Clusters {
		name := fleet.DisplayName(c.Metadata.Namespace, c.Metadata.Name)
		if i < inventoryMemoClusters {
			clusters[name] = labelString(c.Metadata.Labels)
		}
		if i == inventoryDetailRows {
			b.WriteString(fmt.Sprintf("| … | %d more: `flotilla cluster list` shows them all | |\n", len(inv.Clusters)-i))
			break
		}
		access := c.Spec.KubeConfigPath
		if c.Spec.KubeConfigSecret != "" {
			access = "secret " + c.Spec.KubeConfigSecret
		}
		if c.Spec.Agent != nil {
			// An agent-mode cluster has no kubeconfig on this side: its agent dials out (ADR 22).
			access = "agent"
		}
		b.WriteString(fmt.Sprintf("| %s | %s | %s |\n", name, labelString(c.Metadata.Labels), access))
	}
	_ = workflow.UpsertMemo(ctx, map[string]any{"clusters": clusters, "clusterCount": len(inv.Clusters), "generation": inv.Generation})
	workflow.SetCurrentDetails(ctx, b.String())
}

func leavingList(ls []inventory.Leaving) string {
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		name := fleet.DisplayName(l.Namespace, l.Name)
		if l.KeepWorkloads {
			parts = append(parts, name+" (keeping its workloads)")
			continue
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, ", ")
}

func labelString(l map[string]string) string {
	keys := workflow.DeterministicKeys(l)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// notifyGitRepos lets running GitRepos plan against a changed inventory at once instead of at their next
// poll. Changes arriving within a second are told together; a failure only delays planning until the
// GitRepo's next poll or resync, so it is logged, not retried for long.
func notifyGitRepos(ctx workflow.Context, generation int64) {
	_ = workflow.Sleep(ctx, notifyBatch)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: notifyTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
		Summary:             "tell GitRepos the inventory changed",
	})
	var res api.NotifyGitReposResult
	if err := workflow.ExecuteActivity(actx, api.ActivityNotifyGitRepos, api.NotifyGitReposInput{Generation: generation}).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("could not notify GitRepos of an inventory change", "generation", generation, "error", err)
	}
}

// inventoryInput is the input the inventory workflow continues as new with: packed past
// api.PackInventoryAbove, which 10,000 clusters are ten times over.
//
//workflowcheck:ignore
func inventoryInput(inv inventory.Inventory) (api.InventoryInput, error) {
	return api.NewInventoryInput(inv, api.PackInventoryAbove)
}

// unpackInventory reads the inventory the input carries; gzip and encoding/json read the same bytes into
// the same values on every replay, as readCarry does.
//
//workflowcheck:ignore
func unpackInventory(in api.InventoryInput) (*inventory.Inventory, error) { return in.Unpack() }

// packInventory answers QueryInventoryPacked.
//
//workflowcheck:ignore
func packInventory(inv inventory.Inventory) (api.PackedInventory, error) {
	return api.PackInventory(inv)
}
