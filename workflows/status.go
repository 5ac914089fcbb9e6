package workflows

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/activities"
)

// Bundle and cluster states, with Fleet's names.
const (
	StateReady       = "Ready"
	StateNotReady    = "NotReady"
	StateModified    = "Modified"
	StateOutOfSync   = "OutOfSync"
	StateWaitApplied = "WaitApplied"
	StateErrApplied  = "ErrApplied"
	StatePending     = "Pending"
)

// stateRank orders states worst first: ErrApplied > WaitApplied > NotReady > OutOfSync > Modified > Ready.
// Pending (not yet reached by the rollout) ranks just above Ready.
var stateRank = map[string]int{
	StateErrApplied:  7,
	StateWaitApplied: 6,
	StateNotReady:    5,
	StateOutOfSync:   4,
	StateModified:    3,
	StatePending:     2,
	StateReady:       1,
}

// Worse reports whether state a is worse than b.
func Worse(a, b string) bool { return stateRank[a] > stateRank[b] }

// BundleStatus is one bundle on one cluster. JSON names are a contract (`flotilla status -o json`).
type BundleStatus struct {
	Name           string                    `json:"name"`
	State          string                    `json:"state"`
	Message        string                    `json:"message"` // always present: scripts read it
	ResourceCounts activities.ResourceCounts `json:"resourceCounts"`
	Release        string                    `json:"release,omitempty"`
	Revision       int                       `json:"revision,omitempty"`
}

// ClusterStatus is one cluster of a GitRepo.
type ClusterStatus struct {
	Name           string                    `json:"name"`
	State          string                    `json:"state"`
	Message        string                    `json:"message"` // always present: scripts read it
	Commit         string                    `json:"commit,omitempty"`
	ResourceCounts activities.ResourceCounts `json:"resourceCounts"`
	Bundles        []BundleStatus            `json:"bundles"`
	// Reachable is false when the last check could not reach the cluster; LastSeen says when it last could.
	Reachable   bool      `json:"reachable"`
	LastChecked time.Time `json:"lastChecked,omitempty"`
	LastSeen    time.Time `json:"lastSeen,omitempty"`
	// Generation is the desired-state generation this status describes.
	Generation int64 `json:"generation"`
}

// Summary counts (bundle, cluster) pairs by state, with Fleet's names.
type Summary struct {
	DesiredReady int `json:"desiredReady"`
	Ready        int `json:"ready"`
	ErrApplied   int `json:"errApplied"`
	NotReady     int `json:"notReady"`
	WaitApplied  int `json:"waitApplied"`
	OutOfSync    int `json:"outOfSync"`
	Modified     int `json:"modified"`
	Pending      int `json:"pending"`
}

func (s *Summary) count(state string) {
	s.DesiredReady++
	switch state {
	case StateReady:
		s.Ready++
	case StateErrApplied:
		s.ErrApplied++
	case StateNotReady:
		s.NotReady++
	case StateWaitApplied:
		s.WaitApplied++
	case StateOutOfSync:
		s.OutOfSync++
	case StateModified:
		s.Modified++
	case StatePending:
		s.Pending++
	}
}

