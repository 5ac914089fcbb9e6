package workflows

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// bigGitRepo is a GitRepo at 1,000 clusters of ten bundles, every one reported; with failing, every bundle
// fails with a message of its own, the worst case for compression.
func bigGitRepo(clusters, bundles int, failing bool) *gitRepoRun {
	g := &gitRepoRun{spec: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "fleet"}, Spec: fleet.GitRepoSpec{Repo: "https://git.example.com/org/fleet.git"}}}
	g.carry = GitRepoCarry{Commit: "0123456789abcdef0123456789abcdef01234567", Plan: &api.Plan{Commit: "0123456789abcdef0123456789abcdef01234567"}}
	g.r = g.carry.takeRollout()
	for b := 0; b < bundles; b++ {
		g.carry.Plan.Bundles = append(g.carry.Plan.Bundles, api.BundleRef{Name: fmt.Sprintf("fleet-apps-app-%d", b), Path: fmt.Sprintf("apps/app-%d", b)})
	}
	at := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	for c := 0; c < clusters; c++ {
		name := fmt.Sprintf("edge-%04d", c)
		digest := sha256.Sum256([]byte(name))
		pc := api.PlannedCluster{Name: name, Digest: fmt.Sprintf("%x", digest)}
		st := api.ClusterStatus{Name: name, Commit: g.carry.Commit[:12], Reachable: true, LastChecked: at, LastSeen: at, Generation: int64(c + 1)}
		for b := 0; b < bundles; b++ {
			pc.Bundles = append(pc.Bundles, b)
			bs := api.BundleStatus{Name: g.carry.Plan.Bundles[b].Name, State: api.StateReady, Release: g.carry.Plan.Bundles[b].Name, Revision: 3,
				ResourceCounts: api.ResourceCounts{DesiredReady: 4, Ready: 4}}
			if failing {
				bs.State = api.StateErrApplied
				bs.Message = fmt.Sprintf(`stuck at 0123456789ab (revision 3): cluster %q: bundle %q: apps/app-%d/values.yaml: line %d: map has no entry for key "fqdn-%x"`,
					name, bs.Name, b, c%97, sha256.Sum256([]byte(name+bs.Name)))
			}
			st.Bundles = append(st.Bundles, bs)
		}
		summarizeCluster(&st)
		g.carry.Plan.Clusters = append(g.carry.Plan.Clusters, pc)
		g.r.Clusters[name] = &clusterEntry{Status: &st, Running: true,
			Delivered: &delivery{Hash: fmt.Sprintf("%x", digest[:12]), Generation: int64(c + 1), At: at, Acked: true}}
	}
	return g
}

// A GitRepo at a thousand clusters of ten bundles carries their statuses into its next run. Uncompressed
// that is about 3 MB (4.5 MB when every bundle fails), over Temporal's 2 MB payload limit: the GitRepo
// could never continue as new. Packed, it stays far under the limit and comes back whole.
func TestAThousandClusterGitRepoContinuesAsNewUnderThePayloadLimit(t *testing.T) {
	for _, failing := range []bool{false, true} {
		g := bigGitRepo(1000, 10, failing)
		in, trimmed := g.nextRunInput()
		payload, err := json.Marshal(in)
		require.NoError(t, err)
		t.Logf("failing=%v: continue-as-new input %d KB (carry as plain JSON: %d KB), trimmed=%v",
			failing, len(payload)>>10, len(mustMarshal(t, g.carry))>>10, trimmed)
		require.Less(t, len(payload), 1<<20, "the input must stay far under Temporal's 2 MB payload limit")
		require.False(t, trimmed, "a thousand clusters of ten bundles fit without losing anything")

		next := &gitRepoRun{}
		next.carry, err = unpackCarry(in.CarryZ)
		require.NoError(t, err)
		next.r = next.carry.takeRollout()
		require.Equal(t, g.view(t0), next.viewWith(g), "the next run shows exactly the same status")
	}
}

