package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// The remembered desired-state hashes are always the hashes of the desired states: whatever changes what
// a cluster should run (the spec, the commit, the plan's bundles, the check interval, sync windows and
// their override, a pin, the cluster's own inventory entry or bundles), every cluster's remembered hash
// follows, or a change would never be handed over.
func TestARememberedDesiredHashFollowsEverythingTheDesiredStateIsBuiltFrom(t *testing.T) {
	g := bigGitRepo(6, 2, false)
	plan := g.carry.Plan
	changes := []struct {
		name     string
		change   func()
		clusters []int // the clusters whose desired state it changes; nil: all of them
	}{
		{"nothing", func() {}, []int{}},
		{"a new commit", func() { g.carry.Commit, plan.Commit = "c2", "c2" }, nil},
		{"the spec's target namespace", func() { g.spec.Spec.TargetNamespace = "apps" }, nil},
		{"the spec's repository", func() { g.spec.Spec.Repo = "https://git.example.com/org/other.git" }, nil},
		{"a bundle's path", func() { plan.Bundles[1].Path = "apps/elsewhere" }, nil},
		{"a bundle's dependsOn", func() {
			plan.Bundles[0].DependsOn = []api.Dependency{{Name: "db", Bundles: []string{plan.Bundles[1].Name}}}
		}, nil},
		{"the check interval", func() { g.opts.CheckInterval = "5m" }, nil},
		{"a cluster's inventory entry", func() { plan.Clusters[2].Digest = "relabelled" }, []int{2}},
		{"a cluster's bundles", func() { plan.Clusters[3].Bundles = []int{1} }, []int{3}},
		{"a cluster turned agent", func() { plan.Clusters[4].Agent = true }, []int{4}},
		{"a sync window for every cluster", func() {
			g.spec.Spec.SyncWindows = []fleet.SyncWindow{{Kind: "deny", Schedule: "0 22 * * *", Duration: "8h"}, {Kind: "deny", Schedule: "0 6 * * *", Duration: "1h", ClusterName: plan.Clusters[5].Name}}
		}, nil},
		{"a sync window choosing one cluster", func() { plan.Clusters[5].Windows = []int{1} }, []int{5}},
		{"the windows overridden", func() { g.carry.WindowOverride = &api.RolloutMark{By: "ops", Commit: plan.Commit} }, nil},
		{"a pin", func() {
			old := *plan
			old.Commit = "c1"
			g.carry.Pins = []pin{{Pin: api.Pin{RolloutMark: api.RolloutMark{By: "ops", Commit: "c1"}, Clusters: []string{plan.Clusters[0].Name}}, Plan: &old}}
		}, []int{0}},
		{"the pin cleared", func() { g.carry.Pins = nil }, []int{0}},
	}
	before := map[string]string{}
	for _, pc := range plan.Clusters {
		before[pc.Name] = hashOf(g.desired(pc))
	}
	for _, c := range changes {
		c.change()
		remembered := g.desiredHash()
		changed := map[int]bool{}
		for i, pc := range plan.Clusters {
			want := hashOf(g.desired(pc))
			require.Equal(t, want, remembered(pc), "after %s: cluster %s", c.name, pc.Name)
			require.Equal(t, want, remembered(pc), "after %s: cluster %s, asked again", c.name, pc.Name)
			if want != before[pc.Name] {
				changed[i] = true
			}
			before[pc.Name] = want
		}
		if c.clusters == nil {
			require.Len(t, changed, len(plan.Clusters), "%s changes what every cluster should run", c.name)
			continue
		}
		want := map[int]bool{}
		for _, i := range c.clusters {
			want[i] = true
		}
		require.Equal(t, want, changed, "%s changes what these clusters should run", c.name)
	}
}
