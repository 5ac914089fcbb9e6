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
	rels, err := cl.ListReleasesIn(ctx, confined, map[string]string{api.LabelGitRepo: gitRepo.Name, api.LabelCluster: cluster})
	if err != nil {
		return nil, err
	}
	rels = ownedBy(rels, gitRepo)
	keepBundle := map[string]bool{}
	for _, b := range s.KeepBundles {
		keepBundle[b] = true
	}
	keepRelease := map[string]bool{}
	for _, r := range s.Releases {
		keepRelease[r.Namespace+"/"+r.Name] = true
	}
	var removed []string
	var namespaces namespaceDeletions
	for _, r := range rels {
		id := r.Namespace + "/" + r.Name
		if keepBundle[r.Labels[api.LabelBundle]] || keepRelease[id] {
			continue
		}
		keep := s.KeepResources || r.Labels[api.LabelKeepResources] == "true"
		if err := cl.Uninstall(ctx, r.Namespace, r.Name, keep); err != nil {
			return removed, err
		}
		a.logger().Info("uninstalled a release its GitRepo no longer deploys here", zap.Stringer("gitRepo", gitRepo),
			zap.String("cluster", cluster), zap.String("bundle", r.Labels[api.LabelBundle]), zap.String("release", id),
			zap.Bool("keepResources", keep))
		namespaces.uninstalled(r, keep)
		removed = append(removed, id)
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, len(removed))
		}
	}
	_, _, err = a.deleteNamespaces(ctx, cl, gitRepo, cluster, confined, namespaces)
	return removed, err
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