// GitRepoStatus is what the `status` query returns. JSON names are a contract.
type GitRepoStatus struct {
	Name     string `json:"name"`
	Repo     string `json:"repo"`
	Branch   string `json:"branch,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Paused   bool   `json:"paused,omitempty"`
	State    string `json:"state"`
	Message  string `json:"message"` // always present: scripts read it
	Error    string `json:"error,omitempty"`
	// Held says why the newest plan waits for approval (it would uninstall too much); the clusters keep
	// running the plan before it.
	Held string `json:"held,omitempty"`
	// Warnings name fleet.yaml keys of the planned commit that Flotilla does not act on.
	Warnings             []string                  `json:"warnings,omitempty"`
	Summary              Summary                   `json:"summary"`
	ReadyClusters        int                       `json:"readyClusters"`
	DesiredReadyClusters int                       `json:"desiredReadyClusters"`
	ResourceCounts       activities.ResourceCounts `json:"resourceCounts"`
	Bundles              []string                  `json:"bundles"`
	Clusters             []ClusterStatus           `json:"clusters"`
	LastPolled           time.Time                 `json:"lastPolled,omitempty"`
	PollingInterval      string                    `json:"pollingInterval,omitempty"`
	NextPoll             time.Time                 `json:"nextPoll,omitempty"`
}

// bundleStatus judges one observed bundle. failure is the last apply error for this desired state, if any.
func bundleStatus(o activities.BundleObservation, failure string) BundleStatus {
	s := BundleStatus{Name: o.Bundle, Release: o.ReleaseName, Revision: o.Release.Revision}
	s.ResourceCounts = o.Resources.Counts
	switch {
	case o.Error != "":
		s.State, s.Message = StateErrApplied, stuck(o.Release, o.Error)
	case failure != "":
		s.State, s.Message = StateErrApplied, stuck(o.Release, failure)
	case !o.Release.Exists:
		s.State, s.Message = StateWaitApplied, "release not installed yet"
	case o.Release.Status == "failed":
		s.State, s.Message = StateErrApplied, "helm: "+o.Release.Description
	case o.Release.Status != "deployed" || o.Release.DeploymentID != o.DesiredID:
		s.State, s.Message = StateWaitApplied, fmt.Sprintf("release %s is %s", o.ReleaseName, o.Release.Status)
	case o.Resources.Counts.NotReady > 0:
		s.State, s.Message = StateNotReady, strings.Join(o.Resources.NonReady, "; ")
	case o.Resources.Counts.Missing > 0 || o.Resources.Counts.Modified > 0 || o.Resources.Counts.Orphaned > 0:
		s.State, s.Message = StateModified, strings.Join(o.Resources.NonReady, "; ")
	default:
		s.State = StateReady
	}
	return s
}

// stuck says where a bundle that cannot move is held: what still runs (its commit, else its revision) and
// the error that stops it, so a failing bundle never looks as if it ran nothing. A latest revision that is
// not deployed (a failed upgrade) is not "where it runs": the error alone says more.
func stuck(live activities.ReleaseInfo, err string) string {
	switch {
	case !live.Exists || live.Status != "deployed":
		return err
	case live.Commit != "":
		return fmt.Sprintf("stuck at %s (revision %d): %s", live.Commit, live.Revision, err)
	default:
		return fmt.Sprintf("stuck at revision %d: %s", live.Revision, err)
	}
}

// summarizeCluster derives a cluster's state, message and counts from its bundles.
func summarizeCluster(c *ClusterStatus) {
	c.ResourceCounts = activities.ResourceCounts{}
	sortBundles(c.Bundles)
	c.State = StateReady
	var msgs []string
	for _, b := range c.Bundles {
		c.ResourceCounts.Add(b.ResourceCounts)
		if Worse(b.State, c.State) {
			c.State = b.State
		}
	}
	for _, b := range c.Bundles {
		if b.State != StateReady && len(msgs) < 10 {
			prefix := fmt.Sprintf("bundle %q: ", b.Name)
			m := prefix + b.State
			if b.Message != "" {
				m = prefix + strings.TrimPrefix(b.Message, prefix)
			}
			msgs = append(msgs, m)
		}
	}
	if !c.Reachable && c.State != StateErrApplied {
		c.State = StateErrApplied
	}
	if c.Message == "" || c.Reachable {
		c.Message = strings.Join(msgs, "; ")
	}
}

// sortBundles orders bundles worst first, then by name, so messages and output are stable.
func sortBundles(bs []BundleStatus) {
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].State != bs[j].State {
			return Worse(bs[i].State, bs[j].State)
		}
		return bs[i].Name < bs[j].Name
	})
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
func placedNowhere(st *GitRepoStatus) []string {
	if st.Commit == "" {
		return nil
	}
	placed := map[string]bool{}
	for _, c := range st.Clusters {
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
func aggregate(st *GitRepoStatus) {
	st.Summary = Summary{}
	st.ResourceCounts = activities.ResourceCounts{}
	st.ReadyClusters, st.DesiredReadyClusters = 0, len(st.Clusters)
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Name < st.Clusters[j].Name })
	st.State = StateReady
	type failing struct{ name, state, msg string }
	var bad []failing
	for _, c := range st.Clusters {
		st.ResourceCounts.Add(c.ResourceCounts)
		if len(c.Bundles) == 0 {
			st.Summary.count(c.State)
		}
		for _, b := range c.Bundles {
			st.Summary.count(b.State)
		}
		if c.State == StateReady {
			st.ReadyClusters++
		} else {
			bad = append(bad, failing{c.Name, c.State, c.Message})
		}
		if Worse(c.State, st.State) {
			st.State = c.State
		}
	}
	if st.Error != "" && Worse(StateErrApplied, st.State) {
		st.State = StateErrApplied
	}
	if st.Held != "" && Worse(StateOutOfSync, st.State) {
		st.State = StateOutOfSync
	}
	sort.SliceStable(bad, func(i, j int) bool { return Worse(bad[i].state, bad[j].state) })
	parts := []string{fmt.Sprintf("%d/%d clusters ready", st.ReadyClusters, st.DesiredReadyClusters)}
	if st.Error != "" {
		parts = append(parts, st.Error)
	}
	if st.Held != "" {
		parts = append(parts, st.Held)
	}
	if nowhere := placedNowhere(st); len(nowhere) > 0 && st.Error == "" {
		// Deploying nothing is never success: a Fleet user who left out targets, or whose selector
		// matches no cluster, must see it rather than "Ready, 0/0".
		if !Worse(st.State, StateNotReady) {
			st.State = StateNotReady
		}
		if len(st.Clusters) == 0 {
			parts = append(parts, MessageNoClusterMatches)
		} else {
			for _, b := range nowhere {
				parts = append(parts, fmt.Sprintf("bundle %q: %s", b, MessageNoClusterMatchesBundle))
			}
		}
	}
	for i, f := range bad {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(bad)-10))
			break
		}
		m := fmt.Sprintf("cluster %q: %s", f.name, f.state)
		if f.msg != "" {
			m = fmt.Sprintf("cluster %q: %s", f.name, f.msg)
		}
		parts = append(parts, m)
	}
	st.Message = strings.Join(parts, "; ")
}
