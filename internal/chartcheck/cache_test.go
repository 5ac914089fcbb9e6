package chartcheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
)

func TestAChartThatPassedIsNotCheckedAgainOnTheSameClusterAndRevision(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	ctx := context.Background()
	r := install(chartWith(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"), nil)
	require.NoError(t, c.Check(ctx, r))
	require.NoError(t, c.Check(ctx, r))
	require.EqualValues(t, 1, c.started.Load(), "the second check is the first one's outcome")

	// What a template can see differently is checked again: another cluster, another inventory entry, an
	// upgrade, another revision.
	other := r
	other.Cluster = "edge-2"
	require.NoError(t, c.Check(ctx, other))
	moved := r
	moved.ClusterDigest = "d2"
	require.NoError(t, c.Check(ctx, moved))
	upgrade := r
	upgrade.Latest = agentclient.ReleaseState{Exists: true, Revision: 1}
	require.NoError(t, c.Check(ctx, upgrade))
	upgrade.Latest.Revision = 2
	require.NoError(t, c.Check(ctx, upgrade))
	require.EqualValues(t, 5, c.started.Load())

	// Without a deployment ID nothing identifies the chart and values: always checked.
	anonymous := r
	anonymous.DeploymentID = ""
	require.NoError(t, c.Check(ctx, anonymous))
	require.NoError(t, c.Check(ctx, anonymous))
	require.EqualValues(t, 7, c.started.Load())
}

// A bomb refused on a cluster is refused again there without another child: the workflow retries a
// failed bundle, and each retry would otherwise cost the limit again.
func TestABombRefusedAtALimitIsNotRunAgain(t *testing.T) {
	c := newTestChecker(t, DefaultLimits())
	r := install(chartWith(t, "data: {{ repeat 2000000000 \"x\" }}\n"), nil)
	first := c.Check(context.Background(), r)
	requireLimit(t, first, LimitMemory, `chart "web": rendering exceeded the 1 GiB memory limit for chart templates`)
	require.Equal(t, first, c.Check(context.Background(), r))
	require.EqualValues(t, 1, c.started.Load())
}

func TestTheCacheIsBounded(t *testing.T) {
	o := newOutcomes(3)
	key := func(i int) [32]byte { return outcomeKey(Request{DeploymentID: fmt.Sprint(i)}, childRequest{}) }
	for i := range 5 {
		o.put(key(i), nil)
	}
	require.Equal(t, 3, o.len())
	_, ok := o.get(key(1))
	require.False(t, ok, "the least recently used went first")
	o.get(key(2)) // used: now the most recent
	o.put(key(5), nil)
	_, ok = o.get(key(2))
	require.True(t, ok)
	_, ok = o.get(key(3))
	require.False(t, ok)
}
