package workflows

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flotilla-gitops/flotilla/api"
)

// bundleStatus judges one observed bundle. failure is the last apply error for this desired state, if any.
func bundleStatus(o api.BundleObservation, failure string) api.BundleStatus {
	s := api.BundleStatus{Name: o.Bundle, Release: o.ReleaseName, Revision: o.Release.Revision,
		ChartVersion: o.ChartVersion, ChartDigest: o.ChartDigest}
	s.ResourceCounts = o.Resources.Counts
	switch {
	case o.Error != "":
		s.State, s.Message = api.StateErrApplied, stuck(o.Release, o.Error)
	case failure != "":
		s.State, s.Message = api.StateErrApplied, stuck(o.Release, failure)
	case o.Paused && (!o.Release.Exists || o.Release.DeploymentID != o.DesiredID):
		s.State, s.Message = api.StateOutOfSync, "paused (fleet.yaml): changes wait"
	case !o.Release.Exists:
		s.State, s.Message = api.StateWaitApplied, "release not installed yet"
	case o.Release.Status == api.ReleaseFailed:
		s.State, s.Message = api.StateErrApplied, "helm: "+o.Release.Description
	case o.Release.Status != api.ReleaseDeployed || o.Release.DeploymentID != o.DesiredID:
		s.State, s.Message = api.StateWaitApplied, fmt.Sprintf("release %s is %s", o.ReleaseName, o.Release.Status)
	case o.Resources.Counts.NotReady > 0:
		s.State, s.Message = api.StateNotReady, strings.Join(o.Resources.NonReady, "; ")
	case o.Resources.Counts.Missing > 0 || o.Resources.Counts.Modified > 0 || o.Resources.Counts.Orphaned > 0:
		s.State, s.Message = api.StateModified, strings.Join(o.Resources.NonReady, "; ")
	default:
		s.State = api.StateReady
	}
	if s.State == api.StateWaitApplied || o.Release.Status.Pending() {
		s.ResourceCounts = waitingCounts(s.ResourceCounts)
	}
	return s
}

// waitingFor is the status of a bundle whose new desired state waits for its dependencies (dependsOn):
// WaitApplied, not an error, naming what it waits for. The failure of an earlier attempt stays in view:
// it is what will be tried again.
func waitingFor(s api.BundleStatus, o api.BundleObservation, waiting string) api.BundleStatus {
	if s.State == api.StateErrApplied {
		waiting += "; " + s.Message
	}
	s.State, s.Message, s.ResourceCounts = api.StateWaitApplied, waiting, waitingCounts(o.Resources.Counts)
	return s
}

// onCycle is the status of a bundle the plan found on a dependsOn cycle, which is never applied.
func onCycle(s api.BundleStatus, o api.BundleObservation, cycle string) api.BundleStatus {
	s.State, s.Message = api.StateErrApplied, stuck(o.Release, cycle)
	return s
}

// waitingCounts counts the objects of a bundle whose release is not applied yet as Fleet counts a
// deployment in WaitApplied: every desired object is waitApplied, neither ready nor not, since what it
// will be is not applied yet. The desired objects known are those of the revision being applied (a
// pending one) or being replaced (one deployed from another deployment ID: the new revision's objects
// exist only once Helm renders them at apply). Orphans are live and not desired, so they stay orphaned.
// A release not installed yet has no objects to count: its desiredReady is unknown and reported as 0.
func waitingCounts(c api.ResourceCounts) api.ResourceCounts {
	return api.ResourceCounts{DesiredReady: c.DesiredReady, WaitApplied: c.DesiredReady, Orphaned: c.Orphaned}
}

// stuck says where a bundle that cannot move is held: what still runs (its commit, else its revision) and
// the error that stops it, so a failing bundle never looks as if it ran nothing. A latest revision that is
// not deployed (a failed upgrade) is not "where it runs": the error alone says more.
func stuck(live api.ReleaseInfo, err string) string {
	switch {
	case !live.Exists || live.Status != api.ReleaseDeployed:
		return err
	case live.Commit != "":
		return fmt.Sprintf("stuck at %s (revision %d): %s", live.Commit, live.Revision, err)
	default:
		return fmt.Sprintf("stuck at revision %d: %s", live.Revision, err)
	}
}

