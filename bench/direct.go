package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/activities"
	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/internal/gitcache"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
	"github.com/flotilla-gitops/flotilla/render"
)

// Concurrency the direct baseline shares with the worker: clusters at once (the rollout window, and the
// worker's 200 activity slots) and bundles at once within a cluster (Activities.BundleConcurrency).
const (
	directClusterConcurrency = 200
	directBundleConcurrency  = 8
)

// directSpec is the same deployment Flotilla makes, done by a plain loop over the Helm SDK.
type directSpec struct {
	cacheDir, repoURL, gitRepo string
	clusters                   []benchCluster
	// namespace places the direct baseline's objects apart from Flotilla's: the GitRepo-level target
	// namespace on real clusters, and a prefix of the confining namespace on simulated ones.
	targetNamespace string
	// renderOnly stops after rendering every bundle for every cluster.
	renderOnly bool
}

// runDirect resolves and clones the repository, discovers the bundles, renders each for each cluster,
// installs it with agentclient (Flotilla's own Helm SDK path) and waits until CheckRelease reports every
// object ready: what Flotilla does, without Temporal. It returns the time from start to all ready.
func runDirect(ctx context.Context, ds directSpec) (time.Duration, error) {
	start := time.Now()
	cache := &gitcache.Cache{Dir: ds.cacheDir, AllowLocal: true}
	commit, err := cache.Resolve(ctx, gitcache.Remote{URL: ds.repoURL}, "main", "")
	if err != nil {
		return 0, err
	}
	root, err := cache.Checkout(ctx, gitcache.Remote{URL: ds.repoURL}, commit)
	if err != nil {
		return 0, err
	}
	refs, err := bundle.Discover(root, ds.gitRepo, []string{"bundles"})
	if err != nil {
		return 0, err
	}
	pool := agentclient.NewPool(nil)
	err = parallel.ForEach(len(ds.clusters), directClusterConcurrency, func(i int) error {
		bc := ds.clusters[i]
		info := fleet.ClusterInfo{Name: bc.Name, Namespace: fleet.DefaultNamespace, ConfineToNamespace: bc.Namespace}
		rels := make([]*render.Release, len(refs))
		err := parallel.ForEach(len(refs), directBundleConcurrency, func(j int) error {
			b, err := bundle.Load(root, refs[j])
			if err != nil {
				return err
			}
			rels[j], err = render.ForCluster(render.Input{RepoRoot: root, Bundle: b, Cluster: info, GitRepo: ds.gitRepo,
				Commit: commit, TargetNamespace: ds.targetNamespace})
			return err
		})
		if err != nil || ds.renderOnly {
			return err
		}
		cl, err := pool.Get(agentclient.Config{KubeconfigPath: bc.Kubeconfig})
		if err != nil {
			return err
		}
		if err := parallel.ForEach(len(rels), directBundleConcurrency, func(j int) error {
			return install(ctx, cl, rels[j], ds.gitRepo, bc.Name, commit)
		}); err != nil {
			return err
		}
		return parallel.ForEach(len(rels), directBundleConcurrency, func(j int) error {
			return waitReleaseReady(ctx, cl, rels[j])
		})
	})
	return time.Since(start), err
}

// install makes the Apply activity's Helm call for a new release.
func install(ctx context.Context, cl *agentclient.Client, rel *render.Release, gitRepo, cluster, commit string) error {
	_, err := cl.Install(ctx, activities.ApplyRequestFor(rel, api.KeyOf("", gitRepo), cluster, commit))
	return err
}

// waitReleaseReady checks a release until kstatus calls every object ready, as Flotilla's observe does.
func waitReleaseReady(ctx context.Context, cl *agentclient.Client, rel *render.Release) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		objs, err := cl.CheckRelease(ctx, rel.Namespace, rel.Name, agentclient.CheckOptions{})
		if err != nil {
			return err
		}
		ready := len(objs) > 0
		for _, o := range objs {
			if o.State != agentclient.StateReady {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("release %s/%s: not ready after 5m: %v", rel.Namespace, rel.Name, objs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
