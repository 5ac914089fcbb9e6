package activities

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

// Status counts the objects of a release that is not applied yet as waitApplied, so they must be read: a
// deployed revision's come with the check, a pending revision's (the one being installed or upgraded) are
// read on their own; a failed or missing release has none to count.
func TestTheObjectsOfAPendingRevisionAreCounted(t *testing.T) {
	live := []agentclient.ObjectStatus{object("ConfigMap", "a", agentclient.StateReady, "")}
	pending := []agentclient.ObjectStatus{
		object("ConfigMap", "a", agentclient.StateReady, ""),
		object("ConfigMap", "b", agentclient.StateMissing, ""),
	}
	readPending := func() ([]agentclient.ObjectStatus, error) { return pending, nil }
	release := func(status string) agentclient.ReleaseState {
		return agentclient.ReleaseState{Exists: status != "", Status: status, Revision: 2}
	}

	s, err := releaseObjects(release("deployed"), live, readPending)
	require.NoError(t, err)
	require.Equal(t, api.ResourceCounts{DesiredReady: 1, Ready: 1}, s.Counts)

	for _, status := range []string{"pending-install", "pending-upgrade", "pending-rollback"} {
		s, err = releaseObjects(release(status), nil, readPending)
		require.NoError(t, err)
		require.Equal(t, api.ResourceCounts{DesiredReady: 2, Ready: 1, Missing: 1}, s.Counts, status)
		require.True(t, s.Checked, status)
	}

	for _, status := range []string{"", "failed", "uninstalling"} {
		s, err = releaseObjects(release(status), nil, readPending)
		require.NoError(t, err)
		require.Equal(t, api.ResourceSummary{}, s, "nothing to count for a release that is %q", status)
	}

	// Counting is not worth failing the check, unless the cluster is gone.
	broken := func() ([]agentclient.ObjectStatus, error) {
		return nil, errors.New("manifest of revision 2: yaml: bad indentation")
	}
	s, err = releaseObjects(release("pending-upgrade"), nil, broken)
	require.NoError(t, err)
	require.Equal(t, api.ResourceSummary{}, s)
	gone := func() ([]agentclient.ObjectStatus, error) { return nil, context.DeadlineExceeded }
	_, err = releaseObjects(release("pending-upgrade"), nil, gone)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
