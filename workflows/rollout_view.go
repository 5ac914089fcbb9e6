package workflows

import (
	"fmt"

	"github.com/flotilla-gitops/flotilla/api"
)

// clusterView is one planned cluster's status: its last report, judged against what the GitRepo wants
// now, or Pending when it has not reported. It never shows a stale Ready. A cluster that does not run the
// wanted commit and is not being handed it (paused, or the rollout window is full) is staged, bundle by
// bundle, as Fleet shows a deployment whose newer one waits.
//
// held says why a rolloutStrategy holds a cluster back (stage), so its message names the partition.
func (r *rollout) clusterView(plan *api.Plan, pc api.PlannedCluster, commit string, paused bool, held map[string]string) api.ClusterStatus {
	e := r.Clusters[pc.Name]
	why, isHeld := held[pc.Name]
	if pinned, ok := r.ungated[pc.Name]; ok {
		return r.pinnedView(plan, pc, pinned)
	}
	if e == nil || e.Status == nil {
		cs := api.ClusterStatus{Name: pc.Name, State: api.StatePending, Message: "waiting for its cluster workflow", Reachable: true}
		for _, i := range pc.Bundles {
			cs.Bundles = append(cs.Bundles, api.BundleStatus{Name: plan.Bundles[i].Name, State: api.StatePending})
		}
		switch {
		case paused || pc.Paused:
			cs.Message = "" // nothing is handed over while paused, so no workflow is coming
			stage(&cs, fmt.Sprintf("paused; commit %s is waiting", api.ShortCommit(commit)))
		case isHeld:
			cs.Message = ""
			stage(&cs, fmt.Sprintf("commit %s %s", api.ShortCommit(commit), why))
		}
		return cs
	}
	cs := *e.Status
	cs.Bundles = append([]api.BundleStatus(nil), cs.Bundles...)
	d := e.Delivered
	switch {
	case (paused || pc.Paused) && cs.Commit != commit:
		stage(&cs, fmt.Sprintf("paused at commit %s; %s is waiting", api.ShortCommit(cs.Commit), api.ShortCommit(commit)))
	case d != nil && d.Generation > cs.Generation && cs.Reachable:
		cs.State = api.StateWaitApplied
		cs.Message = fmt.Sprintf("applying commit %s", api.ShortCommit(commit))
	case isHeld && cs.Reachable:
		stage(&cs, fmt.Sprintf("at commit %s; %s %s", api.ShortCommit(cs.Commit), api.ShortCommit(commit), why))
	case cs.Commit != commit && cs.Reachable:
		// Not delivered yet (the rollout window is full): what it runs is not what the GitRepo wants.
		stage(&cs, fmt.Sprintf("at commit %s; %s waits for the rollout window", api.ShortCommit(cs.Commit), api.ShortCommit(commit)))
	}
	return cs
}

// pinnedView is a cluster a rollback holds on an earlier commit: never Ready at the GitRepo's commit,
// OutOfSync with who pinned it, unless it ranks worse.
func (r *rollout) pinnedView(plan *api.Plan, pc api.PlannedCluster, why string) api.ClusterStatus {
	e := r.Clusters[pc.Name]
	var cs api.ClusterStatus
	if e == nil || e.Status == nil {
		cs = api.ClusterStatus{Name: pc.Name, State: api.StatePending, Reachable: true}
	} else {
		cs = *e.Status
		cs.Bundles = append([]api.BundleStatus(nil), cs.Bundles...)
	}
	stage(&cs, why)
	return cs
}
