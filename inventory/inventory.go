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
	"math"
	"net"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Inventory is every registered cluster and group. Generation increases on every change.
type Inventory struct {
	Generation int64                `json:"generation"`
	Clusters   []fleet.Cluster      `json:"clusters"`
	Groups     []fleet.ClusterGroup `json:"groups"`
	// Leaving are registered clusters on their way out (`flotilla cluster remove`, ADR 16), in name order:
	// no GitRepo targets them any more, each GitRepo that ran on one uninstalls from it (or only forgets
	// it, KeepWorkloads), and the cluster stays registered, kubeconfig path included, so that the uninstall
	// can reach it. The inventory workflow forgets it (RemoveCluster) once no GitRepo holds anything there
	// (ADR 29).
	Leaving []Leaving `json:"leaving,omitempty"`
}

// Leaving is one cluster on its way out of the inventory.
type Leaving struct {
	Name string `json:"name"`
	// Namespace is its workspace; empty is fleet-default.
	Namespace string `json:"namespace,omitempty"`
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
	// Namespace is its workspace; empty is fleet-default.
	Namespace string `json:"namespace,omitempty"`
	// KeepWorkloads forgets the cluster without uninstalling anything from it.
	KeepWorkloads bool `json:"keepWorkloads,omitempty"`
	// ManagedBy is who asks: ManagedByController for a deleted Cluster object, empty for the CLI
	// (CheckClusterOwner).
	ManagedBy string `json:"managedBy,omitempty"`
}

// RemoveInput names a cluster or group to remove.
type RemoveInput struct {
	Name string `json:"name"`
	// Namespace is its workspace; empty is fleet-default, as in every removal sent before workspaces.
	Namespace string `json:"namespace,omitempty"`
	// ManagedBy is who asks, as LeaveInput's.
	ManagedBy string `json:"managedBy,omitempty"`
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
	name := clusterName(c)
	if err := validNamespace(c.Metadata.Namespace); err != nil {
		return fmt.Errorf("cluster %q: metadata.namespace %q: must be a DNS label", name, c.Metadata.Namespace)
	}
	if err := validAccess(name, c.Spec); err != nil {
		return err
	}
	// A kubeconfig Secret is read in the cluster's own namespace only: one workspace names no other's Secrets.
	if ns := c.Spec.KubeConfigSecretNamespace; ns != "" && ns != fleet.Workspace(c.Metadata.Namespace) {
		return fmt.Errorf("cluster %q: spec.kubeConfigSecretNamespace %q: a kubeconfig Secret is read in the cluster's own namespace %q only",
			name, ns, fleet.Workspace(c.Metadata.Namespace))
	}
	if c.Spec.KubeConfigSecretNamespace != "" && c.Spec.KubeConfigSecret == "" {
		return fmt.Errorf("cluster %q: spec.kubeConfigSecretNamespace is set without spec.kubeConfigSecret", name)
	}
	if ns := c.Spec.ConfineToNamespace; ns != "" && (!dnsLabel.MatchString(ns) || len(ns) > 63) {
		return fmt.Errorf("cluster %q: spec.confineToNamespace %q: must be a DNS label", name, ns)
	}
	if err := encodable(c.Spec.TemplateValues); err != nil {
		return fmt.Errorf("cluster %q: spec.templateValues: %v", name, err)
	}
	return nil
}

