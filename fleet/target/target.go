// Package target decides which clusters a GitRepo's bundles go to and which targetCustomizations apply,
// with Fleet's rules. It is pure: no I/O.
package target

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-gitops/flotilla/fleet"
)

const displayNameLabel = "management.cattle.io/cluster-display-name"

type criteria struct {
	ClusterName          string
	ClusterSelector      *metav1.LabelSelector
	ClusterGroup         string
	ClusterGroupSelector *metav1.LabelSelector
}

func (c criteria) empty() bool {
	return c.ClusterName == "" && c.ClusterSelector == nil && c.ClusterGroup == "" && c.ClusterGroupSelector == nil
}

func selectorMatches(s *metav1.LabelSelector, l map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(l))
}

// matches AND-s every criterion set; a target with none matches nothing.
func (c criteria) matches(ci fleet.ClusterInfo) bool {
	if c.empty() {
		return false
	}
	if c.ClusterName != "" && c.ClusterName != ci.Name && c.ClusterName != ci.Labels[displayNameLabel] {
		return false
	}
	if c.ClusterSelector != nil && !selectorMatches(c.ClusterSelector, ci.Labels) {
		return false
	}
	if c.ClusterGroup == "" && c.ClusterGroupSelector == nil {
		return true
	}
	// Fleet weighs a cluster once per group it is in: clusterGroup and clusterGroupSelector must both hold
	// for the same group, not one for a group named so and the other for a group labelled so.
	for _, g := range ci.Groups {
		if (c.ClusterGroup == "" || c.ClusterGroup == g) &&
			(c.ClusterGroupSelector == nil || selectorMatches(c.ClusterGroupSelector, ci.GroupLabels[g])) {
			return true
		}
	}
	return false
}

// Matches reports whether a cluster is targeted: the first matching target decides, and doNotDeploy
// excludes. No targets means Fleet's default, the ClusterGroup "default".
func Matches(targets []fleet.GitTarget, c fleet.ClusterInfo) bool {
	if len(targets) == 0 {
		targets = []fleet.GitTarget{{Name: "default", ClusterGroup: DefaultGroup}}
	}
	for _, t := range targets {
		if (criteria{t.ClusterName, t.ClusterSelector, t.ClusterGroup, t.ClusterGroupSelector}).matches(c) {
			return !t.DoNotDeploy
		}
	}
	return false
}

// Validate reports selectors that cannot be parsed, naming the target.
func Validate(targets []fleet.GitTarget) error {
	for i, t := range targets {
		for field, s := range map[string]*metav1.LabelSelector{"clusterSelector": t.ClusterSelector, "clusterGroupSelector": t.ClusterGroupSelector} {
			if s == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
				name := t.Name
				if name == "" {
					name = fmt.Sprint(i)
				}
				return fmt.Errorf("target %s: %s: %v", name, field, err)
			}
		}
	}
	return nil
}

// GroupsOf lists the groups a cluster belongs to, with each group's labels (for clusterGroupSelector).
// Only groups of the cluster's own workspace hold it, as in Fleet, and the implicit "default" group is
// each workspace's own: a group named "default" in one workspace leaves every other's as it is.
func GroupsOf(c fleet.Cluster, groups []fleet.ClusterGroup) ([]string, map[string]map[string]string) {
	var names []string
	gl := map[string]map[string]string{}
	ownDefault := false
	for _, g := range groups {
		if fleet.Workspace(g.Metadata.Namespace) != fleet.Workspace(c.Metadata.Namespace) {
			continue
		}
		ownDefault = ownDefault || g.Metadata.Name == DefaultGroup
		if g.Spec.Selector != nil && selectorMatches(g.Spec.Selector, c.Metadata.Labels) {
			names = append(names, g.Metadata.Name)
			gl[g.Metadata.Name] = g.Metadata.Labels
		}
	}
	if !ownDefault {
		names = append(names, DefaultGroup)
		sort.Strings(names)
	}
	return names, gl
}

// DefaultGroup is the ClusterGroup that a GitRepo without targets deploys to (Fleet's rule). Until the
// user applies a ClusterGroup of that name, it holds every registered cluster, as Fleet's own "default"
// group does, so a single-cluster quick start with no targets deploys.
const DefaultGroup = "default"

// Selects reports whether a cluster matches a partition's or target's criteria (every one set must hold;
// none set matches nothing), without a target's doNotDeploy and first-match rules.
func Selects(clusterName string, clusterSelector *metav1.LabelSelector, clusterGroup string, clusterGroupSelector *metav1.LabelSelector, c fleet.ClusterInfo) bool {
	return criteria{clusterName, clusterSelector, clusterGroup, clusterGroupSelector}.matches(c)
}
