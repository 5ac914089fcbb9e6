// Package inventory is the durable list of clusters and cluster groups that GitRepos target.
// It lives in a Temporal workflow (InventoryWorkflow), so it survives restarts and is visible in the Web UI;
// this package holds its data types and the pure helpers shared by the workflow, the activities and the CLI.
// The workflow's ID and message names are in api.
package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Inventory is every registered cluster and group. Generation increases on every change.
type Inventory struct {
	Generation int64                `json:"generation"`
	Clusters   []fleet.Cluster      `json:"clusters"`
	Groups     []fleet.ClusterGroup `json:"groups"`
	// Leaving are registered clusters on their way out (`flotilla cluster remove`, ADR 15), in name order:
	// no GitRepo targets them any more, each GitRepo that ran on one uninstalls from it (or only forgets
	// it, KeepWorkloads), and the cluster stays registered, kubeconfig path included, so that the uninstall
	// can reach it. The CLI forgets it (RemoveCluster) once no GitRepo holds anything there.
	Leaving []Leaving `json:"leaving,omitempty"`
}

// Leaving is one cluster on its way out of the inventory.
type Leaving struct {
	Name string `json:"name"`
	// KeepWorkloads leaves the cluster's Helm releases and objects where they are: its GitRepos forget it
	// without touching it.
	KeepWorkloads bool `json:"keepWorkloads,omitempty"`
	// Generation is the inventory generation that made it leave (or keep its workloads): a GitRepo that
	// has read this generation or a later one no longer targets the cluster.
	Generation int64 `json:"generation"`
}

// LeaveInput is the input of the leaveCluster update: a registered cluster to take out of every GitRepo.
type LeaveInput struct {
	Name string `json:"name"`
	// KeepWorkloads forgets the cluster without uninstalling anything from it.
	KeepWorkloads bool `json:"keepWorkloads,omitempty"`
}

// RemoveInput names a cluster or group to remove.
type RemoveInput struct {
	Name string `json:"name"`
}

// ChangeResult reports the generation after a change.
type ChangeResult struct {
	Generation int64 `json:"generation"`
	Changed    bool  `json:"changed"`
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateCluster checks what can be checked without I/O.
func ValidateCluster(c fleet.Cluster) error {
	if !dnsLabel.MatchString(c.Metadata.Name) || len(c.Metadata.Name) > 63 {
		return fmt.Errorf("cluster name %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", c.Metadata.Name)
	}
	if c.Spec.KubeConfigPath == "" {
		return fmt.Errorf("cluster %q: spec.kubeConfigPath is required (a kubeconfig file on the worker's host)", c.Metadata.Name)
	}
	if ns := c.Spec.ConfineToNamespace; ns != "" && (!dnsLabel.MatchString(ns) || len(ns) > 63) {
		return fmt.Errorf("cluster %q: spec.confineToNamespace %q: must be a DNS label", c.Metadata.Name, ns)
	}
	if err := encodable(c.Spec.TemplateValues); err != nil {
		return fmt.Errorf("cluster %q: spec.templateValues: %v", c.Metadata.Name, err)
	}
	return nil
}

// encodable checks that values survive JSON (they travel through Temporal and into templates).
//
//workflowcheck:ignore
func encodable(v any) error {
	_, err := json.Marshal(v)
	return err
}

// ValidateGroup checks a cluster group.
func ValidateGroup(g fleet.ClusterGroup) error {
	if !dnsLabel.MatchString(g.Metadata.Name) || len(g.Metadata.Name) > 63 {
		return fmt.Errorf("cluster group name %q: must be a DNS label", g.Metadata.Name)
	}
	// Parsing a selector ranges over its map but yields sorted requirements.
	return target.Validate([]fleet.GitTarget{{Name: g.Metadata.Name, ClusterSelector: g.Spec.Selector}}) //workflowcheck:ignore
}

// Clusters and groups are changed by one rule. An entry is known by its name. An upsert first normalises
// the entry (what a Fleet document leaves to its defaults is written out, see normalizeCluster and
// normalizeGroup), then changes nothing when the entry's JSON encoding equals the registered one's: the
// encoding is what the inventory query answers, what Digest hashes and what a GitRepo renders from, so two
// entries encoded alike cannot deploy differently, and re-applying the same document never bumps the
// generation nor makes a GitRepo plan again. A remove changes nothing when the name is not registered.

// UpsertCluster adds or replaces a cluster; it reports whether anything changed.
func (inv *Inventory) UpsertCluster(c fleet.Cluster) bool {
	return upsert(inv, &inv.Clusters, normalizeCluster(c), clusterName)
}

// CheckAdd refuses to add a cluster that is registered with other settings, naming what would change.
// Adding one exactly as it is registered is no change, not an error.
func (inv *Inventory) CheckAdd(c fleet.Cluster) error {
	old, ok := inv.Cluster(c.Metadata.Name)
	if !ok {
		return nil
	}
	c = normalizeCluster(c)
	if sameEntry(old, c) {
		return nil
	}
	var changed []string
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"kubeconfig", old.Spec.KubeConfigPath + "#" + old.Spec.KubeConfigContext, c.Spec.KubeConfigPath + "#" + c.Spec.KubeConfigContext},
		{"labels", old.Metadata.Labels, c.Metadata.Labels},
		{"annotations", old.Metadata.Annotations, c.Metadata.Annotations},
		{"values", old.Spec.TemplateValues, c.Spec.TemplateValues},
		{"confineToNamespace", old.Spec.ConfineToNamespace, c.Spec.ConfineToNamespace},
		{"paused", old.Spec.Paused, c.Spec.Paused},
	} {
		if mustJSON(f.old) != mustJSON(f.new) {
			changed = append(changed, f.name)
		}
	}
	return fmt.Errorf("cluster %q is registered already with other %s; add --replace to replace its settings "+
		"(GitRepos that select it by label may then stop or start deploying to it)", c.Metadata.Name, strings.Join(changed, ", "))
}

