package activities

import (
	"context"
	"time"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// Observe renders each bundle for the cluster and reads its release and, if asked, the objects it owns.
// Render errors are per bundle: one broken bundle never hides the others.
func (a *Activities) Observe(ctx context.Context, in api.ObserveInput) (api.Observation, error) {
	h, err := a.handle(ctx, in.Target, false, granted{in.Prepared, in.Generation, in.Grant})
	if err != nil {
		return api.Observation{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	start := time.Now()
	obs, err := a.observe(ctx, h, in.Target, in.Resources)
	if err == nil {
		// A lost cluster's check is timed by its dial timeout, not by the cluster's work: left out.
		a.Metrics.Observe(time.Since(start))
	}
	return obs, err
}

func (a *Activities) observe(ctx context.Context, h *clusterHandle, t api.ClusterTarget, resources bool) (api.Observation, error) {
	obs := api.Observation{Bundles: make([]api.BundleObservation, len(t.Bundles))}
	err := a.forEach(len(t.Bundles), func(i int) error {
		o, err := a.observeBundle(ctx, h, t, t.Bundles[i], resources)
		obs.Bundles[i] = o
		return err
	})
	if err != nil {
		return api.Observation{}, a.clusterError(t.Cluster, err)
	}
	obs.CheckedAt = time.Now()
	return obs, nil
}

func (a *Activities) observeBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, resources bool) (api.BundleObservation, error) {
	o := api.BundleObservation{Bundle: ref.Name}
	rel, unreachable, err := a.renderOn(ctx, h, t, ref, false)
	if unreachable != nil {
		return o, unreachable
	}
	if err != nil {
		o.Error, o.ErrorType = err.Error(), renderErrorType(err)
		return o, a.observeStuck(ctx, h, t, &o, resources)
	}
	o.ReleaseName, o.Namespace, o.Deploy, o.DesiredID = rel.Name, rel.Namespace, rel.Deploy, rel.DeploymentID
	o.CorrectDrift, o.Paused, o.SyncGeneration = rel.Options.CorrectDrift, rel.Paused, rel.SyncGeneration
	if rc := rel.RemoteChart; rc != nil {
		o.ChartVersion, o.ChartDigest = rc.Version, rc.Digest
	}
	var st agentclient.ReleaseState
	var objs []agentclient.ObjectStatus
	if resources {
		st, objs, err = h.client.Inspect(ctx, rel.Namespace, rel.Name, checkOptions(rel.Options))
	} else {
		st, err = h.client.Observe(ctx, rel.Namespace, rel.Name)
	}
	if err != nil {
		return o, err
	}
	if conflict := releaseConflict(st, rel, t); conflict != "" {
		// Not ours: neither its revision nor its objects are this bundle's status.
		o.Error, o.ErrorType = conflict, api.ErrTypeReleaseConflict
		return o, nil
	}
	o.Release = releaseInfo(st)
	// A failed revision's description is Helm's error, which may quote what a template made of a Secret's values.
	o.Release.Description = rel.Redact(o.Release.Description)
	if !resources {
		return o, nil
	}
	o.Resources, err = releaseObjects(st, objs, func() ([]agentclient.ObjectStatus, error) {
		return h.client.CheckRelease(ctx, rel.Namespace, rel.Name, checkOptions(rel.Options))
	})
	return o, err
}

// releaseObjects summarizes the objects of a release's latest revision. Inspect checks them only when
// that revision is deployed; a pending one (being installed, upgraded or rolled back, or left locked by
// a worker that died) names the objects the bundle waits for, which status counts as waitApplied, so
// they are read with readPending. A failed or uninstalling revision has none counted. Only a lost
// cluster is an error: counts are not worth failing the check.
func releaseObjects(st agentclient.ReleaseState, inspected []agentclient.ObjectStatus, readPending func() ([]agentclient.ObjectStatus, error)) (api.ResourceSummary, error) {
	switch {
	case st.Exists && st.Status == string(api.ReleaseDeployed):
		return summarizeObjects(inspected), nil
	case st.Pending():
		objs, err := readPending()
		if agentclient.IsUnreachable(err) {
			return api.ResourceSummary{}, err
		}
		if err != nil {
			return api.ResourceSummary{}, nil
		}
		return summarizeObjects(objs), nil
	}
	return api.ResourceSummary{}, nil
}

// observeStuck reads what still runs of a bundle that no longer renders: without a rendering there is no
// release name to look up, so the release is found by the labels Flotilla stamped on it. Status then shows
// the live release (its revision, commit and objects) beside the error that stops it from moving, instead
// of a bundle that seems to run nothing. Only a lost cluster is an error; any other failed read leaves the
// render error alone.
func (a *Activities) observeStuck(ctx context.Context, h *clusterHandle, t api.ClusterTarget, o *api.BundleObservation, resources bool) error {
	// This cluster's own: a cluster confined to a namespace shares its API server with others, whose
	// releases of the same GitRepo and bundle are theirs (as sweep.go finds them).
	rels, err := h.client.ListReleasesIn(ctx, h.info.ConfineToNamespace,
		map[string]string{api.LabelGitRepo: t.GitRepo, api.LabelBundle: o.Bundle, api.LabelCluster: t.Cluster})
	if err != nil {
		if agentclient.IsUnreachable(err) {
			return err
		}
		return nil
	}
	rels = ownedBy(rels, t.Key())
	if len(rels) == 0 {
		return nil
	}
	live := rels[0]
	for _, r := range rels[1:] { // one release per bundle and cluster; should there be more, the newest
		if r.Updated.After(live.Updated) {
			live = r
		}
	}
	o.ReleaseName, o.Namespace = live.Name, live.Namespace
	o.Release = releaseInfo(live)
	if !resources || live.Status != string(api.ReleaseDeployed) {
		return nil
	}
	st, objs, err := h.client.Inspect(ctx, live.Namespace, live.Name, agentclient.CheckOptions{})
	if err != nil {
		if agentclient.IsUnreachable(err) {
			return err
		}
		return nil
	}
	o.Release = releaseInfo(st)
	o.Resources = summarizeObjects(objs)
	return nil
}

func releaseInfo(st agentclient.ReleaseState) api.ReleaseInfo {
	return api.ReleaseInfo{Exists: st.Exists, Status: api.ReleaseStatus(st.Status), Revision: st.Revision, DeploymentID: st.DeploymentID,
		Description: st.Description, Commit: st.Labels[api.LabelCommit]}
}

func checkOptions(o fleet.BundleDeploymentOptions) agentclient.CheckOptions {
	co := agentclient.CheckOptions{IgnoreConditions: o.Ignore.Conditions}
	if o.Diff != nil {
		co.ComparePatches = o.Diff.ComparePatches
	}
	return co
}
