package activities

import (
	"crypto/sha256"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
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
