package workflows

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flotilla-gitops/flotilla/api"
)

// A new plan that removes everything, or most of a fleet, is far more often a mistake (a commit that left
// only a README under the path, a selector typo, a relabelled cluster) than an intent: Argo CD's users
// learnt it the hard way. Such a plan is held until a person approves it; the clusters keep what they run.

// HeldPlan is a plan waiting for approval because it would uninstall too much.
type HeldPlan struct {
	// Key identifies the held plan: its commit, inventory generation and plan key.
	Key                 string `json:"key"`
	Commit              string `json:"commit"`
	InventoryGeneration int64  `json:"inventoryGeneration"`
	PlanKey             string `json:"planKey"`
	// Message says what the plan would remove and how to approve it.
	Message string `json:"message"`
}

// massRemovalMinClusters and the majority rule set what a large share of clusters is: dropping one cluster
// of a GitRepo is routine (a cluster leaves, a label changes); dropping most of them at once is not.
const massRemovalMinClusters = 2

// removalHold says why next may not replace prev without approval, or "" when it may. It is pure.
// Clusters leaving the inventory (`flotilla cluster remove`, ADR 16) are a person's deliberate act, not a
// mistake to guard against: they count neither among the clusters the plan drops nor among those it ran
// on, so removing the last or most clusters of a GitRepo that way passes, while a typo dropping the rest
// is still held.
func removalHold(gitRepo api.GitRepoKey, prev, next *api.Plan, leaving []api.LeavingCluster) string {
	if prev == nil {
		return ""
	}
	sync := gitRepo.Name
	if !gitRepo.IsDefault() {
		sync = "-n " + gitRepo.Namespace + " " + gitRepo.Name
	}
	approve := fmt.Sprintf("nothing was uninstalled; if this is intended, approve it with `flotilla sync %s --allow-removal`", sync)
	if len(next.Bundles) == 0 && len(prev.Bundles) > 0 {
		return fmt.Sprintf("held: commit %s has no bundles under the GitRepo's paths; applying it would uninstall "+
			"%d bundle(s) from %d cluster(s); %s", api.ShortCommit(next.Commit), len(prev.Bundles), len(prev.Clusters), approve)
	}
	kept := map[string]bool{}
	for _, c := range next.Clusters {
		kept[c.Name] = true
	}
	deliberate := map[string]bool{}
	for _, l := range leaving {
		deliberate[l.Name] = true
	}
	var dropped []string
	ran := 0
	for _, c := range prev.Clusters {
		if deliberate[c.Name] {
			continue
		}
		ran++
		if !kept[c.Name] {
			dropped = append(dropped, c.Name)
		}
	}
	if len(dropped) < massRemovalMinClusters || 2*len(dropped) <= ran {
		return ""
	}
	names := dropped
	more := ""
	if len(names) > 10 {
		names, more = names[:10], fmt.Sprintf(" and %d more", len(dropped)-10)
	}
	return fmt.Sprintf("held: commit %s with inventory generation %d targets %d of the %d clusters this GitRepo "+
		"runs on; applying it would uninstall it from %d of them (%s%s); %s", api.ShortCommit(next.Commit),
		next.InventoryGeneration, len(next.Clusters), ran, len(dropped), strings.Join(names, ", "), more, approve)
}

// dropLeaving returns the plan without the clusters leaving the inventory, and whether it had any: a
// GitRepo stops targeting a leaving cluster at once, whether its newest plan is held, failed or not made
// yet. It is pure; the plan given is not changed.
func dropLeaving(p *api.Plan, leaving []api.LeavingCluster) (*api.Plan, bool) {
	if p == nil || len(leaving) == 0 {
		return p, false
	}
	gone := map[string]bool{}
	for _, l := range leaving {
		gone[l.Name] = true
	}
	kept := make([]api.PlannedCluster, 0, len(p.Clusters))
	for _, c := range p.Clusters {
		if !gone[c.Name] {
			kept = append(kept, c)
		}
	}
	if len(kept) == len(p.Clusters) {
		return p, false
	}
	out := *p
	out.Clusters = kept
	return &out, true
}

// keepUnloaded keeps every bundle whose fleet.yaml does not load where the last good plan had it: its
// overrideTargets are unknown, and planning it with the GitRepo's targets would drop the clusters only
// they reached, and so uninstall it there. Those clusters keep its release and show its error; a bundle
// the last plan did not have keeps the GitRepo's targets, where its error then shows. It is pure.
func keepUnloaded(prev *api.Plan, next *api.Plan) {
	if prev == nil || len(next.Unloaded) == 0 {
		return
	}
	prevIndex := map[string]int{}
	for i, b := range prev.Bundles {
		prevIndex[b.Name] = i
	}
	clusters := map[string]*api.PlannedCluster{}
	for i := range next.Clusters {
		clusters[next.Clusters[i].Name] = &next.Clusters[i]
	}
	var added []api.PlannedCluster
	for _, u := range next.Unloaded {
		j, known := prevIndex[next.Bundles[u].Name]
		if !known {
			continue
		}
		had := map[string]bool{}
		for _, pc := range prev.Clusters {
			if containsInt(pc.Bundles, j) {
				had[pc.Name] = true
				if c, ok := clusters[pc.Name]; ok {
					if !containsInt(c.Bundles, u) {
						c.Bundles = append(c.Bundles, u)
					}
				} else {
					added = append(added, api.PlannedCluster{Name: pc.Name, Digest: pc.Digest, Paused: pc.Paused, Bundles: []int{u}, Agent: pc.Agent})
				}
			}
		}
		for i := range next.Clusters {
			if c := &next.Clusters[i]; !had[c.Name] {
				c.Bundles = removeInt(c.Bundles, u)
			}
		}
	}
	next.Clusters = append(next.Clusters, added...)
	kept := next.Clusters[:0]
	for _, c := range next.Clusters {
		if len(c.Bundles) > 0 {
			sort.Ints(c.Bundles)
			kept = append(kept, c)
		}
	}
	next.Clusters = kept
	sort.Slice(next.Clusters, func(i, j int) bool { return next.Clusters[i].Name < next.Clusters[j].Name })
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func removeInt(s []int, v int) []int {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
