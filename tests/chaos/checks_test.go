package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/cachedir"
)

// releases are the Helm releases every cluster gets, each from one bundle of the same name.
func releases() []string { return append(append([]string{}, manifestBundles...), chartName) }

// converged holds when the status says what the driver last asked for, everywhere, with exact counts: one
// ConfigMap per bundle.
func (k *soak) converged(st api.GitRepoStatus) bool {
	n := len(k.clusters)
	perCluster := len(releases())
	if st.Commit != k.head || st.ReadyClusters != n || st.DesiredReadyClusters != n || len(st.Clusters) != n {
		return false
	}
	if st.Summary.DesiredReady != n*perCluster || st.Summary.Ready != n*perCluster {
		return false
	}
	if st.ResourceCounts.DesiredReady != n*perCluster || st.ResourceCounts.Ready != n*perCluster {
		return false
	}
	for _, c := range st.Clusters {
		if c.State != api.StateReady || c.Commit != k.head || len(c.Bundles) != perCluster {
			return false
		}
		for _, b := range c.Bundles {
			if b.State != api.StateReady {
				return false
			}
			if strings.HasSuffix(b.Name, chartName) && b.ChartVersion != k.chartVersionString() {
				return false
			}
		}
	}
	return true
}

// converge waits for the status to show the last desired state after the last kill.
func (k *soak) converge() {
	start := time.Now()
	k.s.WaitStatus("chaos", 10*time.Minute, "every cluster Ready at the last commit and chart version after the last kill", k.converged)
	k.res.ConvergeSeconds = time.Since(start).Seconds()
	k.t.Logf("chaos: converged %.1fs after the last kill", k.res.ConvergeSeconds)
}

// checkReleases checks every release on every cluster against what it was given: at the last state, one
// Helm revision at most per desired state handed to it (a retried apply must not add one), none pending.
func (k *soak) checkReleases() {
	for _, c := range k.clusters {
		for _, rel := range releases() {
			h, err := k.s.ReleaseHistory(c.Name, "chaos", rel)
			require.NoError(k.t, err)
			if msg := k.releaseFailure(c.Name, rel, h); msg != "" {
				k.res.Failures = append(k.res.Failures, msg+"\n"+historyText(h))
				continue
			}
			k.res.Revisions += h[len(h)-1].Revision
		}
	}
	k.res.InvariantFailures = len(k.res.Failures)
	if len(k.res.Failures) > 0 {
		k.report()
		k.t.Fatalf("chaos (seed %d): %d invariant failures:\n%s", k.cfg.Seed, len(k.res.Failures), strings.Join(k.res.Failures, "\n\n"))
	}
}

func (k *soak) releaseFailure(cluster, rel string, h []agentclient.ReleaseState) string {
	where := fmt.Sprintf("cluster %s: release chaos/%s", cluster, rel)
	if msg := historyFailure(h, k.given[rel]); msg != "" {
		return where + ": " + msg
	}
	want, got := k.deployedVersion(cluster, rel)
	if got != want {
		return fmt.Sprintf("%s: holds version %q, the last desired state is %q", where, got, want)
	}
	return ""
}

// historyFailure says what is wrong with a release's Helm history after given desired states: Helm
// numbers revisions from 1 and keeps counting when it prunes old ones, so the latest revision's number
// is how many it ever made.
func historyFailure(h []agentclient.ReleaseState, given int) string {
	if len(h) == 0 {
		return "no release"
	}
	last := h[len(h)-1]
	seen := map[string]int{}
	for _, r := range h {
		if r.Pending() {
			return fmt.Sprintf("revision %d is left %s", r.Revision, r.Status)
		}
		if prev, dup := seen[r.DeploymentID]; dup && r.DeploymentID != "" {
			return fmt.Sprintf("revisions %d and %d deploy the same desired state %s", prev, r.Revision, r.DeploymentID)
		}
		seen[r.DeploymentID] = r.Revision
	}
	if last.Status != "deployed" {
		return fmt.Sprintf("the latest revision %d is %s, not deployed", last.Revision, last.Status)
	}
	if last.Revision > given {
		return fmt.Sprintf("%d revisions for %d desired states given", last.Revision, given)
	}
	return ""
}

// deployedVersion reads the version the release's ConfigMap holds in the cluster, beside the one it should.
func (k *soak) deployedVersion(cluster, rel string) (want, got string) {
	name, want := rel, fmt.Sprintf("v%d", k.versions[rel])
	if rel == chartName {
		name, want = rel+"-"+chartName, k.chartVersionString()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cm, err := k.s.Kube(cluster).CoreV1().ConfigMaps("chaos").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return want, "(" + err.Error() + ")"
	}
	return want, cm.Data["version"]
}

