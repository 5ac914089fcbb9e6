package workflows

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
)

// GitRepoCarry is the GitRepo workflow's state across continue-as-new.
type GitRepoCarry struct {
	Commit              string    `json:"commit,omitempty"`
	InventoryGeneration int64     `json:"inventoryGeneration,omitempty"`
	Plan                *api.Plan `json:"plan,omitempty"`
	PlanKey             string    `json:"planKey,omitempty"`
	// Rollout is what the GitRepo knows of each cluster.
	Rollout    *rollout  `json:"rollout,omitempty"`
	Error      string    `json:"error,omitempty"`
	LastPolled time.Time `json:"lastPolled,omitempty"`
	LastResync time.Time `json:"lastResync,omitempty"`
	ForceSync  bool      `json:"forceSync,omitempty"`
	Deleting   bool      `json:"deleting,omitempty"`
	Published  string    `json:"published,omitempty"`
	// Held is a plan waiting for approval; Approved is the key of the held plan a person approved.
	Held     *HeldPlan `json:"held,omitempty"`
	Approved string    `json:"approved,omitempty"`
	// InventorySeen is the inventory generation a poll or a plan read last, and Leaving that inventory's
	// clusters on their way out (ADR 16): none of them is targeted, whatever the plan.
	InventorySeen int64                `json:"inventorySeen,omitempty"`
	Leaving       []api.LeavingCluster `json:"leaving,omitempty"`
	// Pins are the rollbacks in force (gitrepo_rollback.go), oldest first.
	Pins []pin `json:"pins,omitempty"`
	// WindowOverride lets its commit through the sync windows (gitrepo_syncwindows.go).
	WindowOverride *api.RolloutMark `json:"windowOverride,omitempty"`

	// The per-cluster state as runs before the rollout type carried it: four maps keyed by cluster. Read
	// once, when such a run continues as new into this code (legacyRollout); never written.
	LegacyGeneration int64                        `json:"generation,omitempty"`
	LegacyDelivered  map[string]delivery          `json:"delivered,omitempty"`
	LegacyClusters   map[string]api.ClusterStatus `json:"clusters,omitempty"`
	LegacyKnown      map[string]bool              `json:"known,omitempty"`
	LegacyRemoving   map[string]bool              `json:"removing,omitempty"`
}

// takeRollout returns the carried rollout, converting the legacy maps of an older run into it.
func (c *GitRepoCarry) takeRollout() *rollout {
	r := c.Rollout
	if r == nil {
		r = newRollout()
	}
	if r.Clusters == nil {
		r.Clusters = map[string]*clusterEntry{}
	}
	if c.LegacyGeneration > r.Generation {
		r.Generation = c.LegacyGeneration
	}
	for _, name := range sortedKeys(c.LegacyDelivered) {
		d := c.LegacyDelivered[name]
		r.entry(name).Delivered = &d
	}
	for _, name := range sortedKeys(c.LegacyClusters) {
		st := c.LegacyClusters[name]
		r.entry(name).Status = &st
	}
	for _, name := range sortedKeys(c.LegacyKnown) {
		r.entry(name).Running = c.LegacyKnown[name]
	}
	for _, name := range sortedKeys(c.LegacyRemoving) {
		r.entry(name).Removing = c.LegacyRemoving[name]
	}
	c.LegacyGeneration, c.LegacyDelivered, c.LegacyClusters, c.LegacyKnown, c.LegacyRemoving = 0, nil, nil, nil, nil
	c.Rollout = r
	return r
}

// A GitRepo's state across continue-as-new holds a status per cluster and bundle. At 1,000 clusters of ten
// bundles its JSON is about 3 MB (more with errors), over Temporal's 2 MB payload limit: the GitRepo could
// never continue as new and would wedge. The state is repetitive (the same bundle names, states and keys
// for every cluster), so it travels gzip-compressed, a tenth of its size or less. Should it still be too
// large (thousands of distinct error messages), messages are shortened, then the bundles' own messages
// dropped, then the bundles' details; what each cluster was handed is always kept, so no cluster is
// handed its desired state again because the GitRepo continued as new (at 10,000 clusters that would be
// 10,000 signals, and as many reports, in every run).

// maxCarryBytes bounds the packed state so the continue-as-new input stays under 1 MiB, half of Temporal's
// 2 MB payload limit: the input carries it base64-encoded (a third larger), beside the spec.
const maxCarryBytes = 760 << 10

// maxUnpackedCarry bounds the carried state once decompressed. A real one is about 3 MB at 1,000 clusters
// of ten bundles; gzip turns 254 KiB of zeros into 572 MiB, and a workflow input is anyone's who may start
// a workflow: read past this, the run fails alone instead of every worker that replays it crash-looping.
const maxUnpackedCarry = 64 << 20

// carryMessageLimit is how long a carried message may stay when the state must be trimmed.
const carryMessageLimit = 200

