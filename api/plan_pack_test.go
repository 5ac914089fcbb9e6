package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func plannedClusters(n int) []PlannedCluster {
	out := make([]PlannedCluster, n)
	for i := range out {
		name := fmt.Sprintf("edge-%05d", i)
		out[i] = PlannedCluster{Name: name, Digest: fmt.Sprintf("%x", sha256.Sum256([]byte(name))), Bundles: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	}
	return out
}

// A plan of 10,000 clusters is 1.26 MB as JSON, over half of Temporal's 2 MB payload limit; packed it is
// well under, and comes back whole. A small plan stays as it was, readable in the Web UI.
func TestAPlanOfManyClustersTravelsPacked(t *testing.T) {
	small := Plan{Commit: "c1", Clusters: plannedClusters(10)}
	require.NoError(t, small.Pack())
	require.Len(t, small.Clusters, 10)
	require.Empty(t, small.ClustersZ)

	big := Plan{Commit: "c1", Clusters: plannedClusters(10000)}
	plain, err := json.Marshal(big)
	require.NoError(t, err)
	require.NoError(t, big.Pack())
	require.Empty(t, big.Clusters)
	packed, err := json.Marshal(big)
	require.NoError(t, err)
	t.Logf("10,000 clusters: %d KB plain, %d KB packed", len(plain)>>10, len(packed)>>10)
	require.Less(t, len(packed), 1<<20)

	var back Plan
	require.NoError(t, json.Unmarshal(packed, &back))
	require.NoError(t, back.Unpack())
	require.Equal(t, plannedClusters(10000), back.Clusters)
	require.Empty(t, back.ClustersZ)
}

// A packed list is an activity result anyone who runs a worker can shape: one that would decompress past
// the bound is refused, not read.
func TestAPackedPlanThatWouldDecompressPastItsBoundIsRefused(t *testing.T) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(bytes.Repeat([]byte(" "), MaxUnpackedClusters+1))
	require.NoError(t, w.Close())
	p := Plan{ClustersZ: buf.Bytes()}
	require.ErrorContains(t, p.Unpack(), "larger than 64 MiB")
}
