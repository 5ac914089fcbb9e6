package inventory

import (
	"fmt"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// AnnotationManagedBy on a cluster or group says who registered it: ManagedByController for one a Cluster
// or ClusterGroup object in a management cluster registered (flotilla-controller), none for the CLI's.
const AnnotationManagedBy = "flotilla.dev/managed-by"

// ManagedByController is AnnotationManagedBy's value on what flotilla-controller registered.
const ManagedByController = "flotilla-controller"

// CheckClusterOwner refuses a change of cluster ns/name by `by` (its AnnotationManagedBy, "" for the CLI)
// when the other side registered it: one source of truth at a time. A cluster not registered is anyone's.
func (inv *Inventory) CheckClusterOwner(ns, name, by string) error {
	c, ok := inv.Cluster(ns, name)
	if !ok {
		return nil
	}
	return checkOwner(fleet.KindCluster, ns, name, c.Metadata.Annotations[AnnotationManagedBy], by)
}

// CheckGroupOwner is CheckClusterOwner for a cluster group.
func (inv *Inventory) CheckGroupOwner(ns, name, by string) error {
	for _, g := range inv.Groups {
		if g.Metadata.Name == name && fleet.Workspace(g.Metadata.Namespace) == fleet.Workspace(ns) {
			return checkOwner(fleet.KindClusterGroup, ns, name, g.Metadata.Annotations[AnnotationManagedBy], by)
		}
	}
	return nil
}

func checkOwner(kind, ns, name, owner, by string) error {
	if owner == by {
		return nil
	}
	ws, display := fleet.Workspace(ns), fleet.DisplayName(ns, name)
	noun := strings.ToLower(kind)
	if owner == ManagedByController {
		return fmt.Errorf("%s %q is managed by its %s object %s/%s in the management cluster (flotilla-controller): change or delete "+
			"that object (kubectl -n %s edit %ss.fleet.cattle.io %s)", noun, display, kind, ws, name, ws, noun, name)
	}
	if kind == fleet.KindCluster {
		return fmt.Errorf("cluster %q was registered with the flotilla CLI: remove it there (flotilla cluster remove -n %s %s) before a "+
			"Cluster object takes it over", display, ws, name)
	}
	return fmt.Errorf("%s %q was applied with the flotilla CLI: a %s object of the same name would change it behind the CLI; "+
		"give the object another name", noun, display, kind)
}