// packCarry compresses the carried state, trimming it if it would not fit; it reports whether it trimmed.
// A large state is first compressed fast, to learn whether it can fit: at 10,000 clusters whose every bundle
// failed with a message of its own it is 74 MB of JSON, and compressing that at gzip's best, up to three
// times over, made a continue-as-new outlast its workflow task. Only a state that fits, or that best
// compression might bring within the bound, is compressed at its best.
//
//workflowcheck:ignore
func packCarry(c GitRepoCarry) ([]byte, bool) {
	full := c.Rollout
	levels := []trimLevel{keepAll, clipMessages, dropBundleMessages, dropBundles}
	if full == nil {
		levels = levels[:1]
	}
	var z []byte
	for i, level := range levels {
		last := i == len(levels)-1
		if level != keepAll {
			c.Rollout = trimStatuses(full, level)
		}
		raw := encodeJSON(c)
		if len(raw) > packFastAbove {
			// Best compression shrinks such a state by less than half against fast: past twice the bound, it
			// cannot fit at this level.
			if z = gzipBytes(raw, gzip.BestSpeed); len(z) > 2*maxCarryBytes && !last {
				continue
			}
		}
		z = gzipBytes(raw, gzip.BestCompression)
		if len(z) <= maxCarryBytes || last {
			return z, level != keepAll
		}
	}
	return z, false
}

// packFastAbove is the size of JSON past which packCarry first compresses fast (a few MB take gzip's best
// compression a few hundred milliseconds).
const packFastAbove = 4 << 20

//workflowcheck:ignore
func encodeJSON(v any) []byte {
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(v)
	return buf.Bytes()
}

//workflowcheck:ignore
func gzipBytes(raw []byte, level int) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, level)
	_, _ = w.Write(raw)
	_ = w.Close()
	return buf.Bytes()
}

// unpackCarry reverses packCarry.
//
//workflowcheck:ignore
func unpackCarry(z []byte) (GitRepoCarry, error) {
	var c GitRepoCarry
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return c, err
	}
	data, err := io.ReadAll(io.LimitReader(r, maxUnpackedCarry+1))
	if err != nil {
		return c, err
	}
	if len(data) > maxUnpackedCarry {
		return c, fmt.Errorf("larger than %d MiB once decompressed, the most a GitRepo carries", maxUnpackedCarry>>20)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("decoding: %w", err)
	}
	return c, nil
}

// trimLevel is how much of the clusters' statuses a carry too large leaves out.
type trimLevel int

const (
	keepAll            trimLevel = iota // nothing trimmed
	clipMessages                        // every message shortened to carryMessageLimit
	dropBundleMessages                  // and the bundles' own messages left out (their states and counts stay)
	dropBundles                         // and the bundles left out: each cluster keeps its own summary
)

// trimStatuses copies a rollout with its statuses trimmed to level. Deliveries stay whole: a cluster's
// next report fills its status in again, and nothing is handed over again.
func trimStatuses(in *rollout, level trimLevel) *rollout {
	out := *in
	out.Clusters = make(map[string]*clusterEntry, len(in.Clusters))
	for _, name := range sortedKeys(in.Clusters) {
		e := *in.Clusters[name]
		if e.Status != nil {
			cs := *e.Status
			cs.Message = clipMessage(cs.Message)
			switch level {
			case dropBundles:
				cs.Bundles = nil
			default:
				bs := make([]api.BundleStatus, len(cs.Bundles))
				for i, b := range cs.Bundles {
					b.Message = clipMessage(b.Message)
					if level == dropBundleMessages {
						b.Message = ""
					}
					bs[i] = b
				}
				cs.Bundles = bs
			}
			e.Status = &cs
		}
		out.Clusters[name] = &e
	}
	return &out
}

func clipMessage(s string) string {
	if len(s) <= carryMessageLimit {
		return s
	}
	return s[:carryMessageLimit] + "…"
}

// readCarry decodes the state a previous run handed over (api.GitRepoInput.Carry,
// api.ClusterWorkflowInput.Carry), which the contract holds as opaque JSON; none is a fresh start.
// encoding/json reads the same bytes into the same values on every replay (workflowcheck cannot see
// through its reflection), as the SDK's own payload converter does.
//
//workflowcheck:ignore
func readCarry(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, into)
}

// writeCarry is the state this run hands its next one, in the contract's opaque form; encoding/json writes
// map keys sorted, so the same state is the same bytes.
//
//workflowcheck:ignore
func writeCarry(carry any) (json.RawMessage, error) {
	b, err := json.Marshal(carry)
	if err != nil {
		return nil, fmt.Errorf("carried state: %w", err)
	}
	return b, nil
}

// unpackPlan restores a plan the Plan activity packed (api.Plan.Unpack); gzip and encoding/json read the
// same bytes into the same values on every replay, as readCarry does.
//
//workflowcheck:ignore
func unpackPlan(p *api.Plan) error { return p.Unpack() }
