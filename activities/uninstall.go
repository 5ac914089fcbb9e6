package activities

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/flotilla-gitops/flotilla/api"
)

// Uninstall removes a GitRepo's releases from a cluster (all of them, or those a sweep does not keep),
// then deletes the namespaces deleteNamespace asks for (namespaces.go).
func (a *Activities) Uninstall(ctx context.Context, in api.UninstallInput) (api.UninstallResult, error) {
	if err := a.Workspaces.serves(in.Key().Namespace); err != nil {
		return api.UninstallResult{}, err
	}
	inv, err := a.Inventory.Read(ctx)
	if err != nil {
		return api.UninstallResult{}, fmt.Errorf("reading the cluster inventory: %w", err)
	}
	key := in.Key()
	c, ok := inv.Cluster(key.Namespace, in.Cluster)
	if !ok {
		// The cluster left the inventory; there is nothing we can reach to uninstall from.
		return api.UninstallResult{}, nil
	}
	target := api.ClusterTarget{GitRepo: in.GitRepo, Cluster: in.Cluster, Namespace: in.Namespace}
	cl, err := a.clusterClient(ctx, target, c)
	if err != nil {
		return api.UninstallResult{}, err
	}
	if a.Local != nil {
		if err := a.grantedUninstall(target, in); err != nil {
			return api.UninstallResult{}, err
		}
	}
	if in.Sweep != nil {
		s := a.keptByGrant(*in.Sweep, in.Prepared)
		s.KeepResources = s.KeepResources || in.KeepResources
		removed, err := a.sweep(ctx, cl, key, in.Cluster, c.Spec.ConfineToNamespace, s)
		if err != nil {
			return api.UninstallResult{Removed: removed}, a.clusterError(in.Cluster, err)
		}
		return api.UninstallResult{Removed: removed}, nil
	}
	// Listed by name, the label every Flotilla version wrote, then kept by owner: a GitRepo of the same
	// name in another workspace may have releases on the same API server.
	rels, err := cl.ListReleases(ctx, map[string]string{api.LabelGitRepo: in.GitRepo})
	if err != nil {
		return api.UninstallResult{}, a.clusterError(in.Cluster, err)
	}
	rels = ownedBy(rels, key)
	confined := c.Spec.ConfineToNamespace
	var res api.UninstallResult
	var namespaces namespaceDeletions
	for _, r := range rels {
		if confined != "" && r.Namespace != confined {
			// Other namespaces of a confined cluster's API server belong to other clusters.
			continue
		}
		keep := in.KeepResources || r.Labels[api.LabelKeepResources] == "true"
		if err := cl.Uninstall(ctx, r.Namespace, r.Name, keep); err != nil {
			return res, a.clusterError(in.Cluster, err)
		}
		namespaces.uninstalled(r, keep)
		res.Removed = append(res.Removed, r.Namespace+"/"+r.Name)
		activity.RecordHeartbeat(ctx, len(res.Removed))
	}
	if in.DeleteNamespace != "" && !in.KeepResources {
		namespaces.ask(in.DeleteNamespace)
	}
	deleted, kept, err := a.deleteNamespaces(ctx, cl, key, in.Cluster, confined, namespaces)
	res.DeletedNamespaces, res.KeptNamespaces = deleted, kept
	if err == nil && a.Local != nil {
		a.Local.guarded().forget(key)
	}
	return res, err
}
