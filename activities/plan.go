package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/rollout"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
)

// Plan discovers bundles at a commit and computes which clusters each targets (fleet/plan). A bundle whose
// fleet.yaml does not load is listed in Unloaded and planned with the GitRepo's targets; the workflow keeps
// it where the last good plan had it.
func (a *Activities) Plan(ctx context.Context, in api.PlanInput) (api.Plan, error) {
	if err := a.Workspaces.serves(in.Key().Namespace); err != nil {
		return api.Plan{}, err
	}
	if err := target.Validate(in.Targets); err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError("spec.targets: "+err.Error(), api.ErrTypeInvalidTargets, nil)
	}
	if err := fleet.ValidateSyncWindowSelectors(in.SyncWindows); err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalidTargets, nil)
	}
	dir, err := a.checkout(ctx, gitcache.Remote{URL: in.Repo, Workspace: in.Key().Namespace, Secret: in.ClientSecretName, CABundle: in.CABundle,
		InsecureSkipTLSVerify: in.InsecureSkipTLSVerify}, in.Commit, in.HelmOp)
	if err != nil {
		return api.Plan{}, gitError(err)
	}
	bundles, err := plan.Load(dir, in.GitRepo, in.Paths, in.Targets)
	if err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeBundle, nil)
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.Plan{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	p := api.Plan{Commit: in.Commit, InventoryGeneration: inv.Generation, Clusters: []api.PlannedCluster{}, Warnings: plan.Warnings(bundles),
		Leaving: leavingOf(inv, in.Key().Namespace)}
	p.Bundles, _ = api.BundleRefsOf(in.Key(), bundles)
	for i, b := range bundles {
		if b.Err != nil {
			p.Unloaded = append(p.Unloaded, i)
		}
	}
	infos := map[string]fleet.ClusterInfo{}
	for _, tc := range inv.TargetedBy(in.Key().Namespace, bundles) {
		pc := api.PlannedCluster{Name: tc.Cluster.Metadata.Name, Digest: tc.Digest, Paused: tc.Cluster.Spec.Paused,
			Bundles: tc.Bundles, Agent: tc.Cluster.Spec.Agent != nil}
		p.Clusters = append(p.Clusters, pc)
		infos[pc.Name] = tc.Info
	}
	planWindows(&p, in.SyncWindows, infos)
	if err := planRollout(&p, bundles, infos); err != nil {
		return api.Plan{}, temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeBundle, nil)
	}
	// The plan before this one may have run on another worker, whose memos were newer than this one's.
	a.lockCharts(charts.FreshSince(ctx, time.Now()), dir, bundles, p.Bundles, p.Clusters, infos, in)
	if err := ctx.Err(); err != nil {
		// Locks made while the activity was being cancelled blame the chart sources for it.
		return api.Plan{}, err
	}
	if in.Pack {
		if err := p.Pack(); err != nil {
			return api.Plan{}, err
		}
	}
	return p, nil
}

// planRollout partitions the planned clusters by the bundles' rolloutStrategy, when one declares it.
func planRollout(p *api.Plan, bundles []plan.Bundle, infos map[string]fleet.ClusterInfo) error {
	rs, warnings := plan.Rollout(bundles)
	if rs == nil {
		return nil
	}
	p.Warnings = append(p.Warnings, warnings...)
	clusters := make([]fleet.ClusterInfo, len(p.Clusters))
	for i, pc := range p.Clusters {
		clusters[i] = infos[pc.Name]
	}
	rp, err := rollout.Partitions(rs, clusters)
	if err != nil {
		return err
	}
	p.Rollout = &api.RolloutPlan{MaxUnavailable: rp.MaxUnavailable, MaxUnavailablePartitions: rp.MaxUnavailablePartitions, MaxNew: rp.MaxNew,
		Partitions: make([]api.PartitionPlan, len(rp.Partitions))}
	for i, part := range rp.Partitions {
		p.Rollout.Partitions[i] = api.PartitionPlan{Name: part.Name, MaxUnavailable: part.MaxUnavailable, Approval: part.Approval, Soak: part.Soak}
		for _, m := range part.Members {
			p.Clusters[m].Partition = i
		}
	}
	return nil
}

// planWindows lists, for each planned cluster, the sync windows with cluster criteria that choose it.
func planWindows(p *api.Plan, windows []fleet.SyncWindow, infos map[string]fleet.ClusterInfo) {
	for i := range p.Clusters {
		for wi, w := range windows {
			if !w.AllClusters() && target.Selects(w.ClusterName, w.ClusterSelector, w.ClusterGroup, w.ClusterGroupSelector, infos[p.Clusters[i].Name]) {
				p.Clusters[i].Windows = append(p.Clusters[i].Windows, wi)
			}
		}
	}
}
