package chartcheck

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/tests/testsrv/fieldvariants"
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

// Everything the child renders with is in the outcome's key: each field of the child's request (but the
// chart's files and the values, for which the deployment ID stands) and of the request's cluster identity,
// changed alone, changes the key. The fields are found by reflection, so one added later is covered.
func TestTheOutcomeKeyCoversEveryInputOfTheRender(t *testing.T) {
	r := Request{Cluster: "edge-1", ClusterDigest: "d1", DeploymentID: "id1"}
	req := childRequest{Release: "web", Namespace: "apps", Revision: 1}
	base := outcomeKey(r, req)
	checked := 0
	for path, v := range fieldvariants.Of(req, "child", "child.Files", "child.Values", "child.Cluster") {
		require.NotEqual(t, base, outcomeKey(r, v.(childRequest)), "changing %s alone must change the key", path)
		checked++
	}
	for _, path := range []string{"request.Cluster", "request.ClusterDigest", "request.DeploymentID", "request.ClusterNamespace",
		"request.Apply.ConfineToNamespace"} {
		v, ok := fieldvariants.Of(r, "request", "request.Apply.Chart", "request.Apply.PostRenderer")[path]
		require.True(t, ok, path)
		require.NotEqual(t, base, outcomeKey(v.(Request), req), "changing %s alone must change the key", path)
		checked++
	}
	require.GreaterOrEqual(t, checked, 8)
}
