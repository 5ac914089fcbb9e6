package api

import (
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
)

// The worker's plan, the workflows' delivery and `flotilla render --gitrepo` describe what a cluster gets
// with these two functions, so a preview can never render from a description the worker does not deliver.

// BundleRefsOf resolves the dependsOn of a GitRepo's bundles among themselves and describes each bundle
// as every cluster that gets it does; the resolved entries come back too, by bundle.
func BundleRefsOf(key GitRepoKey, bundles []plan.Bundle) ([]BundleRef, []plan.Dependencies) {
	deps := plan.ResolveDependsOn(bundles, key.Name, key.PayloadNamespace())
	refs := make([]BundleRef, len(bundles))
	for i, b := range bundles {
		refs[i] = BundleRefOf(b, deps[i])
	}
	return refs, deps
}

// BundleRefOf is what a plan hands each cluster of one bundle: where it is and what it depends on.
func BundleRefOf(b plan.Bundle, deps plan.Dependencies) BundleRef {
	ref := BundleRef{Name: b.Ref.Name, Path: b.Ref.Path}
	for _, d := range deps.DependsOn {
		ref.DependsOn = append(ref.DependsOn, Dependency{Name: d.Name, Selector: d.Selector, Bundles: d.Bundles, AcceptedStates: d.AcceptedStates})
	}
	if deps.Err != nil {
		ref.DependsOnError = deps.Err.Error()
	}
	return ref
}

// TargetOf is what one planned cluster runs of a GitRepo at a commit; bundles are the plan's, of which the
// cluster gets those pc names.
func TargetOf(key GitRepoKey, spec fleet.GitRepoSpec, commit string, pc PlannedCluster, bundles []BundleRef) ClusterTarget {
	t := ClusterTarget{
		GitRepo: key.Name, Cluster: pc.Name, ClusterDigest: pc.Digest, Repo: spec.Repo, Commit: commit,
		ClientSecretName: spec.ClientSecretName, Namespace: key.PayloadNamespace(),
		CABundle: spec.CABundle, InsecureSkipTLSVerify: spec.InsecureSkipTLSVerify, ChartAccess: ChartAccessOf(spec),
		HelmOp: spec.HelmOp, Agent: pc.Agent,
		Options: DeployOptions{
			TargetNamespace: spec.TargetNamespace, KeepResources: spec.KeepResources,
			CorrectDrift: spec.CorrectDrift, ForceSyncGeneration: spec.ForceSyncGeneration,
		},
	}
	for _, i := range pc.Bundles {
		t.Bundles = append(t.Bundles, bundles[i])
	}
	return t
}
