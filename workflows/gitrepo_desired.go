package workflows

import (
	"slices"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// desiredHashes remembers each planned cluster's desired-state hash for as long as what it was computed
// from holds. Every pass of the GitRepo compares each planned cluster's desired state with what it was
// handed, and encoding and hashing 10,000 desired states was most of a pass (45 ms; docs/performance.md).
// The remembered hash is the one hashOf(g.desired(pc)) gives, so what is handed over, and every history,
// is the same with or without it.
type desiredHashes struct {
	// stamp identifies what every cluster's desired state is built from besides the cluster itself.
	stamp     string
	byCluster map[string]clusterHash
}

// clusterHash is a remembered hash and what of its planned cluster it was computed from: all but its name
// (the map's key), Paused and Partition, which the rollout reads beside the desired state.
type clusterHash struct {
	digest           string
	agent            bool
	bundles, windows []int
	hash             string
}

func (h clusterHash) of(pc api.PlannedCluster) bool {
	return h.digest == pc.Digest && h.agent == pc.Agent && slices.Equal(h.bundles, pc.Bundles) && slices.Equal(h.windows, pc.Windows)
}

// desiredStamp is everything g.desired reads but the planned cluster, for a GitRepo without pins.
type desiredStamp struct {
	Key              api.GitRepoKey    `json:"key"`
	Spec             fleet.GitRepoSpec `json:"spec"`
	Commit           string            `json:"commit"`
	PlanCommit       string            `json:"planCommit"`
	Bundles          []api.BundleRef   `json:"bundles"`
	CheckInterval    time.Duration     `json:"checkInterval"`
	WindowOverridden bool              `json:"windowOverridden"`
}

// desiredHash returns what hashes a planned cluster's desired state, remembered across passes. It is built
// once per pass: the stamp costs one encoding of the spec and the bundles. A pinned cluster's desired state
// comes from the pin's own plan, so a GitRepo with pins hashes each time.
func (g *gitRepoRun) desiredHash() func(api.PlannedCluster) string {
	if g.carry.Plan == nil || len(g.carry.Pins) > 0 {
		return func(pc api.PlannedCluster) string { return hashOf(g.desired(pc)) }
	}
	stamp := hashOf(desiredStamp{Key: g.key, Spec: g.spec.Spec, Commit: g.carry.Commit, PlanCommit: g.carry.Plan.Commit,
		Bundles: g.carry.Plan.Bundles, CheckInterval: g.checkInterval(), WindowOverridden: g.windowOverridden()})
	if g.hashes.stamp != stamp {
		g.hashes = desiredHashes{stamp: stamp, byCluster: map[string]clusterHash{}}
	}
	m := g.hashes.byCluster
	return func(pc api.PlannedCluster) string {
		if h, ok := m[pc.Name]; ok && h.of(pc) {
			return h.hash
		}
		h := hashOf(g.desired(pc))
		m[pc.Name] = clusterHash{digest: pc.Digest, agent: pc.Agent, bundles: slices.Clone(pc.Bundles), windows: slices.Clone(pc.Windows), hash: h}
		return h
	}
}
