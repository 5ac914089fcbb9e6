package activities

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/tmpl"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/render"
)

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

// renderKey identifies a rendering by everything it is made from: the checkout, the cluster as the
// inventory describes it, the whole target (every GitRepo option among it) but its other bundles, and the
// bundle's own reference. It is a digest of those values themselves, never a list of chosen fields: an
// input added later is in the key without anyone remembering to add it (a hand-written list once left out
// correctDrift, and a changed option went unseen until the worker restarted). The part shared by every
// bundle of the target is digested once per handle. A key that cannot be made (a value JSON cannot
// encode) is not cacheable: that rendering is made afresh, never taken from another's entry.
func (h *clusterHandle) renderKey(t api.ClusterTarget, ref api.BundleRef) (string, bool) {
	h.keyOnce.Do(func() {
		t.Bundles = nil // each bundle's own reference is added below; the others do not change this one
		b, err := json.Marshal(renderInputs{Dir: h.dir, Cluster: h.info, ClusterDigest: h.digest, Target: t})
		if err != nil {
			return
		}
		sum := sha256.Sum256(b)
		h.targetKey = string(sum[:])
	})
	if h.targetKey == "" {
		return "", false
	}
	b, err := json.Marshal(ref)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(append([]byte(h.targetKey), b...))
	return string(sum[:]), true
}

// renderInputs is what a rendering reads besides the bundle's reference.
type renderInputs struct {
	Dir           string            `json:"dir"`
	Cluster       fleet.ClusterInfo `json:"cluster"`
	ClusterDigest string            `json:"clusterDigest"`
	Target        api.ClusterTarget `json:"target"`
}

type renderEntry struct {
	rel  *render.Release
	used time.Time
	full bool // rel still has its chart and values
}

const renderCacheSize = 4096

// render renders a bundle for a cluster. forApply asks for the chart and values too; otherwise the result
// may come from the cache without them.
func (a *Activities) render(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, forApply bool) (*render.Release, error) {
	if h.prepared != nil {
		return a.renderPrepared(ctx, h, t, ref, forApply)
	}
	key, cacheable := h.renderKey(t, ref)
	c := &a.renders
	c.mu.Lock()
	if e, ok := c.entries[key]; cacheable && ok && (e.full || !forApply) {
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
		ForceSyncGeneration: t.Options.ForceSyncGeneration, GitRepoNamespace: t.Namespace,
		Charts:     a.chartLoader(ctx, t.Key(), t.ChartAccess, chartload.TLS{CABundle: t.CABundle, InsecureSkipTLSVerify: t.InsecureSkipTLSVerify}),
		ChartLocks: ref.Charts,
	})
	if err != nil {
		return nil, err
	}
	if !cacheable {
		return rel, nil
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

// renderErrorType is the error type of a bundle that did not render: a `${ }` template that failed for
// this cluster, a valuesFrom source the cluster does not have (or that is not Helm values), or anything
// else wrong with the bundle (its fleet.yaml, its chart, a path that leaves the repository). A path that
// escapes is a BundleError like the rest; it needs no type of its own.
func renderErrorType(err error) string {
	var pe *preparedError
	if errors.As(err, &pe) {
		return pe.typ
	}
	var te *tmpl.TemplateError
	if errors.As(err, &te) {
		return api.ErrTypeTemplate
	}
	var vf *render.ValuesFromError
	if errors.As(err, &vf) {
		return api.ErrTypeValuesFrom
	}
	return api.ErrTypeBundle
}
