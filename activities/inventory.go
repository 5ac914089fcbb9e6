package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/inventoryquery"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// InventoryReader reads the current cluster inventory.
type InventoryReader interface {
	Read(ctx context.Context) (inventory.Inventory, error)
}

// TemporalInventory reads the inventory by querying the InventoryWorkflow of the installation on
// TaskQueue, the queue the worker polls.
type TemporalInventory struct {
	Client    client.Client
	TaskQueue string
}

// Read implements InventoryReader. No inventory workflow yet means no clusters were ever registered;
// any other failure is an error, never an empty inventory.
func (t TemporalInventory) Read(ctx context.Context) (inventory.Inventory, error) {
	inv, err := inventoryquery.Read(ctx, t.Client, t.TaskQueue)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return inventory.Inventory{}, nil
	}
	return inv, err
}

// inventoryCache spares the inventory workflow a query per check: a cluster workflow's target carries the
// digest of the cluster entry it was planned with, and while the cached inventory holds an entry with that
// digest it is exactly what a fresh query would answer for that cluster. A miss, or an entry older than
// inventoryCacheTTL, queries again.
type inventoryCache struct {
	mu   sync.Mutex
	inv  inventory.Inventory
	read time.Time
}

const inventoryCacheTTL = time.Minute

func (a *Activities) inventoryFor(ctx context.Context, t api.ClusterTarget) (inventory.Inventory, error) {
	c := &a.inventory
	c.mu.Lock()
	inv, fresh := c.inv, time.Since(c.read) < inventoryCacheTTL
	c.mu.Unlock()
	if fresh && t.ClusterDigest != "" {
		if cl, ok := inv.Cluster(t.Key().Namespace, t.Cluster); ok && inventory.Digest(cl, inv.Info(cl).Groups) == t.ClusterDigest {
			return inv, nil
		}
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return inventory.Inventory{}, err
	}
	c.mu.Lock()
	if inv.Generation >= c.inv.Generation {
		c.inv, c.read = inv, time.Now()
	}
	c.mu.Unlock()
	return inv, nil
}
