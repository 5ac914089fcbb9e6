package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
)

// sweep uninstalls the releases of gitRepo on this cluster that s does not keep, then deletes the
// namespaces of those whose bundle asked for it (fleet.yaml deleteNamespace, see namespaces.go). Only
// releases labelled with this cluster are candidates: clusters confined to namespaces of one API server
// see each other's. Only the GitRepo's own are: one of the same name in another workspace may share the
// API server, and its cluster the name.
func (a *Activities) sweep(ctx context.Context, cl *agentclient.Client, gitRepo api.GitRepoKey, cluster, confined string, s api.Sweep) ([]string, error) {
	leaving, err := sweepable(ctx, cl, gitRepo, cluster, confined, s)
	if err != nil {
		return nil, err
	}
	// A folder of fifty bundles deleted from the repository is fifty uninstalls: at once, as many as the
	// cluster's bundles are applied at once, not one after another.
	done := make([]bool, len(leaving))
	kept := make([]bool, len(leaving))
	err = a.forEach(len(leaving), func(i int) error {
		r := leaving[i]
		kept[i] = s.KeepResources || r.Labels[api.LabelKeepResources] == "true"
		if err := cl.Uninstall(ctx, r.Namespace, r.Name, kept[i]); err != nil {
			return err
		}
		done[i] = true
		a.logger().Info("uninstalled a release its GitRepo no longer deploys here", zap.Stringer("gitRepo", gitRepo),
			zap.String("cluster", cluster), zap.String("bundle", r.Labels[api.LabelBundle]), zap.String("release", r.Namespace+"/"+r.Name),
			zap.Bool("keepResources", kept[i]))
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx)
		}
		return nil
	})
	var removed []string
	var namespaces namespaceDeletions
	for i, r := range leaving {
		if done[i] {
			namespaces.uninstalled(r, kept[i])
			removed = append(removed, r.Namespace+"/"+r.Name)
		}
	}
	if err != nil {
		return removed, err
	}
	_, _, err = a.deleteNamespaces(ctx, cl, gitRepo, cluster, confined, namespaces)
	return removed, err
}

// sweepable are the releases of gitRepo on this cluster that s does not keep: what a sweep uninstalls.
func sweepable(ctx context.Context, cl *agentclient.Client, gitRepo api.GitRepoKey, cluster, confined string, s api.Sweep) ([]agentclient.ReleaseState, error) {
	rels, err := cl.ListReleasesIn(ctx, confined, map[string]string{api.LabelGitRepo: gitRepo.Name, api.LabelCluster: cluster})
	if err != nil {
		return nil, err
	}
	keepBundle := map[string]bool{}
	for _, b := range s.KeepBundles {
		keepBundle[b] = true
	}
	keepRelease := map[string]bool{}
	for _, r := range s.Releases {
		keepRelease[r.Namespace+"/"+r.Name] = true
	}
	var leaving []agentclient.ReleaseState
	for _, r := range ownedBy(rels, gitRepo) {
		if !keepBundle[r.Labels[api.LabelBundle]] && !keepRelease[r.Namespace+"/"+r.Name] {
			leaving = append(leaving, r)
		}
	}
	return leaving, nil
}

// ownedBy keeps the releases whose labels name gitRepo as their owner. Releases are listed by the name
// label, which every Flotilla version wrote; a release without the namespace label is fleet-default's.
func ownedBy(rels []agentclient.ReleaseState, gitRepo api.GitRepoKey) []agentclient.ReleaseState {
	var own []agentclient.ReleaseState
	for _, r := range rels {
		if api.ReleaseOwner(r.Labels) == gitRepo {
			own = append(own, r)
		}
	}
	return own
}