// validAccess checks how the management side reaches the cluster: through a kubeconfig on the worker's
// host, or through the cluster's own agent (ADR 22), never both, since the cluster workflow sends its
// activities to one place only and a kubeconfig left beside an agent would suggest a path that is not taken.
func validAccess(name string, s fleet.ClusterSpec) error {
	var ways []string
	for _, w := range []struct {
		field string
		set   bool
	}{{"spec.kubeConfigPath", s.KubeConfigPath != ""}, {"spec.kubeConfigSecret", s.KubeConfigSecret != ""}, {"spec.agent", s.Agent != nil}} {
		if w.set {
			ways = append(ways, w.field)
		}
	}
	switch {
	case len(ways) > 1:
		return fmt.Errorf("cluster %q: %s are all set: give one (a kubeconfig on the worker's host, a kubeconfig Secret in the "+
			"management cluster, or an agent in the cluster that dials out)", name, strings.Join(ways, " and "))
	case len(ways) == 0:
		return fmt.Errorf("cluster %q: spec.kubeConfigPath, spec.kubeConfigSecret or spec.agent is required (a kubeconfig file on the "+
			"worker's host, a kubeconfig Secret in the management cluster, or an agent in the cluster that dials out)", name)
	}
	if s.Agent == nil {
		return nil
	}
	if s.KubeConfigContext != "" {
		return fmt.Errorf("cluster %q: spec.kubeConfigContext %q is set on an agent-mode cluster (spec.agent): the agent uses its own "+
			"cluster's credentials, remove it", name, s.KubeConfigContext)
	}
	return ValidateAgent(name, *s.Agent)
}

// agentLogLevels are the levels the agent's --log-level takes.
var agentLogLevels = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}

// ValidateAgent checks an agent-mode cluster's agent settings; name is how errors name the cluster. An
// empty field is valid: it takes its default when the agent's manifest is made.
func ValidateAgent(name string, a fleet.ClusterAgent) error {
	if a.LogLevel != "" && !agentLogLevels[a.LogLevel] {
		return fmt.Errorf("cluster %q: spec.agent.logLevel %q: must be debug, info, warn or error", name, a.LogLevel)
	}
	if ns := a.Namespace; ns != "" && (!dnsLabel.MatchString(ns) || len(ns) > 63) {
		return fmt.Errorf("cluster %q: spec.agent.namespace %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", name, ns)
	}
	if a.MaxConcurrentActivities < 0 {
		return fmt.Errorf("cluster %q: spec.agent.maxConcurrentActivities %d: must not be negative", name, a.MaxConcurrentActivities)
	}
	// NaN and infinities cannot be encoded in JSON, so they would not even reach the inventory intact.
	if a.HelmQPS < 0 || math.IsNaN(a.HelmQPS) || math.IsInf(a.HelmQPS, 0) {
		return fmt.Errorf("cluster %q: spec.agent.helmQPS %v: must be a finite number, not negative", name, a.HelmQPS)
	}
	if a.HelmBurst < 0 {
		return fmt.Errorf("cluster %q: spec.agent.helmBurst %d: must not be negative", name, a.HelmBurst)
	}
	if addr := a.TemporalAddress; addr != "" {
		if host, port, err := net.SplitHostPort(addr); err != nil || host == "" || port == "" {
			return fmt.Errorf("cluster %q: spec.agent.temporalAddress %q: must be host:port", name, addr)
		}
	}
	if strings.IndexFunc(a.Image, unicode.IsSpace) >= 0 {
		return fmt.Errorf("cluster %q: spec.agent.image %q: must not contain spaces", name, a.Image)
	}
	return nil
}

