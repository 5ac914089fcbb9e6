package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/tests/env/localk8s"
	"github.com/flotilla-gitops/flotilla/tests/harness"
)

// Sync windows on real clusters. A deny window added to a running GitRepo reaches its cluster at once:
// a ConfigMap deleted by hand stays deleted (drift correction is held) and a new commit waits, saying so,
// until `flotilla sync --override-window` lets it through, recorded. An allow window open the first 20
// seconds of every minute lets a new commit in only then.
func TestSyncWindowsHoldChangesAndDriftCorrectionUntilOpenOrOverridden(t *testing.T) {
	t.Parallel()
	s := harness.Start(t, harness.Options{Clusters: []localk8s.ClusterOptions{{Name: "a"}}})
	s.AddConfinedClusters("a", harness.ConfinedCluster{Name: "frozen-1", Labels: map[string]string{"app": "frozen"}},
		harness.ConfinedCluster{Name: "nightly-1", Labels: map[string]string{"app": "nightly"}})
	repo := s.NewRepo(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "1")})
	spec := func(app string) fleet.GitRepoSpec {
		return fleet.GitRepoSpec{Repo: repo.URL(), Branch: "main", PollingInterval: "1s", CorrectDrift: &fleet.CorrectDrift{Enabled: true},
			Targets: []fleet.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}
	}
	s.StartGitRepo(api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "frozen"}, Spec: spec("frozen")},
		Flotilla: &api.RunOptions{CheckInterval: "1s"}})
	nightly := spec("nightly")
	nightly.SyncWindows = []fleet.SyncWindow{{Kind: fleet.WindowAllow, Schedule: "* * * * *", Duration: "20s"}}
	s.StartGitRepo(api.GitRepoInput{GitRepo: fleet.GitRepo{Metadata: fleet.ObjectMeta{Name: "nightly"}, Spec: nightly},
		Flotilla: &api.RunOptions{CheckInterval: "1s"}})
	v1 := s.WaitStatus("frozen", 3*time.Minute, "v1", harness.AllReady).Commit
	s.WaitStatus("nightly", 3*time.Minute, "v1 in a window", harness.AllReady)

	// A deny window that never ends, added to the running GitRepo.
	frozen := spec("frozen")
	frozen.SyncWindows = []fleet.SyncWindow{{Kind: fleet.WindowDeny, Schedule: "* * * * *", Duration: "2h"}}
	doc, err := json.Marshal(fleet.GitRepo{APIVersion: fleet.APIVersion, Kind: fleet.KindGitRepo, Metadata: fleet.ObjectMeta{Name: "frozen"}, Spec: frozen})
	require.NoError(t, err)
	s.Apply(string(doc))
	s.WaitStatus("frozen", 2*time.Minute, "the windows reached the cluster", func(st api.GitRepoStatus) bool {
		c, ok := harness.Cluster(st, "frozen-1")
		return ok && strings.HasPrefix(st.SyncWindow, "closed on 1 of 1 clusters") && c.Generation >= 2 && c.State == api.StateReady
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Kube("a").CoreV1().ConfigMaps("frozen-1").Delete(ctx, "app", metav1.DeleteOptions{}))
	s.WaitChecks("frozen", "frozen-1", 3)
	// A context of its own: three checks take longer than the delete's 10 s on a busy machine.
	getCtx, cancelGet := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelGet()
	_, err = s.Kube("a").CoreV1().ConfigMaps("frozen-1").Get(getCtx, "app", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "drift correction waits for the window: %v", err)

	v2 := repo.Commit(map[string]string{"web/cm.yaml": fmt.Sprintf(configMapV, "2")}, "v2")
	st := s.WaitStatus("frozen", 2*time.Minute, "v2 waits for the window", func(st api.GitRepoStatus) bool {
		c, _ := harness.Cluster(st, "frozen-1")
		return st.Commit == v2 && strings.Contains(c.Message, "waits for its sync window")
	})
	require.Equal(t, v1, mustCluster(t, st, "frozen-1").Commit)
	require.Contains(t, s.CLIRun("status", "frozen"), "Sync windows: closed on 1 of 1 clusters")
	out := s.CLIRun("sync", "frozen", "--override-window", "--by", "oncall", "--reason", "CVE fix")
	require.Contains(t, out, "windows overridden: commit "+api.ShortCommit(v2)+" goes to every cluster now")
	st = s.WaitStatus("frozen", 2*time.Minute, "v2 through the override", func(st api.GitRepoStatus) bool {
		return st.Commit == v2 && harness.AllReady(st)
	})
	require.Contains(t, st.SyncWindow, "overridden for commit "+api.ShortCommit(v2)+" by oncall")
	require.Equal(t, "2", s.ConfigMapData("a", "frozen-1", "app")["v"])
	require.Contains(t, s.CLIRun("history", "frozen"), "override window by oncall, commit "+api.ShortCommit(v2)+": CVE fix")

	// The allow window: v2 is applied within the first 20 seconds of a minute.
	s.WaitStatus("nightly", 3*time.Minute, "v2 in a window", func(st api.GitRepoStatus) bool { return st.Commit == v2 && harness.AllReady(st) })
	var hist []struct {
		Cluster     string           `json:"cluster"`
		Deployments []api.Deployment `json:"deployments"`
	}
	require.NoError(t, json.Unmarshal([]byte(s.CLIRun("history", "nightly", "-o", "json")), &hist))
	require.Len(t, hist, 1)
	var applied []time.Time
	for _, d := range hist[0].Deployments {
		applied = append(applied, d.At)
		// Recorded a moment after the decision, which a loaded machine may stretch: 10 s of grace, still
		// far from the 40 s of every minute the window is closed.
		require.Less(t, d.At.UTC().Second(), 30, "deployment of %s at %s: inside the window", api.ShortCommit(d.Commit), d.At)
	}
	require.Len(t, applied, 2, "v1 and v2")
}
