package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/internal/chartcheck"
	"github.com/flotilla-gitops/flotilla/internal/metrics"
	"github.com/flotilla-gitops/flotilla/render"
)

// Apply performs the decided release actions. Each action first re-checks that the bundle still renders
// to the expected deployment ID and that the release does not already hold it, so a retry after a crash
// never adds a Helm revision.
func (a *Activities) Apply(ctx context.Context, in api.ApplyInput) (api.ApplyResult, error) {
	h, err := a.handle(ctx, in.Target, true, granted{in.Prepared, in.Generation, in.Grant})
	if err != nil {
		return api.ApplyResult{}, err
	}
	stop := heartbeatEvery(ctx, 3*time.Second)
	defer stop()
	res := api.ApplyResult{Bundles: make([]api.BundleApplyResult, len(in.Actions))}
	if a.Local != nil {
		if err := a.Local.guarded().act(in.Target.Key(), in.Generation); err != nil {
			return api.ApplyResult{}, err
		}
	}
	if in.Sweep != nil {
		removed, err := a.sweep(ctx, h.client, in.Target.Key(), in.Target.Cluster, h.info.ConfineToNamespace, a.keptByGrant(*in.Sweep, in.Prepared))
		res.Swept = removed
		if err != nil {
			if agentclient.IsUnreachable(err) {
				return api.ApplyResult{}, a.clusterError(in.Target.Cluster, err)
			}
			res.SweepError = err.Error()
		}
	}
	refs := map[string]api.BundleRef{}
	for _, r := range in.Target.Bundles {
		refs[r.Name] = r
	}
	if h.prepared != nil {
		var wanted []api.PreparedBundle
		for _, act := range in.Actions {
			wanted = append(wanted, h.prepared[act.Bundle])
		}
		if err := a.fetchPackages(ctx, in.Target, wanted); err != nil {
			// Each bundle tries again on its own, and fails alone if its package cannot be had.
			a.logger().Warn("fetching packages", zap.String("cluster", in.Target.Cluster), zap.Error(err))
		}
	}
	err = a.forEach(len(in.Actions), func(i int) error {
		start := time.Now()
		r, err := a.applyBundle(ctx, h, in.Target, refs[in.Actions[i].Bundle], in.Actions[i])
		res.Bundles[i] = r
		// A lost cluster is retried as a whole and counted when it is applied, not once per bundle here.
		if err == nil {
			a.Metrics.Apply(string(in.Actions[i].Action), applyResult(r), time.Since(start))
		}
		return err
	})
	if err != nil {
		return api.ApplyResult{}, a.clusterError(in.Target.Cluster, err)
	}
	if in.Observe {
		// What was applied stands even if this read fails; the workflow then observes on its own.
		if obs, err := a.observe(ctx, h, in.Target, true); err == nil {
			res.Observation = &obs
		}
	}
	return res, nil
}

func (a *Activities) applyBundle(ctx context.Context, h *clusterHandle, t api.ClusterTarget, ref api.BundleRef, act api.BundleAction) (out api.BundleApplyResult, err error) {
	out = api.BundleApplyResult{Bundle: act.Bundle}
	log := a.logger().With(zap.String("cluster", t.Cluster), zap.String("bundle", act.Bundle), zap.String("action", string(act.Action)))
	rel, unreachable, err := a.renderOn(ctx, h, t, ref, true)
	if unreachable != nil {
		return out, unreachable
	}
	if err != nil {
		out.Error, out.ErrorType = err.Error(), renderErrorType(err)
		return out, nil
	}
	defer func() {
		// Helm's and the API server's messages may quote what a template made of the values.
		out.Error = rel.Redact(out.Error)
	}()
	if rel.DeploymentID != act.ExpectedID {
		out.Error, out.ErrorType = "desired state changed since it was observed", api.ErrTypeStale
		return out, nil
	}
	st, err := h.client.Observe(ctx, rel.Namespace, rel.Name)
	if err != nil {
		return out, err
	}
	if conflict := releaseConflict(st, rel, t); conflict != "" {
		// Checked again here: the release may have appeared since the observation that decided this.
		out.Error, out.ErrorType = conflict, api.ErrTypeReleaseConflict
		return out, nil
	}
	action := act.Action
	if action == api.ActionRecover {
		if err := h.client.DiscardPending(ctx, rel.Namespace, rel.Name); err != nil {
			return a.applyFailure(out, err)
		}
		if st, err = h.client.Observe(ctx, rel.Namespace, rel.Name); err != nil {
			return out, err
		}
		action = api.ActionUpgrade
	}
	if action != api.ActionRollback && st.Exists && st.Status == string(api.ReleaseDeployed) && st.DeploymentID == act.ExpectedID {
		out.Skipped, out.Revision = true, st.Revision
		return out, nil
	}
	if action == api.ActionRollback {
		rev, err := h.client.Rollback(ctx, agentclient.RollbackRequest{
			Namespace: rel.Namespace, Name: rel.Name, Force: act.Force, MaxHistory: maxHistory(rel.Options),
			KeepFailHistory: rel.Options.CorrectDrift != nil && rel.Options.CorrectDrift.KeepFailHistory,
		})
		if err != nil {
			return a.applyFailure(out, err)
		}
		log.Info("drift corrected", zap.Int("revision", rev))
		out.Revision = rev
		return out, nil
	}
	req := ApplyRequestFor(rel, t.Key(), t.Cluster, t.Commit)
	check := chartcheck.Request{Cluster: t.Cluster, ClusterDigest: h.digest, DeploymentID: rel.DeploymentID, Apply: req, Latest: st,
		ClusterNamespace: t.Namespace}
	if err := a.ChartCheck.Check(ctx, check); err != nil {
		var limit *chartcheck.LimitError
		if !errors.As(err, &limit) {
			return a.applyFailure(out, err)
		}
		out.Error, out.ErrorType = err.Error(), api.ErrTypeChartRenderLimit
		return out, nil
	}
	var r agentclient.ApplyResult
	if st.Exists {
		r, err = h.client.Upgrade(ctx, req)
	} else {
		r, err = h.client.Install(ctx, req)
	}
	if err != nil {
		return a.applyFailure(out, err)
	}
	log.Info("release applied", zap.String("release", rel.Name), zap.Int("revision", r.Revision))
	out.Revision = r.Revision
	return out, nil
}

