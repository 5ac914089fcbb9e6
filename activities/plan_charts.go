package activities

import (
	"context"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
	"github.com/flotilla-gitops/flotilla/fleet/target"
	"github.com/flotilla-gitops/flotilla/internal/chartload"
	"github.com/flotilla-gitops/flotilla/internal/charts"
	"github.com/flotilla-gitops/flotilla/render"
)

// lockCharts resolves, once per plan, every chart source the bundles deploy from outside the repository
// on the clusters they target (the root helm options and every targetCustomization a cluster gets), and
// the Chart.yaml dependencies their repository charts do not vendor: every cluster then deploys the same
// versions, and a version published later is picked up by the next poll's plan. A source that does not
// resolve gets a lock holding the error, which fails that bundle alone; nothing else waits for it.
func (a *Activities) lockCharts(ctx context.Context, dir string, bundles []plan.Bundle, refs []api.BundleRef,
	clusters []api.PlannedCluster, infos map[string]fleet.ClusterInfo, in api.PlanInput) {
	if a.Charts == nil {
		return
	}
	loader := chartload.New(ctx, a.Charts, in.Key().Namespace, in.ChartAccess, chartload.TLS{CABundle: in.CABundle, InsecureSkipTLSVerify: in.InsecureSkipTLSVerify}, a.HelmCreds)
	targeted := make([][]fleet.ClusterInfo, len(bundles))
	for _, pc := range clusters {
		for _, i := range pc.Bundles {
			targeted[i] = append(targeted[i], infos[pc.Name])
		}
	}
	for i, b := range bundles {
		if b.Bundle == nil || !mentionsCharts(b.Bundle.FleetYAML, dir, b.Ref.Path) {
			continue
		}
		seen := map[string]bool{}
		for _, info := range targeted[i] {
			custom, err := target.Customize(b.Bundle.FleetYAML, info)
			if err != nil || !custom.Deploy {
				continue // the cluster's render reports it
			}
			h := custom.Options.Helm
			if render.IsRemoteChart(h) {
				key := charts.SourceOf(h).Key()
				if seen[key] {
					continue
				}
				seen[key] = true
				lock, err := loader.Resolve(h)
				if err != nil {
					lock = api.ChartLock{Source: key, Error: err.Error()}
				}
				refs[i].Charts = append(refs[i].Charts, lock)
				continue
			}
			chartDir := render.ChartDir(dir, b.Ref.Path, h)
			if chartDir == "" || seen[chartload.DepsSource(chartDir)] || h != nil && h.DisableDependencyUpdate {
				continue
			}
			seen[chartload.DepsSource(chartDir)] = true
			c, err := render.LoadRepoChart(dir, chartDir)
			if err != nil || len(render.MissingDependencies(c)) == 0 {
				continue // a chart that does not load fails the bundle's render, naming it
			}
			lock, err := loader.LockDependencies(c, dir, chartDir)
			if err != nil {
				lock = api.ChartLock{Source: chartload.DepsSource(chartDir), Error: err.Error()}
			}
			refs[i].Charts = append(refs[i].Charts, lock)
		}
	}
}

// mentionsCharts is a cheap first look: only a bundle that names a chart anywhere in its fleet.yaml, or
// whose folder is a chart, can need anything fetched.
func mentionsCharts(fy fleet.FleetYAML, dir, bundlePath string) bool {
	if fy.Helm != nil && (fy.Helm.Chart != "" || fy.Helm.Repo != "") {
		return true
	}
	for _, tc := range fy.TargetCustomizations {
		if tc.Helm != nil && (tc.Helm.Chart != "" || tc.Helm.Repo != "") {
			return true
		}
	}
	return render.ChartDir(dir, bundlePath, nil) != ""
}