// summarizeCluster derives a cluster's state, message and counts from its bundles.
func summarizeCluster(c *api.ClusterStatus) {
	c.ResourceCounts = api.ResourceCounts{}
	sortBundles(c.Bundles)
	c.State = api.StateReady
	var msgs []string
	for _, b := range c.Bundles {
		c.ResourceCounts.Add(b.ResourceCounts)
		if api.Worse(b.State, c.State) {
			c.State = b.State
		}
	}
	for _, b := range c.Bundles {
		if b.State != api.StateReady && len(msgs) < 10 {
			prefix := fmt.Sprintf("bundle %q: ", b.Name)
			m := prefix + b.State
			if b.Message != "" {
				m = prefix + strings.TrimPrefix(b.Message, prefix)
			}
			msgs = append(msgs, m)
		}
	}
	switch {
	case c.Offline:
		c.State = api.StateOffline
	case !c.Reachable && c.State != api.StateErrApplied:
		c.State = api.StateErrApplied
	}
	if c.Message == "" || c.Reachable {
		c.Message = strings.Join(msgs, "; ")
	}
}

// sortBundles orders bundles worst first, then by name, so messages and output are stable.
func sortBundles(bs []api.BundleStatus) {
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].State != bs[j].State {
			return api.Worse(bs[i].State, bs[j].State)
		}
		return bs[i].Name < bs[j].Name
	})
}

