// Package inventoryquery reads an installation's cluster inventory from its inventory workflow.
package inventoryquery

import (
	"context"
	"strings"

	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// Read queries the inventory of the installation on taskQueue, packed (a plain answer does not fit past a
// few thousand clusters); a worker older than the packed query is asked for the plain one.
func Read(ctx context.Context, c client.Client, taskQueue string) (inventory.Inventory, error) {
	id := api.InventoryWorkflowID(taskQueue)
	v, err := c.QueryWorkflow(ctx, id, "", api.QueryInventoryPacked)
	if err != nil && strings.Contains(err.Error(), "unknown queryType") {
		var inv inventory.Inventory
		if v, err = c.QueryWorkflow(ctx, id, "", api.QueryInventory); err != nil {
			return inv, err
		}
		return inv, v.Get(&inv)
	}
	if err != nil {
		return inventory.Inventory{}, err
	}
	var p api.PackedInventory
	if err := v.Get(&p); err != nil {
		return inventory.Inventory{}, err
	}
	return p.Unpack()
}
