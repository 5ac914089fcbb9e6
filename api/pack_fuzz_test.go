package api

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

func gzipText(tb testing.TB, s string) []byte {
	tb.Helper()
	z, err := gzipBytes([]byte(s))
	require.NoError(tb, err)
	return z
}

// expandedSize is what z decompresses to, up to limit+1 bytes; -1 when it is not gzip at all.
func expandedSize(z []byte, limit int64) int64 {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return -1
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
	return n
}

func sampleInventory(clusters int) inventory.Inventory {
	inv := inventory.Inventory{Generation: 7}
	for i := range clusters {
		inv.Clusters = append(inv.Clusters, fleet.Cluster{
			Metadata: fleet.ObjectMeta{Name: fmt.Sprintf("edge-%04d", i), Namespace: "fleet-default", Labels: map[string]string{"env": "prod"}},
			Spec:     fleet.ClusterSpec{KubeConfigPath: "/etc/flotilla/edge.yaml", TemplateValues: map[string]any{"region": "eu", "replicas": 3.0}}})
	}
	return inv
}

// A packed inventory is a workflow input and a query answer: whoever may start a workflow writes it.
// Whatever its bytes, Unpack refuses them naming the packed inventory, past MaxUnpackedInventory with the
// bound's own message, or gives an inventory that packs again into one that unpacks the same; an
// InventoryInput carrying it unpacks to the same inventory.
func FuzzPackedInventoryUnpack(f *testing.F) {
	for _, inv := range []inventory.Inventory{sampleInventory(3), sampleInventory(0), {}} {
		p, err := PackInventory(inv)
		require.NoError(f, err)
		f.Add(p.Z)
	}
	p, _ := PackInventory(sampleInventory(2))
	f.Add(p.Z[:len(p.Z)/2])
	f.Add(append(append([]byte{}, p.Z...), p.Z...))
	for _, s := range []string{
		`{"generation":1,"clusters":[{"metadata":{"name":"a"},"spec":{"agent":{}}}],"groups":[{"metadata":{"name":"g"}}],"leaving":[{"name":"b"}]}`,
		`{"clusters":[null],"groups":null}`,
		`{"generation":"one"}`,
		`null`,
		`[]`,
	} {
		f.Add(gzipText(f, s))
	}
	f.Add([]byte("not gzip"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, z []byte) {
		inv, err := PackedInventory{Z: z}.Unpack()
		expanded := expandedSize(z, MaxUnpackedInventory)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "packed inventory: "), "%v", err)
			if expanded > MaxUnpackedInventory {
				require.EqualError(t, err, "packed inventory: larger than 64 MiB once decompressed")
			}
			return
		}
		require.LessOrEqual(t, expanded, int64(MaxUnpackedInventory))
		want, err := json.Marshal(inv)
		require.NoError(t, err)
		again, err := PackInventory(inv)
		require.NoError(t, err)
		back, err := again.Unpack()
		require.NoError(t, err)
		got, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))

		in := InventoryInput{InventoryZ: z}
		carried, err := in.Unpack()
		require.NoError(t, err)
		got, err = json.Marshal(carried)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// A packed cluster list is an activity result anyone who runs a worker can shape. Whatever its bytes,
// Unpack refuses them naming the packed clusters, past MaxUnpackedClusters with the bound's own message, or
// moves them into Clusters; the plan, packed again, unpacks to the same clusters.
func FuzzPlanUnpack(f *testing.F) {
	big := Plan{Commit: "c1", Clusters: plannedClusters(2500)}
	require.NoError(f, big.Pack())
	require.NotEmpty(f, big.ClustersZ)
	f.Add(big.ClustersZ)
	f.Add(gzipText(f, `[{"name":"edge-1","bundles":[0,1],"digest":"d","partition":2}]`))
	f.Add(gzipText(f, `[null,{"bundles":null}]`))
	f.Add(gzipText(f, `{"name":"not a list"}`))
	f.Add(gzipText(f, `[]`))
	f.Add(gzipText(f, `null`))
	f.Add([]byte("not gzip"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, z []byte) {
		p := Plan{Commit: "c1", ClustersZ: z}
		err := p.Unpack()
		if len(z) == 0 {
			require.NoError(t, err, "a plan that was not packed is left as it is")
			return
		}
		expanded := expandedSize(z, MaxUnpackedClusters)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "plan: packed clusters: "), "%v", err)
			if expanded > MaxUnpackedClusters {
				require.EqualError(t, err, "plan: packed clusters: larger than 64 MiB once decompressed")
			}
			return
		}
		require.LessOrEqual(t, expanded, int64(MaxUnpackedClusters))
		require.Empty(t, p.ClustersZ, "the packed list moves into Clusters")
		want, err := json.Marshal(p.Clusters)
		require.NoError(t, err)
		z2, err := gzipBytes(want)
		require.NoError(t, err)
		again := Plan{Commit: "c1", ClustersZ: z2}
		require.NoError(t, again.Unpack())
		got, err := json.Marshal(again.Clusters)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}
