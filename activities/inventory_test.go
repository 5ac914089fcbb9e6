package activities

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// slowInventory answers queries once released, counting them, as the inventory workflow answers a
// thousand checks that missed the cache at the same moment.
type slowInventory struct {
	inv     inventory.Inventory
	release chan struct{}
	queries atomic.Int32
}

func (s *slowInventory) Read(ctx context.Context) (inventory.Inventory, error) {
	s.queries.Add(1)
	select {
	case <-s.release:
	case <-ctx.Done():
		return inventory.Inventory{}, ctx.Err()
	}
	return s.inv, nil
}

func fleetOf(n int) (inventory.Inventory, []api.ClusterTarget) {
	inv := inventory.Inventory{Generation: 1}
	var targets []api.ClusterTarget
	for i := 0; i < n; i++ {
		c := fleet.Cluster{Metadata: fleet.ObjectMeta{Name: fmt.Sprintf("edge-%d", i), Labels: map[string]string{"env": "prod"}}}
		inv.Clusters = append(inv.Clusters, c)
		targets = append(targets, api.ClusterTarget{GitRepo: "apps", Cluster: c.Metadata.Name, ClusterDigest: inventory.Digest(c, inv.Info(c).Groups)})
	}
	return inv, targets
}

func TestChecksThatMissTheInventoryCacheTogetherShareOneQuery(t *testing.T) {
	inv, targets := fleetOf(50)
	src := &slowInventory{inv: inv, release: make(chan struct{})}
	a := &Activities{Inventory: src}

	var wg sync.WaitGroup
	var started atomic.Int32
	errs := make(chan error, len(targets))
	for _, tg := range targets {
		wg.Go(func() {
			started.Add(1)
			got, err := a.inventoryFor(context.Background(), tg)
			if err == nil && len(got.Clusters) != len(inv.Clusters) {
				err = fmt.Errorf("cluster %s: an inventory of %d clusters", tg.Cluster, len(got.Clusters))
			}
			errs <- err
		})
	}
	// Every check has asked before the query is answered.
	require.Eventually(t, func() bool { return started.Load() == int32(len(targets)) && src.queries.Load() >= 1 }, 10*time.Second, time.Millisecond)
	for range 100 {
		runtime.Gosched() // let the last ones reach the query
	}
	close(src.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// One, or a few where a check looked at the cache just before the shared answer was kept: each check
	// on its own would have asked fifty times.
	require.LessOrEqual(t, src.queries.Load(), int32(5), "50 checks that missed together")

	// Cached now: the next checks ask nothing.
	before := src.queries.Load()
	for _, tg := range targets {
		_, err := a.inventoryFor(context.Background(), tg)
		require.NoError(t, err)
	}
	require.Equal(t, before, src.queries.Load())
}

// A cluster whose entry changed after the cached inventory was read is never answered from it, nor from a
// query that began before its check asked.
func TestACheckPlannedWithANewerClusterEntryQueriesAgain(t *testing.T) {
	inv, targets := fleetOf(2)
	src := &slowInventory{inv: inv, release: make(chan struct{})}
	close(src.release)
	a := &Activities{Inventory: src}
	_, err := a.inventoryFor(context.Background(), targets[0])
	require.NoError(t, err)
	require.Equal(t, int32(1), src.queries.Load())

	relabelled := inv.Clusters[1]
	relabelled.Metadata.Labels = map[string]string{"env": "staging"}
	src.inv = inventory.Inventory{Generation: 2, Clusters: []fleet.Cluster{inv.Clusters[0], relabelled}}
	newer := targets[1]
	newer.ClusterDigest = inventory.Digest(relabelled, src.inv.Info(relabelled).Groups)

	got, err := a.inventoryFor(context.Background(), newer)
	require.NoError(t, err)
	require.Equal(t, int32(2), src.queries.Load())
	c, ok := got.Cluster("", newer.Cluster)
	require.True(t, ok)
	require.Equal(t, "staging", c.Metadata.Labels["env"])
}
