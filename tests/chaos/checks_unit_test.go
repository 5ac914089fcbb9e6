package chaos

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
)

func rev(n int, status, id string) agentclient.ReleaseState {
	return agentclient.ReleaseState{Exists: true, Revision: n, Status: status, DeploymentID: id}
}

// The soak's verdict on a history must be able to fail: each way a retried or interrupted apply shows in
// Helm's history is caught.
func TestHistoryFailureCatchesEachWayARetryShows(t *testing.T) {
	require.Empty(t, historyFailure([]agentclient.ReleaseState{rev(4, "superseded", "a"), rev(5, "deployed", "b")}, 5))
	require.Equal(t, "no release", historyFailure(nil, 1))
	require.Equal(t, "revisions 1 and 2 deploy the same desired state a",
		historyFailure([]agentclient.ReleaseState{rev(1, "superseded", "a"), rev(2, "deployed", "a")}, 2))
	require.Equal(t, "revision 2 is left pending-upgrade",
		historyFailure([]agentclient.ReleaseState{rev(1, "deployed", "a"), rev(2, "pending-upgrade", "b")}, 2))
	require.Equal(t, "the latest revision 2 is failed, not deployed",
		historyFailure([]agentclient.ReleaseState{rev(1, "superseded", "a"), rev(2, "failed", "b")}, 2))
	require.Equal(t, "3 revisions for 2 desired states given",
		historyFailure([]agentclient.ReleaseState{rev(2, "superseded", "a"), rev(3, "deployed", "b")}, 2))
}

// A PID names a process of the fleet only with its start time: one reused by another process after a
// long soak is not "left behind".
func TestAProcessIsLeftBehindOnlyIfItIsTheOneRecorded(t *testing.T) {
	self := os.Getpid()
	start := startOf(self)
	require.NotEmpty(t, start)
	require.True(t, running(self, start))
	require.False(t, running(self, start+"0"), "the same PID with another start time is another process")
	require.Empty(t, startOf(1<<30), "no such process")
}
