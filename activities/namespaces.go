package activities

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// Fleet's deleteNamespace, on the GitRepo (its targetNamespace, when the GitRepo is deleted) and in a
// bundle's fleet.yaml (the release's namespace, whenever the release is uninstalled). A namespace goes only
// once the releases in it are uninstalled, and stays when it is protected (fleet.ProtectedNamespace), when
// a release in it kept its objects (keepResources: deleting the namespace would delete them), when it still
// holds another release (another GitRepo's, or one Flotilla did not install: Fleet deletes it anyway and
// takes that workload with it; Flotilla leaves it and says why), and on a cluster confined to a namespace
// (on an API server shared with other clusters, the namespace is the cluster itself).

// namespaceDeletions gathers the namespaces an uninstall asks to delete, in the order asked.
type namespaceDeletions struct {
	asked       []string
	keptObjects map[string]bool
}

func (d *namespaceDeletions) ask(ns string) {
	for _, a := range d.asked {
		if a == ns {
			return
		}
	}
	d.asked = append(d.asked, ns)
}

// uninstalled records a release just uninstalled, keeping its objects or not.
func (d *namespaceDeletions) uninstalled(r agentclient.ReleaseState, keptObjects bool) {
	if keptObjects {
		if d.keptObjects == nil {
			d.keptObjects = map[string]bool{}
		}
		d.keptObjects[r.Namespace] = true
		return
	}
	if r.Labels[api.LabelDeleteNamespace] == "true" {
		d.ask(r.Namespace)
	}
}

// keepReason says why a namespace asked for stays before asking the cluster, or "" when only the cluster
// can tell. It is pure.
func (d *namespaceDeletions) keepReason(ns, confined string) string {
	switch {
	case confined != "":
		return fmt.Sprintf("the cluster is confined to namespace %s, which is the cluster itself: Flotilla deletes no namespace there", confined)
	case fleet.ProtectedNamespace(ns):
		return "protected: default, kube-*, fleet-* and cattle-fleet-* are never deleted"
	case d.keptObjects[ns]:
		return "a release in it kept its objects (keepResources)"
	}
	return ""
}

// run deletes the namespaces asked for that may go, and says which stayed and why ("ns: reason"). Only a
// cluster that cannot be reached is an error (the caller retries); a namespace the cluster refuses to
// delete (RBAC) stays, with the refusal as its reason.
func (a *Activities) deleteNamespaces(ctx context.Context, cl *agentclient.Client, gitRepo api.GitRepoKey, cluster, confined string, d namespaceDeletions) (deleted, kept []string, err error) {
	for _, ns := range d.asked {
		why := d.keepReason(ns, confined)
		if why == "" {
			others, err := cl.ListReleasesIn(ctx, ns, nil)
			if err != nil {
				return deleted, kept, a.clusterError(cluster, err)
			}
			if len(others) > 0 {
				names := make([]string, 0, len(others))
				for _, r := range others {
					names = append(names, r.Name)
				}
				why = "it still holds release(s) " + strings.Join(names, ", ")
			}
		}
		if why == "" {
			if err := cl.DeleteNamespace(ctx, ns); err != nil {
				if agentclient.IsUnreachable(err) {
					return deleted, kept, a.clusterError(cluster, err)
				}
				why = err.Error()
			}
		}
		if why != "" {
			a.logger().Info("namespace kept", zap.Stringer("gitRepo", gitRepo), zap.String("cluster", cluster),
				zap.String("namespace", ns), zap.String("reason", why))
			kept = append(kept, ns+": "+why)
			continue
		}
		a.logger().Info("namespace deleted", zap.Stringer("gitRepo", gitRepo), zap.String("cluster", cluster), zap.String("namespace", ns))
		deleted = append(deleted, ns)
	}
	return deleted, kept, nil
}
