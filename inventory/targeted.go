package inventory

import (
	"sort"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
)

// Targeted is one registered cluster that a GitRepo's bundles reach.
type Targeted struct {
	Cluster fleet.Cluster
	// Info is the cluster as its bundles are rendered for it (labels, groups, template values).
	Info fleet.ClusterInfo
	// Digest identifies the entry as its renderings read it (Digest).
	Digest string
	// Bundles index the bundles given to TargetedBy, in their order.
	Bundles []int
}

// TargetedBy is which clusters of workspace a GitRepo's bundles reach, and which bundles each gets, in
// cluster name order: the one decision the worker's plan and `flotilla render --gitrepo` both make. A
// cluster on its way out is targeted by no GitRepo (ADR 16), and one no bundle targets is left out.
func (inv *Inventory) TargetedBy(workspace string, bundles []plan.Bundle) []Targeted {
	var out []Targeted
	for _, c := range inv.Clusters {
		if _, leaving := inv.LeavingCluster(c.Metadata.Namespace, c.Metadata.Name); leaving {
			continue
		}
		info := inv.Info(c)
		if idx := plan.For(bundles, workspace, info); len(idx) > 0 {
			out = append(out, Targeted{Cluster: c, Info: info, Digest: Digest(c, info.Groups), Bundles: idx})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster.Metadata.Name < out[j].Cluster.Metadata.Name })
	return out
}