// RemoveCluster removes a cluster, leaving or not; it reports whether it was there.
func (inv *Inventory) RemoveCluster(name string) bool {
	for i, l := range inv.Leaving {
		if l.Name == name {
			inv.Leaving = append(inv.Leaving[:i:i], inv.Leaving[i+1:]...)
			break
		}
	}
	return remove(inv, &inv.Clusters, name, clusterName)
}

// CheckLeave refuses to make a cluster leave that is not registered.
func (inv *Inventory) CheckLeave(in LeaveInput) error {
	if _, ok := inv.Cluster(in.Name); !ok {
		return fmt.Errorf("cluster %q is not registered", in.Name)
	}
	return nil
}

// Leave makes a registered cluster leave; it reports whether anything changed. Leaving again changes
// nothing, except that KeepWorkloads, once asked for, is kept: some GitRepos may have forgotten the
// cluster already, and uninstalling from it through the others would leave it half cleaned.
func (inv *Inventory) Leave(in LeaveInput) bool {
	if _, ok := inv.Cluster(in.Name); !ok {
		return false
	}
	for i, l := range inv.Leaving {
		if l.Name != in.Name {
			continue
		}
		if l.KeepWorkloads || !in.KeepWorkloads {
			return false
		}
		inv.Generation++
		inv.Leaving[i] = Leaving{Name: in.Name, KeepWorkloads: true, Generation: inv.Generation}
		return true
	}
	inv.Generation++
	inv.Leaving = append(inv.Leaving, Leaving{Name: in.Name, KeepWorkloads: in.KeepWorkloads, Generation: inv.Generation})
	sort.Slice(inv.Leaving, func(i, j int) bool { return inv.Leaving[i].Name < inv.Leaving[j].Name })
	return true
}

// LeavingCluster says whether the named cluster is leaving, and how.
func (inv *Inventory) LeavingCluster(name string) (Leaving, bool) {
	for _, l := range inv.Leaving {
		if l.Name == name {
			return l, true
		}
	}
	return Leaving{}, false
}

// CheckNotLeaving refuses to change a leaving cluster's settings: its GitRepos are uninstalling from it
// with the kubeconfig it was registered with, and a new entry would be planned for as if nothing happened.
func (inv *Inventory) CheckNotLeaving(name string) error {
	if _, ok := inv.LeavingCluster(name); ok {
		return fmt.Errorf("cluster %q is leaving (flotilla cluster remove); run `flotilla cluster remove %s` to wait until "+
			"it is gone, or add --keep-workloads to forget it at once, then register it again", name, name)
	}
	return nil
}