// validNamespace accepts an empty namespace (fleet-default) or a DNS label: a workspace's name goes into
// GitRepo workflow IDs and release labels.
func validNamespace(ns string) error {
	if ns != "" && (!dnsLabel.MatchString(ns) || len(ns) > 63) {
		return fmt.Errorf("not a DNS label")
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
	if err := validNamespace(g.Metadata.Namespace); err != nil {
		return fmt.Errorf("cluster group %q: metadata.namespace %q: must be a DNS label", groupName(g), g.Metadata.Namespace)
	}
	// Parsing a selector ranges over its map but yields sorted requirements.
	return target.Validate([]fleet.GitTarget{{Name: g.Metadata.Name, ClusterSelector: g.Spec.Selector}}) //workflowcheck:ignore
}

// Clusters and groups are changed by one rule. An entry is known by its namespace (its workspace, as in
// Fleet: fleet-default when it names none) and its name, so two workspaces may each have an "edge". An upsert first normalises
// the entry (what a Fleet document leaves to its defaults is written out, see normalizeCluster and
// normalizeGroup), then changes nothing when the entry's JSON encoding equals the registered one's: the
// encoding is what the inventory query answers, what Digest hashes and what a GitRepo renders from, so two
// entries encoded alike cannot deploy differently, and re-applying the same document never bumps the
// generation nor makes a GitRepo plan again. A remove changes nothing when the name is not registered.

// UpsertCluster adds or replaces a cluster; it reports whether anything changed.
func (inv *Inventory) UpsertCluster(c fleet.Cluster) bool {
	return upsert(inv, &inv.Clusters, normalizeCluster(c), clusterKey)
}

// CheckAdd refuses to add a cluster that is registered with other settings, naming what would change.
// Adding one exactly as it is registered is no change, not an error.
func (inv *Inventory) CheckAdd(c fleet.Cluster) error {
	old, ok := inv.Cluster(c.Metadata.Namespace, c.Metadata.Name)
	if !ok {
		return nil
	}
	c = normalizeCluster(c)
	if sameEntry(old, c) {
		return nil
	}
	var changed []string
	switch {
	case mode(old) != mode(c):
		// Naming the kubeconfig too would say nothing more: one of the two has none.
		changed = append(changed, "mode ("+mode(old)+", now "+mode(c)+")")
	case old.Spec.Agent != nil:
		changed = append(changed, agentChanges(*old.Spec.Agent, *c.Spec.Agent)...)
	case old.Spec.KubeConfigPath+"#"+old.Spec.KubeConfigSecret+"#"+old.Spec.KubeConfigContext != c.Spec.KubeConfigPath+"#"+c.Spec.KubeConfigSecret+"#"+c.Spec.KubeConfigContext:
		changed = append(changed, "kubeconfig")
	}
	for _, f := range []struct {
		name     string
		old, new any
	}{
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
		"(GitRepos that select it by label may then stop or start deploying to it)", clusterName(c), strings.Join(changed, ", "))
}

// mode is how the management side reaches a cluster: "agent" (pull mode) or "kubeconfig".
func mode(c fleet.Cluster) string {
	if c.Spec.Agent != nil {
		return "agent"
	}
	return "kubeconfig"
}

// agentChanges names the agent settings that differ, as supplied: a setting spelled out as its default is
// a change of the registration (the operator chose to pin it), though not of the agent's effective
// configuration, which internal/agentmanifest compares to decide whether the agent is redeployed.
func agentChanges(old, c fleet.ClusterAgent) []string {
	var out []string
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"image", old.Image, c.Image},
		{"namespace", old.Namespace, c.Namespace},
		{"logLevel", old.LogLevel, c.LogLevel},
		{"maxConcurrentActivities", old.MaxConcurrentActivities, c.MaxConcurrentActivities},
		{"helmQPS", old.HelmQPS, c.HelmQPS},
		{"helmBurst", old.HelmBurst, c.HelmBurst},
		{"temporalAddress", old.TemporalAddress, c.TemporalAddress},
		{"temporalNamespace", old.TemporalNamespace, c.TemporalNamespace},
	} {
		if f.old != f.new {
			out = append(out, "agent."+f.name)
		}
	}
	return out
}

// RemoveCluster removes the cluster name of workspace ns, leaving or not; it reports whether it was there.
func (inv *Inventory) RemoveCluster(ns, name string) bool {
	for i, l := range inv.Leaving {
		if l.key() == entryKey(ns, name) {
			inv.Leaving = append(inv.Leaving[:i:i], inv.Leaving[i+1:]...)
			break
		}
	}
	return remove(inv, &inv.Clusters, entryKey(ns, name), clusterKey)
}

// CheckLeave refuses to make a cluster leave that is not registered.
func (inv *Inventory) CheckLeave(in LeaveInput) error {
	if _, ok := inv.Cluster(in.Namespace, in.Name); !ok {
		return fmt.Errorf("cluster %q is not registered", fleet.DisplayName(in.Namespace, in.Name))
	}
	return inv.CheckClusterOwner(in.Namespace, in.Name, in.ManagedBy)
}

