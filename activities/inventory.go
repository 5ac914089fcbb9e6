package activities

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"golang.org/x/sync/singleflight"

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
//
// Misses share one query: when the cached copy ages out, every check running at that moment misses at once,
// and at 10,000 clusters each query decodes a 3 MB inventory (a tenth of the idle worker's CPU was spent
// on such queries before they were shared).
type inventoryCache struct {
	mu      sync.Mutex
	inv     inventory.Inventory
	read    time.Time
	flights singleflight.Group
}

const inventoryCacheTTL = time.Minute

func (a *Activities) inventoryFor(ctx context.Context, t api.ClusterTarget) (inventory.Inventory, error) {
	c := &a.inventory
	c.mu.Lock()
	inv, fresh := c.inv, time.Since(c.read) < inventoryCacheTTL
	c.mu.Unlock()
	if fresh && holds(inv, t) {
		return inv, nil
	}
	// A query already on its way may have started before this cluster's entry changed: its answer serves
	// if it started after this check asked, or holds the entry this target was planned with; otherwise this
	// check queries on its own.
	asked := time.Now()
	v, err, _ := c.flights.Do("inventory", func() (any, error) {
		started := time.Now()
		inv, err := a.readInventory(ctx)
		return sharedRead{inv, started}, err
	})
	if r, _ := v.(sharedRead); err == nil && (!r.started.Before(asked) || holds(r.inv, t)) {
		return r.inv, nil
	}
	return a.readInventory(ctx)
}

type sharedRead struct {
	inv     inventory.Inventory
	started time.Time
}

// holds says inv has the cluster entry t was planned with, so it answers for that cluster exactly as a
// fresh query would. A target without a digest is never served from a copy.
func holds(inv inventory.Inventory, t api.ClusterTarget) bool {
	if t.ClusterDigest == "" {
		return false
	}
	cl, ok := inv.Cluster(t.Key().Namespace, t.Cluster)
	return ok && inventory.Digest(cl, inv.Info(cl).Groups) == t.ClusterDigest
}

// readInventory queries the inventory and keeps it, unless a newer one is kept already.
func (a *Activities) readInventory(ctx context.Context) (inventory.Inventory, error) {
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return inventory.Inventory{}, err
	}
	c := &a.inventory
	c.mu.Lock()
	if inv.Generation >= c.inv.Generation {
		c.inv, c.read = inv, time.Now()
	}
	c.mu.Unlock()
	return inv, nil
}
