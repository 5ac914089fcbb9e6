package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/render"
	"github.com/flotilla-gitops/flotilla/fleet/safepath"
	"github.com/flotilla-gitops/flotilla/fleet/tmpl"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// InventoryReader reads the current cluster inventory.
type InventoryReader interface {
	Read(ctx context.Context) (inventory.Inventory, error)
}

// TemporalInventory reads the inventory by querying InventoryWorkflow.
type TemporalInventory struct {
	Client client.Client
}

// Read implements InventoryReader. No inventory workflow yet means no clusters were ever registered;
// any other failure is an error, never an empty inventory.
func (t TemporalInventory) Read(ctx context.Context) (inventory.Inventory, error) {
	v, err := t.Client.QueryWorkflow(ctx, api.InventoryWorkflowID, "", api.QueryInventory)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return inventory.Inventory{}, nil
		}
		return inventory.Inventory{}, err
	}
	var inv inventory.Inventory
	if err := v.Get(&inv); err != nil {
		return inventory.Inventory{}, err
	}
	return inv, nil
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
		if cl, ok := inv.Cluster(t.Cluster); ok && inventory.Digest(cl, inv.Info(cl).Groups) == t.ClusterDigest {
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

// renderCache keeps the last rendering of each (commit, bundle, cluster entry): idle checks render once,
// and a changed cluster entry or commit misses the cache. A rendering made by a check keeps its chart and
// values for the apply that usually follows (observe, then apply); once used, or at the next check, only
// what checks need stays (name, namespace, deployment ID, options). Holding every cluster's chart (100 KB
// for a bundle of ten 10 KB ConfigMaps) was a tenth of the worker's memory at 1,000 clusters, and
// rendering again for every apply cost 10 CPU-seconds in deploy-50x50.
type renderCache struct {
	mu      sync.Mutex
	entries map[string]renderEntry
}

type renderEntry struct {
	rel  *render.Release
	used time.Time
	full bool // rel still has its chart and values
}

const renderCacheSize = 4096

// render renders a bundle for a cluster. forApply asks for the chart and values too; otherwise the result
// may come from the cache without them.
func (a *Activities) render(h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, forApply bool) (*render.Release, error) {
	key := strings.Join([]string{h.dir, ref.Path, ref.Name, t.GitRepo, h.info.Name, h.digest, h.info.ConfineToNamespace,
		t.Options.TargetNamespace, fmt.Sprint(t.Options.KeepResources, t.Options.ForceSyncGeneration)}, "\x00")
	c := &a.renders
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && (e.full || !forApply) {
		rel := e.rel
		e.used = time.Now()
		if e.full {
			e.rel, e.full = lighten(rel), false
		}
		c.entries[key] = e
		c.mu.Unlock()
		return rel, nil
	}
	c.mu.Unlock()
	b, err := bundle.Load(h.dir, bundle.Ref{Name: ref.Name, Path: ref.Path})
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", ref.Name, err)
	}
	rel, err := render.ForCluster(render.Input{
		RepoRoot: h.dir, Bundle: b, Cluster: h.info, GitRepo: t.GitRepo, Commit: t.Commit,
		TargetNamespace: t.Options.TargetNamespace, KeepResources: t.Options.KeepResources, CorrectDrift: t.Options.CorrectDrift,
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]renderEntry{}
	}
	if len(c.entries) >= renderCacheSize {
		c.evictOldest()
	}
	if forApply {
		c.entries[key] = renderEntry{rel: lighten(rel), used: time.Now()}
	} else {
		c.entries[key] = renderEntry{rel: rel, used: time.Now(), full: true}
	}
	return rel, nil
}

// lighten is what a check needs of a rendering: everything but the chart and values.
func lighten(rel *render.Release) *render.Release {
	light := *rel
	light.Chart, light.Values, light.PostRenderer = nil, nil, nil
	return &light
}

func (c *renderCache) evictOldest() {
	type kv struct {
		k string
		t time.Time
	}
	all := make([]kv, 0, len(c.entries))
	for k, e := range c.entries {
		all = append(all, kv{k, e.used})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
	for _, e := range all[:len(all)/4+1] {
		delete(c.entries, e.k)
	}
}

func renderErrorType(err error) string {
	var te *tmpl.TemplateError
	if errors.As(err, &te) {
		return api.ErrTypeTemplate
	}
	var ee *safepath.EscapeError
	if errors.As(err, &ee) {
		return api.ErrTypeBundle
	}
	return api.ErrTypeBundle
}

// summarizeObjects counts a release's objects by state, with at most ten short non-ready entries, worst first.
func summarizeObjects(objs []agentclient.ObjectStatus) api.ResourceSummary {
	s := api.ResourceSummary{Checked: true}
	rank := map[string]int{"missing": 0, "modified": 1, "orphaned": 2, "notReady": 3, "unknown": 4}
	var bad []agentclient.ObjectStatus
	for _, o := range objs {
		if o.State == agentclient.StateOrphaned {
			s.Counts.Orphaned++ // not desired, so not part of desiredReady
			bad = append(bad, o)
			continue
		}
		s.Counts.DesiredReady++
		switch o.State {
		case "ready":
			s.Counts.Ready++
			continue
		case "notReady":
			s.Counts.NotReady++
		case "missing":
			s.Counts.Missing++
		case "modified":
			s.Counts.Modified++
		default:
			s.Counts.Unknown++
		}
		bad = append(bad, o)
	}
	// Worst first; one example of every state before a second of any, so ten missing objects never hide
	// the one that is not ready; at most maxNonReady entries, then a count of the rest.
	sort.SliceStable(bad, func(i, j int) bool { return rank[bad[i].State] < rank[bad[j].State] })
	picked := make([]bool, len(bad))
	n := 0
	for i, o := range bad {
		if n < maxNonReady && (i == 0 || bad[i-1].State != o.State) {
			picked[i], n = true, n+1
		}
	}
	for i := range bad {
		if n < maxNonReady && !picked[i] {
			picked[i], n = true, n+1
		}
	}
	for i, o := range bad {
		if !picked[i] {
			continue
		}
		entry := fmt.Sprintf("%s %s %s", strings.ToLower(o.Ref.Kind), objectName(o.Ref), o.State)
		if o.Message != "" && o.State != "missing" && o.State != "orphaned" {
			entry += ": " + o.Message
		}
		s.NonReady = append(s.NonReady, entry)
	}
	if rest := len(bad) - n; rest > 0 {
		s.NonReady = append(s.NonReady, fmt.Sprintf("and %d more", rest))
	}
	return s
}

// maxNonReady bounds the objects named in a bundle's message.
const maxNonReady = 10

func objectName(r agentclient.ObjectRef) string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

func listRequest(query string, token []byte) *workflowservice.ListWorkflowExecutionsRequest {
	return &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000}
}

func decodePayload(p *commonpb.Payload, v any) error {
	return converter.GetDefaultDataConverter().FromPayload(p, v)
}
