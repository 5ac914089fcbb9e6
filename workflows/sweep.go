package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// What leaves a cluster is uninstalled: a bundle deleted from the repository, a bundle the cluster no
// longer gets (doNotDeploy), the old release of a bundle whose release name or namespace changed. The
// cluster workflow sweeps such releases whenever the set of releases its target should have changes,
// and once when a run starts, since a fresh run does not know what an earlier one deployed. Only an
// observation that succeeded decides, and a bundle that did not render keeps every release it has:
// nothing is removed because a listing, a fetch or a render failed.

// sweepFor returns the sweep this observation calls for, or nil when the last successful sweep kept
// exactly these releases (or this run does not sweep, or the cluster is paused), with its key.
func (r *clusterRun) sweepFor(ctx workflow.Context, obs api.Observation) (*api.Sweep, string) {
	if r.in.Paused || !r.sweeps(ctx) {
		return nil, ""
	}
	s := &api.Sweep{KeepResources: r.in.Target.Options.KeepResources}
	for _, o := range obs.Bundles {
		switch {
		case o.Error != "":
			s.KeepBundles = append(s.KeepBundles, o.Bundle)
		case o.Deploy:
			s.Releases = append(s.Releases, api.ReleaseRef{Bundle: o.Bundle, Namespace: o.Namespace, Name: o.ReleaseName})
		}
	}
	key := hashOf(s)
	if key == r.carry.SweptKey {
		return nil, ""
	}
	return s, key
}

// sweeps reports whether this run sweeps: every run started with the sweep shape, and a run started
// before it from the point it first asks (recorded as a version marker, so its older history replays).
func (r *clusterRun) sweeps(ctx workflow.Context) bool {
	if r.sweeping == 0 {
		r.sweeping = -1
		if r.in.Shape >= clusterShapeSweep || workflow.GetVersion(ctx, clusterSweep, workflow.DefaultVersion, 1) == 1 {
			r.sweeping = 1
		}
	}
	return r.sweeping == 1
}

// recordSweep remembers a sweep that completed, so the same set of releases is not swept again.
func (r *clusterRun) recordSweep(ctx workflow.Context, s *api.Sweep, key string, removed []string, sweepErr string) {
	if s == nil {
		return
	}
	if len(removed) > 0 {
		workflow.GetLogger(ctx).Info("uninstalled releases no longer deployed here", "cluster", r.in.Target.Cluster, "releases", removed)
	}
	if sweepErr != "" {
		workflow.GetLogger(ctx).Warn("sweep incomplete; retried at the next check", "cluster", r.in.Target.Cluster, "error", sweepErr)
		return
	}
	r.carry.SweptKey = key
}

// uninstallStale runs a sweep on its own, when nothing else is to be applied.
func (r *clusterRun) uninstallStale(ctx workflow.Context, s api.Sweep) ([]string, error) {
	actx := r.clusterSide(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(3),
		Summary:             "uninstall what no longer goes to " + r.in.Target.Cluster,
	})
	var res api.UninstallResult
	in := api.UninstallInput{
		GitRepo: r.in.Target.GitRepo, Cluster: r.in.Target.Cluster, ClusterDigest: r.in.Target.ClusterDigest, Sweep: &s,
		Namespace: r.in.Target.Namespace,
	}
	if r.in.Target.Agent {
		in.Prepared, in.Generation, in.Grant = r.prepared, r.in.Generation, r.grant
	}
	err := workflow.ExecuteActivity(actx, api.ActivityUninstall, in).Get(ctx, &res)
	return res.Removed, err
}