// Leave makes a registered cluster leave; it reports whether anything changed. Leaving again changes
// nothing, except that KeepWorkloads, once asked for, is kept: some GitRepos may have forgotten the
// cluster already, and uninstalling from it through the others would leave it half cleaned.
func (inv *Inventory) Leave(in LeaveInput) bool {
	if _, ok := inv.Cluster(in.Namespace, in.Name); !ok {
		return false
	}
	ns := payloadNamespace(in.Namespace)
	for i, l := range inv.Leaving {
		if l.key() != entryKey(in.Namespace, in.Name) {
			continue
		}
		if l.KeepWorkloads || !in.KeepWorkloads {
			return false
		}
		inv.Generation++
		inv.Leaving[i] = Leaving{Name: in.Name, Namespace: ns, KeepWorkloads: true, Generation: inv.Generation}
		return true
	}
	inv.Generation++
	inv.Leaving = append(inv.Leaving, Leaving{Name: in.Name, Namespace: ns, KeepWorkloads: in.KeepWorkloads, Generation: inv.Generation})
	sort.Slice(inv.Leaving, func(i, j int) bool { return inv.Leaving[i].key() < inv.Leaving[j].key() })
	return true
}

// LeavingCluster says whether the cluster name of workspace ns is leaving, and how.
func (inv *Inventory) LeavingCluster(ns, name string) (Leaving, bool) {
	for _, l := range inv.Leaving {
		if l.key() == entryKey(ns, name) {
			return l, true
		}
	}
	return Leaving{}, false
}

// LeavingIn are the leaving clusters of workspace ns: the ones a GitRepo of that namespace lets go of.
func (inv *Inventory) LeavingIn(ns string) []Leaving {
	var out []Leaving
	for _, l := range inv.Leaving {
		if fleet.Workspace(l.Namespace) == fleet.Workspace(ns) {
			out = append(out, l)
		}
	}
	return out
}

func (l Leaving) key() string { return entryKey(l.Namespace, l.Name) }

// payloadNamespace keeps fleet-default empty, as every payload written before workspaces has it.
func payloadNamespace(ns string) string {
	if fleet.Workspace(ns) == fleet.DefaultNamespace {
		return ""
	}
	return ns
}

// CheckNotLeaving refuses to change a leaving cluster's settings: its GitRepos are uninstalling from it
// with the kubeconfig it was registered with, and a new entry would be planned for as if nothing happened.
func (inv *Inventory) CheckNotLeaving(ns, name string) error {
	if _, ok := inv.LeavingCluster(ns, name); ok {
		flag := ""
		if fleet.Workspace(ns) != fleet.DefaultNamespace {
			flag = " -n " + ns
		}
		return fmt.Errorf("cluster %q is leaving (flotilla cluster remove); run `flotilla cluster remove %s%s` to wait until "+
			"it is gone, or add --keep-workloads to forget it at once, then register it again", fleet.DisplayName(ns, name), name, flag)
	}
	return nil
}

// UpsertGroup adds or replaces a cluster group; it reports whether anything changed.
func (inv *Inventory) UpsertGroup(g fleet.ClusterGroup) bool {
	return upsert(inv, &inv.Groups, normalizeGroup(g), groupKey)
}

// RemoveGroup removes the cluster group name of workspace ns; it reports whether it was there.
func (inv *Inventory) RemoveGroup(ns, name string) bool {
	return remove(inv, &inv.Groups, entryKey(ns, name), groupKey)
}

// upsert replaces the entry of e's key unless it is encoded alike, or adds e in key order.
func upsert[T any](inv *Inventory, entries *[]T, e T, key func(T) string) bool {
	// One pass finds the entry, or where a new one goes in key order: sorting the whole list on every
	// insert made registering 10,000 clusters take 20 s of the inventory workflow's time.
	k, at, sorted, prev := key(e), len(*entries), true, ""
	for i, old := range *entries {
		ok := key(old)
		if ok == k {
			if sameEntry(old, e) {
				return false
			}
			(*entries)[i] = e
			inv.Generation++
			return true
		}
		sorted = sorted && (i == 0 || prev <= ok)
		if ok > k && at == len(*entries) {
			at = i
		}
		prev = ok
	}
	if sorted {
		*entries = slices.Insert(*entries, at, e)
	} else {
		*entries = append(*entries, e)
		sort.Slice(*entries, func(i, j int) bool { return key((*entries)[i]) < key((*entries)[j]) })
	}
	inv.Generation++
	return true
}

