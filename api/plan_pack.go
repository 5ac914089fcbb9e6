package api

import (
	"encoding/json"
	"fmt"
)

// A plan lists every targeted cluster with its inventory digest (a sha256 no compression shortens): about
// 126 bytes a cluster of ten bundles, so 1.26 MB at 10,000 clusters, over half of Temporal's 2 MB payload
// limit for an activity result, and over the whole of it past 16,000. Compressed, the list is about a third
// of that. A small plan stays plain, so its history reads as it did in the Web UI.

// PackClustersAbove is the size of a plan's cluster list past which Pack compresses it.
const PackClustersAbove = 256 << 10

// MaxUnpackedClusters bounds a packed cluster list once decompressed (a 10,000-cluster list is about
// 1.3 MB): gzip turns a few hundred KB of zeros into gigabytes, and the list comes from an activity result.
const MaxUnpackedClusters = 64 << 20

// Pack moves the cluster list into ClustersZ when it is larger than PackClustersAbove.
func (p *Plan) Pack() error {
	raw, err := json.Marshal(p.Clusters)
	if err != nil {
		return fmt.Errorf("plan: clusters: %w", err)
	}
	if len(raw) <= PackClustersAbove {
		return nil
	}
	z, err := gzipBytes(raw)
	if err != nil {
		return err
	}
	p.Clusters, p.ClustersZ = nil, z
	return nil
}

// Unpack restores a cluster list Pack compressed; a plan that was not packed is left as it is.
func (p *Plan) Unpack() error {
	if len(p.ClustersZ) == 0 {
		return nil
	}
	var clusters []PlannedCluster
	if err := gunzipJSON(p.ClustersZ, MaxUnpackedClusters, &clusters); err != nil {
		return fmt.Errorf("plan: packed clusters: %w", err)
	}
	p.Clusters, p.ClustersZ = clusters, nil
	return nil
}