// ApplyRequestFor is the Helm install or upgrade Apply makes for a rendered bundle: the release labels that
// record its deployment ID and origin, and the bundle's Helm options. The benchmark's direct baseline makes
// the very same call.
func ApplyRequestFor(rel *render.Release, gitRepo api.GitRepoKey, cluster, commit string) agentclient.ApplyRequest {
	req := agentclient.ApplyRequest{
		Name: rel.Name, Namespace: rel.Namespace, Chart: rel.Chart, Values: rel.Values, PostRenderer: rel.PostRenderer,
		Labels:             gitRepo.OwnerLabels(),
		CreateNamespace:    true,
		ConfineToNamespace: rel.ForcedNamespace,
		MaxHistory:         maxHistory(rel.Options),
		NamespaceLabels:    rel.Options.NamespaceLabels, NamespaceAnnotations: rel.Options.NamespaceAnnotations,
		Description: fmt.Sprintf("flotilla: gitrepo %s commit %s", gitRepo, api.ShortCommit(commit)),
	}
	req.Labels[api.LabelDeploymentID], req.Labels[api.LabelBundle] = rel.DeploymentID, rel.Bundle
	req.Labels[api.LabelCluster], req.Labels[api.LabelCommit] = cluster, api.ShortCommit(commit)
	if rel.Options.KeepResources {
		req.Labels[api.LabelKeepResources] = "true"
	}
	if rel.DeleteNamespace {
		req.Labels[api.LabelDeleteNamespace] = "true"
	}
	if hopts := rel.Options.Helm; hopts != nil {
		req.Force, req.TakeOwnership, req.Atomic, req.WaitForJobs = hopts.Force, hopts.TakeOwnership, hopts.Atomic, hopts.WaitForJobs
		if hopts.TimeoutSeconds > 0 {
			req.Timeout, req.Wait = time.Duration(hopts.TimeoutSeconds)*time.Second, true
		}
	}
	if cd := rel.Options.CorrectDrift; cd != nil && cd.Force {
		req.Force = true
	}
	return req
}

// applyResult is the result label of one bundle's apply.
func applyResult(r api.BundleApplyResult) string {
	switch {
	case r.Error != "":
		return metrics.ResultError
	case r.Skipped:
		return metrics.ResultSkipped
	}
	return metrics.ResultOK
}

// applyFailure keeps a failed action on its bundle, except a lost cluster, which fails the activity so
// the whole cluster is retried.
func (a *Activities) applyFailure(out api.BundleApplyResult, err error) (api.BundleApplyResult, error) {
	if agentclient.IsUnreachable(err) {
		return out, err
	}
	out.Error = err.Error()
	out.ErrorType = api.ErrTypeApply
	if agentclient.IsInvalid(err) {
		out.ErrorType = api.ErrTypeInvalid
	}
	return out, nil
}

func maxHistory(o fleet.BundleDeploymentOptions) int {
	if o.Helm != nil && o.Helm.MaxHistory > 0 {
		return o.Helm.MaxHistory
	}
	return 5
}
