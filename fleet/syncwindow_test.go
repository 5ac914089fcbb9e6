package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Argo CD's rules: no window, always open; an allow window, open only while one is active; an active
// deny window closes whatever allows. Change says when that flips next.
func TestSyncWindowsOpenAndCloseAsArgoCDs(t *testing.T) {
	nightly := SyncWindow{Kind: WindowAllow, Schedule: "0 22 * * *", Duration: "8h"}
	freeze := SyncWindow{Kind: WindowDeny, Schedule: "0 0 * * 6", Duration: "48h"} // weekends
	for _, c := range []struct {
		name    string
		windows []SyncWindow
		now     string
		open    bool
		change  string
	}{
		{"no window", nil, "2026-11-25T12:00:00Z", true, ""},
		{"before the nightly window", []SyncWindow{nightly}, "2026-11-25T12:00:00Z", false, "2026-11-25T22:00:00Z"},
		{"in it", []SyncWindow{nightly}, "2026-11-25T23:30:00Z", true, "2026-11-26T06:00:00Z"},
		{"its last minute", []SyncWindow{nightly}, "2026-11-26T05:59:00Z", true, "2026-11-26T06:00:00Z"},
		{"a deny window wins", []SyncWindow{nightly, freeze}, "2026-11-28T23:00:00Z", false, "2026-11-30T00:00:00Z"}, // inside Sunday night's allow window
		{"deny alone, outside it", []SyncWindow{freeze}, "2026-11-25T12:00:00Z", true, "2026-11-28T00:00:00Z"},
	} {
		st := WindowsAt(c.windows, at(c.now))
		require.Equal(t, c.open, st.Open, c.name)
		if c.change == "" {
			require.True(t, st.Change.IsZero(), c.name)
		} else {
			require.Equal(t, at(c.change), st.Change, c.name)
		}
	}
}

func TestASyncWindowThatCannotBeUsedIsNamed(t *testing.T) {
	g := GitRepo{Metadata: ObjectMeta{Name: "shop"}, Spec: GitRepoSpec{Repo: "https://git.example.com/shop.git", SyncWindows: []SyncWindow{
		{Kind: WindowAllow, Schedule: "0 22 * * *", Duration: "8h"}, {Kind: "maybe", Schedule: "* * * * *", Duration: "1h"}}}}
	require.EqualError(t, ValidateGitRepo(g), `gitrepo "shop": spec.syncWindows[1]: kind "maybe": want allow or deny`)
	g.Spec.SyncWindows[1] = SyncWindow{Kind: WindowDeny, Schedule: "at noon", Duration: "1h"}
	require.ErrorContains(t, ValidateGitRepo(g), `spec.syncWindows[1]: schedule "at noon"`)
	g.Spec.SyncWindows[1] = SyncWindow{Kind: WindowDeny, Schedule: "0 12 * * *", Duration: "forever"}
	require.ErrorContains(t, ValidateGitRepo(g), `spec.syncWindows[1]: duration "forever": not a positive duration`)
}