// stage shows a cluster whose newer desired state waits (its GitRepo or itself is paused, or the rollout
// window is full) as Fleet shows deployments whose newer one is staged: each bundle takes api.Staged of
// its state, saying why first when that makes it OutOfSync, and the cluster takes the worst of its
// bundles by rank (ErrApplied while unreachable, as summarizeCluster). The GitRepo knows commits, not
// what each cluster renders from them, so every bundle of the cluster waits, even one the new commit
// leaves as it is. The cluster's message leads with what decides its state: why, when it is OutOfSync.
func stage(cs *api.ClusterStatus, why string) {
	state := api.Staged(cs.State)
	if len(cs.Bundles) > 0 {
		state = api.StateReady
	}
	for i := range cs.Bundles {
		b := &cs.Bundles[i]
		if staged := api.Staged(b.State); staged != b.State {
			b.State, b.Message = staged, joinNonEmpty(why, b.Message)
		}
		if api.Worse(b.State, state) {
			state = b.State
		}
	}
	switch {
	case cs.Offline:
		state = api.StateOffline
	case !cs.Reachable:
		state = api.StateErrApplied
	}
	sortBundles(cs.Bundles)
	if state == api.StateOutOfSync {
		cs.Message = joinNonEmpty(why, cs.Message)
	} else {
		cs.Message = joinNonEmpty(cs.Message, why)
	}
	cs.State = state
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// Messages of a GitRepo or bundle that is deployed nowhere.
const (
	MessageNoClusterMatches       = "no registered cluster matches the targets"
	MessageNoClusterMatchesBundle = "no registered cluster matches its targets (or targetCustomizations say doNotDeploy everywhere)"
)

// placedNowhere lists the bundles of a planned commit that no cluster receives. A cluster not yet reported
// lists every bundle targeted at it, so a bundle shows here only once every cluster that might take it has
// said it does not (a targetCustomization with doNotDeploy), or when no target matches it at all. A
// cluster that was never reached has said nothing about its bundles, so while one exists nothing is
// called nowhere.
func placedNowhere(st *api.GitRepoStatus) []string {
	if st.Commit == "" {
		return nil
	}
	placed := map[string]bool{}
	for i := range st.Clusters {
		c := &st.Clusters[i]
		if !c.Reachable && len(c.Bundles) == 0 {
			return nil
		}
		for _, b := range c.Bundles {
			placed[b.Name] = true
		}
	}
	var nowhere []string
	for _, b := range st.Bundles {
		if !placed[b] {
			nowhere = append(nowhere, b)
		}
	}
	return nowhere
}

// aggregate builds the GitRepo status from per-cluster statuses. Clusters are listed by name.
func aggregate(st *api.GitRepoStatus) {
	st.Summary = api.Summary{}
	st.ResourceCounts = api.ResourceCounts{}
	st.ReadyClusters, st.DesiredReadyClusters = 0, len(st.Clusters)
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Name < st.Clusters[j].Name })
	st.State = api.StateReady
	type failing struct{ name, state, msg string }
	var bad []failing
	for i := range st.Clusters {
		c := &st.Clusters[i]
		st.ResourceCounts.Add(c.ResourceCounts)
		if len(c.Bundles) == 0 {
			st.Summary.Count(c.State)
		}
		for _, b := range c.Bundles {
			st.Summary.Count(b.State)
		}
		if c.State == api.StateReady {
			st.ReadyClusters++
		} else {
			bad = append(bad, failing{c.Name, c.State, c.Message})
		}
		if api.Worse(c.State, st.State) {
			st.State = c.State
		}
	}
	if st.Error != "" && api.Worse(api.StateErrApplied, st.State) {
		st.State = api.StateErrApplied
	}
	// A held plan leaves every cluster on the plan before it: OutOfSync, unless a cluster ranks higher.
	if st.Held != "" && api.Worse(api.StateOutOfSync, st.State) {
		st.State = api.StateOutOfSync
	}
	badClusters := len(bad)
	bad = worstFirst(bad, 10, func(f failing) string { return f.state })
	parts := []string{fmt.Sprintf("%d/%d clusters ready", st.ReadyClusters, st.DesiredReadyClusters)}
	if st.Error != "" {
		parts = append(parts, st.Error)
	}
	if st.Held != "" {
		parts = append(parts, st.Held)
	}
	if st.Rollout != nil && st.Rollout.Halted != "" {
		parts = append(parts, st.Rollout.Message)
	}
	if nowhere := placedNowhere(st); len(nowhere) > 0 && st.Error == "" {
		// Deploying nothing is never success: a Fleet user who left out targets, or whose selector
		// matches no cluster, must see it rather than "Ready, 0/0". NotReady is the floor; a cluster in a
		// state that ranks higher shows through, and the message names the bundle either way.
		if !api.Worse(st.State, api.StateNotReady) {
			st.State = api.StateNotReady
		}
		if len(st.Clusters) == 0 {
			parts = append(parts, MessageNoClusterMatches)
		} else {
			for _, b := range nowhere {
				parts = append(parts, fmt.Sprintf("bundle %q: %s", b, MessageNoClusterMatchesBundle))
			}
		}
	}
	for _, f := range bad {
		prefix := fmt.Sprintf("cluster %q: ", f.name)
		m := prefix + f.state
		if f.msg != "" {
			// A cluster's own message may already name it (unreachable, offline): once is enough.
			m = prefix + strings.TrimPrefix(f.msg, prefix)
		}
		parts = append(parts, m)
	}
	if badClusters > len(bad) {
		parts = append(parts, fmt.Sprintf("and %d more", badClusters-len(bad)))
	}
	st.Message = strings.Join(parts, "; ")
}

// worstFirst is the first n of items stably sorted worst state first, the clusters the message names: at
// 10,000 clusters mid-rollout, sorting every one not Ready on every pass of the GitRepo was wasted on all
// but ten.
func worstFirst[T any](items []T, n int, state func(T) string) []T {
	top := make([]T, 0, n+1)
	for _, it := range items {
		// After every one at least as bad: equals keep their order, as a stable sort keeps it.
		at := len(top)
		for at > 0 && api.Worse(state(it), state(top[at-1])) {
			at--
		}
		if at >= n {
			continue
		}
		top = append(top[:at], append([]T{it}, top[at:]...)...)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}
