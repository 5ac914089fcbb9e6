package activities

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

// A Secret's values never reach a diff: which key changes is shown, not what it holds; other values are
// quoted as JSON, redacted first, and cut to a readable size.
func TestADiffHidesSecretValuesAndCutsLongOnes(t *testing.T) {
	long := strings.Repeat("x", 1000)
	changes := []agentclient.ObjectChange{
		{Ref: agentclient.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "web", Name: "creds"}, Change: agentclient.ChangeUpdate,
			Fields: []agentclient.FieldChange{{Path: "data.password", Desired: "bmV3", Live: "b2xk"}, {Path: "metadata.labels.tier", Desired: "a"}}},
		{Ref: agentclient.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "cfg"}, Change: agentclient.ChangeUpdate,
			Fields: []agentclient.FieldChange{{Path: "data.token", Desired: "hunter2-from-vault", Live: nil}, {Path: "data.big", Desired: long, Live: "y"}}},
	}
	redact := func(s string) string { return strings.ReplaceAll(s, "hunter2-from-vault", "[redacted]") }
	out := objectDiffs(changes, redact)
	require.Equal(t, api.FieldDiff{Path: "data.password", Live: `"***"`, Desired: `"***"`}, out[0].Fields[0])
	require.Equal(t, api.FieldDiff{Path: "metadata.labels.tier", Desired: `"a"`}, out[0].Fields[1])
	require.Equal(t, api.FieldDiff{Path: "data.token", Desired: `"[redacted]"`}, out[1].Fields[0])
	big := out[1].Fields[1].Desired
	require.Less(t, len(big), maxFieldValue+40)
	require.True(t, strings.HasSuffix(big, "… (1002 bytes)"), big)
}

// The action is the cluster workflow's decision for the release as it stands.
func TestTheNextActionFollowsTheReleaseState(t *testing.T) {
	for _, tc := range []struct {
		st     agentclient.ReleaseState
		action string
	}{
		{agentclient.ReleaseState{}, api.DiffInstall},
		{agentclient.ReleaseState{Exists: true, Status: "deployed", DeploymentID: "s-1"}, api.DiffNone},
		{agentclient.ReleaseState{Exists: true, Status: "deployed", DeploymentID: "s-0"}, api.DiffUpgrade},
		{agentclient.ReleaseState{Exists: true, Status: "failed", DeploymentID: "s-1"}, api.DiffUpgrade},
		{agentclient.ReleaseState{Exists: true, Status: "pending-upgrade", DeploymentID: "s-1"}, api.DiffUpgrade},
	} {
		action, _ := nextAction(tc.st, "s-1")
		require.Equal(t, tc.action, action, "%+v", tc.st)
	}
}