func historyText(h []agentclient.ReleaseState) string {
	var b strings.Builder
	for _, r := range h {
		fmt.Fprintf(&b, "  revision %d %s deployment %s at %s: %s\n", r.Revision, r.Status, r.DeploymentID,
			r.Updated.Format(time.RFC3339Nano), r.Description)
	}
	return b.String()
}

// stopFlotilla stops the workers and agents as an operator would (SIGTERM), so that what is left in their
// caches afterwards was left by a kill and never cleaned.
func (k *soak) stopFlotilla() {
	if k.s.Worker != nil {
		require.NoError(k.t, k.s.Worker.Stop(10*time.Second))
	}
	require.NoError(k.t, k.other.Stop(10*time.Second))
	for _, a := range k.agents {
		require.NoError(k.t, a.Stop(10*time.Second))
	}
}

func (k *soak) checkNothingLeftInCaches() {
	var left []string
	err := filepath.WalkDir(k.s.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // the clusters' own folders may change under the walk
		}
		for _, p := range cachedir.TempPrefixes {
			if strings.HasPrefix(d.Name(), p) {
				left = append(left, path)
				if d.IsDir() {
					return fs.SkipDir
				}
			}
		}
		return nil
	})
	require.NoError(k.t, err)
	k.res.LeftBehind = append(k.res.LeftBehind, left...)
	require.Empty(k.t, left, "temporary files left in the caches of workers and agents that were killed")
}

// checkNothingLeftBehind runs after every cleanup: no process of the fleet runs on, and nothing is left in
// the temporary folder the processes were given.
func (k *soak) checkNothingLeftBehind(procTmp string) {
	var left []string
	for pid, p := range k.pids {
		if running(pid, p.start) {
			left = append(left, fmt.Sprintf("%s (pid %d) still runs", p.what, pid))
		}
	}
	entries, err := os.ReadDir(procTmp)
	if err != nil {
		left = append(left, err.Error())
	}
	for _, e := range entries {
		left = append(left, "left in the processes' temporary folder: "+e.Name())
	}
	sort.Strings(left)
	if len(left) > 0 {
		k.t.Errorf("chaos: left behind:\n%s", strings.Join(left, "\n"))
	}
}

// result is what a soak reports, as JSON beside `make bench`'s.
type result struct {
	Seed        uint64         `json:"seed"`
	Kills       int            `json:"kills"`
	KillsByKind map[string]int `json:"killsByKind"`
	// Commits and ChartVersions are the desired states the driver made; Revisions the Helm revisions the
	// releases got in all.
	Commits           int      `json:"commits"`
	ChartVersions     int      `json:"chartVersions"`
	Revisions         int      `json:"revisions"`
	SoakSeconds       float64  `json:"soakSeconds"`
	ConvergeSeconds   float64  `json:"convergeSecondsAfterLastKill"`
	Clusters          int      `json:"clusters"`
	AgentClusters     int      `json:"agentClusters"`
	InvariantFailures int      `json:"invariantFailures"`
	Failures          []string `json:"failures,omitempty"`
	LeftBehind        []string `json:"leftBehind,omitempty"`
}

func (k *soak) report() {
	k.res.Clusters, k.res.AgentClusters = len(k.clusters), k.cfg.AgentClusters
	kinds := make([]string, 0, len(k.res.KillsByKind))
	for kind := range k.res.KillsByKind {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: seed %d, %d kills in %.0fs over %d clusters (%d through agents)\n", k.res.Seed, k.res.Kills,
		k.res.SoakSeconds, k.res.Clusters, k.res.AgentClusters)
	for _, kind := range kinds {
		fmt.Fprintf(&b, "  kills of %-10s %d\n", kind, k.res.KillsByKind[kind])
	}
	fmt.Fprintf(&b, "  commits %d, chart versions %d, Helm revisions %d\n", k.res.Commits, k.res.ChartVersions, k.res.Revisions)
	fmt.Fprintf(&b, "  converged %.1fs after the last kill; invariant failures %d\n", k.res.ConvergeSeconds, k.res.InvariantFailures)
	k.t.Log(b.String())
	if k.cfg.Out != "" {
		data, err := json.MarshalIndent(k.res, "", "  ")
		require.NoError(k.t, err)
		require.NoError(k.t, os.MkdirAll(filepath.Dir(k.cfg.Out), 0o755))
		require.NoError(k.t, os.WriteFile(k.cfg.Out, append(data, '\n'), 0o644))
	}
}