// Past what compression can hold, messages are shortened, then the bundles' own messages dropped; every
// cluster keeps its bundles' states and what it was handed, so nothing is handed over again (at 10,000
// clusters that would be 10,000 signals and reports in every run) and the input stays under half the limit.
func TestAnOversizedCarryIsTrimmedNotLost(t *testing.T) {
	g := bigGitRepo(3000, 10, true)
	in, trimmed := g.nextRunInput()
	payload, err := json.Marshal(in)
	require.NoError(t, err)
	require.True(t, trimmed)
	require.Less(t, len(payload), 1<<20)
	c, err := unpackCarry(in.CarryZ)
	require.NoError(t, err)
	require.Len(t, c.Rollout.Clusters, 3000, "every cluster keeps its state and counts")
	e := c.Rollout.Clusters["edge-0042"]
	require.Equal(t, api.StateErrApplied, e.Status.State)
	require.Len(t, e.Status.Bundles, 10, "every bundle keeps its state")
	require.Equal(t, api.StateErrApplied, e.Status.Bundles[3].State)
	require.Empty(t, e.Status.Bundles[3].Message, "its own message waits for the cluster's next report")
	require.Equal(t, g.r.Clusters["edge-0042"].Delivered, e.Delivered, "what it was handed is kept")
}

// viewWith is the view of a run holding this carry and other's spec.
func (g *gitRepoRun) viewWith(other *gitRepoRun) api.GitRepoStatus {
	g.spec, g.paused, g.nextPoll = other.spec, other.paused, other.nextPoll
	return g.view(t0)
}

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A carried state that decompresses past the limit (a gzip bomb in a workflow input: 256 KiB of zeros is
// 256 MiB) fails that GitRepo's run alone, naming the limit, and never reads the rest into memory.
func TestACarriedStateThatExpandsPastTheLimitFailsThatRunAlone(t *testing.T) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	zeros := make([]byte, 1<<20)
	for range 256 {
		_, err = w.Write(zeros)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.Less(t, buf.Len(), 512<<10)

	_, err = unpackCarry(buf.Bytes())
	require.EqualError(t, err, "larger than 64 MiB once decompressed, the most a GitRepo carries")

	env := newEnv()
	in := shopInput(10)
	in.CarryZ = buf.Bytes()
	env.ExecuteWorkflow(GitRepoWorkflow, in)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, env.GetWorkflowError(), &appErr)
	require.Equal(t, api.ErrTypeInvalidCarry, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, appErr.Error(), "gitrepo shop: carried state: larger than 64 MiB once decompressed")
}

// The contract holds a run's carry as opaque JSON; a run continued as new before the inputs moved into
// api (its carry written as a nested object) reads exactly what that run carried, and this code hands
// the same spelling on.
func TestACarryWrittenBeforeTheContractHeldItOpaqueIsReadWhole(t *testing.T) {
	recorded := `{"target":{"cluster":"edge-1"},"generation":4,"carry":{"status":{"name":"edge-1","state":"Ready"},` +
		`"failures":{"web":{"desiredID":"d1","message":"boom","attempts":2,"nextRetry":"2026-01-02T03:04:05Z"}},"sweptKey":"k1"}}`
	var in api.ClusterWorkflowInput
	require.NoError(t, json.Unmarshal([]byte(recorded), &in))
	var carry ClusterCarry
	require.NoError(t, readCarry(in.Carry, &carry))
	require.Equal(t, "k1", carry.SweptKey)
	require.Equal(t, "Ready", string(carry.Status.State))
	require.Equal(t, 2, carry.Failures["web"].Attempts)

	again, err := writeCarry(carry)
	require.NoError(t, err)
	var round ClusterCarry
	require.NoError(t, readCarry(again, &round))
	require.Equal(t, carry, round)

	var fresh ClusterCarry
	require.NoError(t, readCarry(nil, &fresh))
	require.Error(t, readCarry(json.RawMessage(`{"sweptKey":`), &fresh), "a truncated carry is an error, not a fresh start")
}