// remove drops the entry of key k, if there is one.
func remove[T any](inv *Inventory, entries *[]T, k string, key func(T) string) bool {
	for i, e := range *entries {
		if key(e) == k {
			*entries = append((*entries)[:i], (*entries)[i+1:]...)
			inv.Generation++
			return true
		}
	}
	return false
}

// sameEntry is the inventory's one test of equality (see UpsertCluster).
func sameEntry(a, b any) bool { return mustJSON(a) == mustJSON(b) }

// entryKey orders entries by name, then workspace: a fleet-default-only inventory keeps the order it had
// before workspaces, and one name's entries of several workspaces sit together. NUL sorts before every
// character a DNS label has.
func entryKey(ns, name string) string { return name + "\x00" + fleet.Workspace(ns) }

func clusterKey(c fleet.Cluster) string    { return entryKey(c.Metadata.Namespace, c.Metadata.Name) }
func groupKey(g fleet.ClusterGroup) string { return entryKey(g.Metadata.Namespace, g.Metadata.Name) }

// clusterName and groupName are how messages name an entry: with its workspace outside fleet-default.
func clusterName(c fleet.Cluster) string {
	return fleet.DisplayName(c.Metadata.Namespace, c.Metadata.Name)
}
func groupName(g fleet.ClusterGroup) string {
	return fleet.DisplayName(g.Metadata.Namespace, g.Metadata.Name)
}

// Cluster returns the cluster name of workspace ns (fleet-default when empty).
func (inv *Inventory) Cluster(ns, name string) (fleet.Cluster, bool) {
	for _, c := range inv.Clusters {
		if c.Metadata.Name == name && fleet.Workspace(c.Metadata.Namespace) == fleet.Workspace(ns) {
			return c, true
		}
	}
	return fleet.Cluster{}, false
}

// InWorkspace is the part of the inventory in workspace ns: its clusters and groups, what a GitRepo of
// that namespace can target.
func (inv *Inventory) InWorkspace(ns string) Inventory {
	out := Inventory{Generation: inv.Generation, Clusters: []fleet.Cluster{}, Groups: []fleet.ClusterGroup{}}
	for _, c := range inv.Clusters {
		if fleet.Workspace(c.Metadata.Namespace) == fleet.Workspace(ns) {
			out.Clusters = append(out.Clusters, c)
		}
	}
	for _, g := range inv.Groups {
		if fleet.Workspace(g.Metadata.Namespace) == fleet.Workspace(ns) {
			out.Groups = append(out.Groups, g)
		}
	}
	out.Leaving = inv.LeavingIn(ns)
	return out
}

// Info is what templates and targeting see of a cluster, including its groups.
func (inv *Inventory) Info(c fleet.Cluster) fleet.ClusterInfo {
	groups, groupLabels := target.GroupsOf(c, inv.Groups) //workflowcheck:ignore
	return fleet.ClusterInfo{
		Name:           c.Metadata.Name,
		Namespace:      fleet.Workspace(c.Metadata.Namespace),
		Labels:         c.Metadata.Labels,
		Annotations:    c.Metadata.Annotations,
		TemplateValues: c.Spec.TemplateValues,
		Groups:         groups,
		GroupLabels:    groupLabels,

		ConfineToNamespace: c.Spec.ConfineToNamespace,
	}
}

// Digest identifies a cluster's entry and group membership: a change means its bundles must be re-rendered.
// The entry includes how the cluster is reached (kubeconfig or spec.agent and its settings as supplied), so
// a cluster moved to an agent, or an agent setting changed, is a change its GitRepos see.
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