// UpsertGroup adds or replaces a cluster group; it reports whether anything changed.
func (inv *Inventory) UpsertGroup(g fleet.ClusterGroup) bool {
	return upsert(inv, &inv.Groups, normalizeGroup(g), groupName)
}

// RemoveGroup removes a cluster group; it reports whether it was there.
func (inv *Inventory) RemoveGroup(name string) bool {
	return remove(inv, &inv.Groups, name, groupName)
}

// upsert replaces the entry of e's name unless it is encoded alike, or adds e in name order.
func upsert[T any](inv *Inventory, entries *[]T, e T, name func(T) string) bool {
	for i, old := range *entries {
		if name(old) == name(e) {
			if sameEntry(old, e) {
				return false
			}
			(*entries)[i] = e
			inv.Generation++
			return true
		}
	}
	*entries = append(*entries, e)
	sort.Slice(*entries, func(i, j int) bool { return name((*entries)[i]) < name((*entries)[j]) })
	inv.Generation++
	return true
}

// remove drops the entry named n, if there is one.
func remove[T any](inv *Inventory, entries *[]T, n string, name func(T) string) bool {
	for i, e := range *entries {
		if name(e) == n {
			*entries = append((*entries)[:i], (*entries)[i+1:]...)
			inv.Generation++
			return true
		}
	}
	return false
}

// sameEntry is the inventory's one test of equality (see UpsertCluster).
func sameEntry(a, b any) bool { return mustJSON(a) == mustJSON(b) }

func clusterName(c fleet.Cluster) string    { return c.Metadata.Name }
func groupName(g fleet.ClusterGroup) string { return g.Metadata.Name }

// Cluster returns the named cluster.
func (inv *Inventory) Cluster(name string) (fleet.Cluster, bool) {
	for _, c := range inv.Clusters {
		if c.Metadata.Name == name {
			return c, true
		}
	}
	return fleet.Cluster{}, false
}

// Info is what templates and targeting see of a cluster, including its groups.
func (inv *Inventory) Info(c fleet.Cluster) fleet.ClusterInfo {
	groups, groupLabels := target.GroupsOf(c, inv.Groups) //workflowcheck:ignore
	ns := c.Metadata.Namespace
	if ns == "" {
		ns = fleet.DefaultNamespace
	}
	return fleet.ClusterInfo{
		Name:           c.Metadata.Name,
		Namespace:      ns,
		Labels:         c.Metadata.Labels,
		Annotations:    c.Metadata.Annotations,
		TemplateValues: c.Spec.TemplateValues,
		Groups:         groups,
		GroupLabels:    groupLabels,

		ConfineToNamespace: c.Spec.ConfineToNamespace,
	}
}

// Digest identifies a cluster's entry and group membership: a change means its bundles must be re-rendered.
func Digest(c fleet.Cluster, groups []string) string {
	sum := sha256.Sum256([]byte(mustJSON(struct {
		C fleet.Cluster
		G []string
	}{c, groups})))
	return hex.EncodeToString(sum[:8])
}

// normalizeCluster writes out a cluster's namespace and its kind: `flotilla cluster add` sends a cluster
// without them, `flotilla apply -f` a Cluster document with them, and both register the same cluster.
func normalizeCluster(c fleet.Cluster) fleet.Cluster {
	if c.Metadata.Namespace == "" {
		c.Metadata.Namespace = fleet.DefaultNamespace
	}
	c.APIVersion, c.Kind = fleet.APIVersion, fleet.KindCluster
	return c
}

// normalizeGroup writes out a group's namespace. Its kind is kept as sent: groups come only from
// ClusterGroup documents, which carry it, and entries registered before stay encoded as they were.
func normalizeGroup(g fleet.ClusterGroup) fleet.ClusterGroup {
	if g.Metadata.Namespace == "" {
		g.Metadata.Namespace = fleet.DefaultNamespace
	}
	return g
}

// mustJSON encodes plain data deterministically (sorted map keys), which workflowcheck cannot see.
//
//workflowcheck:ignore
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain data reaches here; ValidateCluster rejects what cannot be marshalled
	}
	return string(b)
}
