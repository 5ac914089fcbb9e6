package workflows

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

func gzipString(tb testing.TB, s string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write([]byte(s))
	require.NoError(tb, err)
	require.NoError(tb, w.Close())
	return buf.Bytes()
}

// A packed carry is a workflow input: anyone who may start a workflow writes it. Whatever its bytes,
// unpackCarry refuses them, past maxUnpackedCarry with the bound's own message, or gives a state the run
// takes up (takeRollout) and hands on: packed again, it unpacks to the same state.
func FuzzUnpackCarry(f *testing.F) {
	g := bigGitRepo(3, 2, true)
	packed, trimmed := packCarry(g.carry)
	require.False(f, trimmed)
	f.Add(packed)
	f.Add(packed[:len(packed)-4])
	f.Add(append(append([]byte{}, packed...), packed...))
	for _, s := range []string{
		// As runs before the rollout type carried it.
		`{"commit":"0123456789ab","generation":3,"delivered":{"edge-1":{"hash":"h","generation":3,"at":"2026-11-25T06:00:00Z","acked":true}},` +
			`"clusters":{"edge-1":{"name":"edge-1","reachable":true}},"known":{"edge-1":true},"removing":{"edge-2":true}}`,
		`{"rollout":{"clusters":{"a":null,"b":{"delivered":null,"status":{}}},"generation":-1},"generation":7,"delivered":{"a":{}}}`,
		`{"plan":{"commit":"c","clusters":[{"name":"a","bundles":[0,5]}],"clustersZ":"H4sIAAAAAAAA/w=="},"held":{"key":"k"},"pins":[{"plan":null}]}`,
		`{"lastPolled":"2026-01-01T00:00:00+01:00","lastResync":"0001-01-01T00:00:00Z","windowOverride":{}}`,
		`{"lastPolled":"not a time"}`,
		`null`,
		`[]`,
		`{`,
	} {
		f.Add(gzipString(f, s))
	}
	f.Add([]byte("not gzip"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, z []byte) {
		c, err := unpackCarry(z)
		var expanded int64 = -1
		if zr, zerr := gzip.NewReader(bytes.NewReader(z)); zerr == nil {
			expanded, _ = io.Copy(io.Discard, io.LimitReader(zr, maxUnpackedCarry+1))
		}
		if err != nil {
			if expanded > maxUnpackedCarry {
				require.EqualError(t, err, fmt.Sprintf("larger than %d MiB once decompressed, the most a GitRepo carries", maxUnpackedCarry>>20))
			}
			return
		}
		require.LessOrEqual(t, expanded, int64(maxUnpackedCarry))
		c.takeRollout()
		want := encodeJSON(c)
		again, trimmed := packCarry(c)
		back, err := unpackCarry(again)
		require.NoError(t, err, "a carry taken up is handed on")
		if !trimmed {
			require.Equal(t, string(want), string(encodeJSON(back)))
		}
	})
}

// A GitRepo's state, packed and unpacked, is the state, whatever its messages and names hold.
func FuzzPackCarryRoundTrip(f *testing.F) {
	f.Add("0123456789abcdef0123456789abcdef01234567", int64(3), "edge-0001", "fleet-apps-app-0", "stuck at 0123456789ab: map has no entry", int64(1_800_000_000_000_000_000), true, uint8(3))
	f.Add("", int64(0), "", "", "", int64(0), false, uint8(0))
	f.Add("é", int64(-1), "a\x00b", "\u2028", "\"}]", int64(-9_000_000_000_000_000_000), true, uint8(255))
	f.Fuzz(func(t *testing.T, commit string, generation int64, cluster, bundle, message string, at int64, acked bool, clusters uint8) {
		for _, s := range []string{commit, cluster, bundle, message} {
			if !utf8.ValidString(s) {
				t.Skip("JSON carries text as UTF-8: names, commits and messages are")
			}
		}
		when := time.Unix(0, at).UTC()
		c := GitRepoCarry{Commit: commit, InventoryGeneration: generation, Error: message, LastPolled: when, ForceSync: acked,
			Plan: &api.Plan{Commit: commit, Bundles: []api.BundleRef{{Name: bundle, Path: bundle}}},
			Held: &HeldPlan{Key: commit, Message: message}}
		r := newRollout()
		r.Generation = generation
		for i := range int(clusters % 16) {
			name := fmt.Sprintf("%s-%d", cluster, i)
			c.Plan.Clusters = append(c.Plan.Clusters, api.PlannedCluster{Name: name, Digest: commit, Bundles: []int{0}})
			st := api.ClusterStatus{Name: name, Commit: commit, Message: message, LastSeen: when, Generation: generation,
				Bundles: []api.BundleStatus{{Name: bundle, State: api.StateErrApplied, Message: message}}}
			r.Clusters[name] = &clusterEntry{Status: &st, Running: acked,
				Delivered: &delivery{Hash: commit, Generation: generation, At: when, Acked: acked}}
		}
		c.Rollout = r
		want := encodeJSON(c)
		z, trimmed := packCarry(c)
		require.False(t, trimmed, "a few clusters always fit")
		got, err := unpackCarry(z)
		require.NoError(t, err)
		require.Equal(t, string(want), string(encodeJSON(got)))
		require.Len(t, got.Rollout.Clusters, len(r.Clusters))
	})
}
