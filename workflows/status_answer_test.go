package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
)

// A status too large for one answer (Temporal refuses a query's answer over 2 MB) keeps its summary and
// every cluster's state, leaves bundle details out and says how to see them; past that, it lists the
// clusters that fit and where the next page starts. A page shows the clusters asked for in full.
func TestAStatusTooLargeForOneAnswerIsCutAndPaged(t *testing.T) {
	g := bigGitRepo(1000, 10, true)
	whole := g.view(t0)
	require.Greater(t, encodedSize(whole), 2<<20, "1,000 failing clusters of ten bundles are over Temporal's limit")
	st := boundedStatus(whole, statusAnswerLimit)
	require.LessOrEqual(t, encodedSize(st), statusAnswerLimit)
	require.Len(t, st.Clusters, 1000, "every cluster is listed")
	require.Empty(t, st.Clusters[42].Bundles)
	require.Equal(t, api.StateErrApplied, st.Clusters[42].State)
	require.Equal(t, whole.Summary, st.Summary)
	require.Contains(t, st.Partial, "bundle details are left out (flotilla status fleet --cluster NAME, --state STATE or --limit N shows them)")
	require.Contains(t, whole.Clusters[42].Message, st.Clusters[42].Message[:40], "a cut message keeps its beginning")
	require.Empty(t, st.Next)

	small := boundedStatus(bigGitRepo(3, 10, true).view(t0), statusAnswerLimit)
	require.Empty(t, small.Partial, "a status that fits is answered whole")
	require.Len(t, small.Clusters[0].Bundles, 10)

	tight := boundedStatus(whole, 64<<10)
	require.LessOrEqual(t, encodedSize(tight), 64<<10)
	require.NotEmpty(t, tight.Clusters)
	require.Less(t, len(tight.Clusters), 1000)
	require.Equal(t, tight.Clusters[len(tight.Clusters)-1].Name, tight.Next)
	require.Contains(t, tight.Partial, "of 1000 clusters are listed")

	one := statusPage(whole, api.StatusPageInput{Cluster: "edge-0042"})
	require.Len(t, one.Clusters, 1)
	require.Len(t, one.Clusters[0].Bundles, 10, "a page is in full")
	first := statusPage(whole, api.StatusPageInput{State: api.StateErrApplied, Limit: 2})
	require.Equal(t, []string{"edge-0000", "edge-0001"}, []string{first.Clusters[0].Name, first.Clusters[1].Name})
	require.Equal(t, "edge-0001", first.Next)
	second := statusPage(whole, api.StatusPageInput{State: api.StateErrApplied, Limit: 2, After: first.Next})
	require.Equal(t, "edge-0002", second.Clusters[0].Name)
	none := statusPage(whole, api.StatusPageInput{State: api.StateReady})
	require.Empty(t, none.Clusters)
	require.Empty(t, none.Next)
}
