package activities

import (
	"context"
	"fmt"
	"sort"

	"go.temporal.io/sdk/temporal"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/inventory"
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
	deps := plan.ResolveDependsOn(bundles, in.GitRepo, in.Namespace)
	for i, b := range bundles {
		p.Bundles = append(p.Bundles, bundleRef(b, deps[i]))
		if b.Err != nil {
			p.Unloaded = append(p.Unloaded, i)
		}
	}
	infos := map[string]fleet.ClusterInfo{}
	for _, c := range inv.Clusters {
		if _, leaving := inv.LeavingCluster(c.Metadata.Namespace, c.Metadata.Name); leaving {
			continue // no GitRepo targets a cluster on its way out (ADR 16)
		}
		info := inv.Info(c)
		pc := api.PlannedCluster{Name: c.Metadata.Name, Digest: inventory.Digest(c, info.Groups), Paused: c.Spec.Paused,
			Bundles: plan.For(bundles, in.Key().Namespace, info), Agent: c.Spec.Agent != nil}
		if len(pc.Bundles) > 0 {
			p.Clusters = append(p.Clusters, pc)
			infos[pc.Name] = info
		}
	}
	sort.Slice(p.Clusters, func(i, j int) bool { return p.Clusters[i].Name < p.Clusters[j].Name })
	a.lockCharts(ctx, dir, bundles, p.Bundles, p.Clusters, infos, in)
	if err := ctx.Err(); err != nil {
		// Locks made while the activity was being cancelled blame the chart sources for it.
		return api.Plan{}, err
	}
	return p, nil
}

// bundleRef is what the plan hands each cluster of one bundle: where it is and what it depends on.
func bundleRef(b plan.Bundle, deps plan.Dependencies) api.BundleRef {
	ref := api.BundleRef{Name: b.Ref.Name, Path: b.Ref.Path}
	for _, d := range deps.DependsOn {
		ref.DependsOn = append(ref.DependsOn, api.Dependency{Name: d.Name, Selector: d.Selector, Bundles: d.Bundles, AcceptedStates: d.AcceptedStates})
	}
	if deps.Err != nil {
		ref.DependsOnError = deps.Err.Error()
	}
	return ref
}
