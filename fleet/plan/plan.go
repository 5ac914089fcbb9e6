// Package plan is how a GitRepo sees a checkout: its bundles, each loaded, with the targets that choose its
// clusters. The worker's Plan activity and `flotilla render --gitrepo` both use it, so a preview plans
// exactly as the worker does. It is pure: no Temporal, no cluster, only the checkout.
package plan

import (
	"fmt"
	"path"
	"reflect"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Bundle is one discovered bundle, loaded, and the targets that choose its clusters: its fleet.yaml
// overrideTargets when it has them, else the GitRepo's. Err is set when its fleet.yaml does not load.
type Bundle struct {
	Ref     bundle.Ref
	Bundle  *bundle.Bundle
	Targets []fleet.GitTarget
	Err     error
}

// Load discovers and loads every bundle of a GitRepo at a checkout. A bundle that does not load does not
// fail the others: it gets Err, naming the bundle and the file, and the GitRepo's targets, so the error
// shows where the GitRepo deploys. Its own overrideTargets are unknown then; the GitRepo workflow keeps
// such a bundle where the last good plan had it, so nothing is uninstalled because of it.
func Load(dir, gitRepo string, paths []string, targets []fleet.GitTarget) ([]Bundle, error) {
	if err := target.Validate(targets); err != nil {
		return nil, fmt.Errorf("spec.targets: %w", err)
	}
	refs, err := bundle.Discover(dir, gitRepo, paths)
	if err != nil {
		return nil, err
	}
	out := make([]Bundle, len(refs))
	for i, ref := range refs {
		out[i] = Bundle{Ref: ref, Targets: targets}
		b, err := bundle.Load(dir, ref)
		if err != nil {
			out[i].Err = fmt.Errorf("bundle %q: %w", ref.Name, err)
			continue
		}
		out[i].Bundle = b
		if o := b.FleetYAML.OverrideTargets; len(o) > 0 {
			if err := target.Validate(o); err != nil {
				out[i].Err = fmt.Errorf("bundle %q: %s: overrideTargets: %w", ref.Name, path.Join(ref.Path, "fleet.yaml"), err)
				continue
			}
			out[i].Targets = o
		}
	}
	return out, nil
}

// For lists the indexes of the bundles of a GitRepo in namespace that go to a cluster. A GitRepo targets
// only the clusters of its own workspace, as in Fleet: a cluster of another gets nothing, whatever the
// targets say (a clusterName or a selector matching it, or no targets, the "default" group). Both the
// worker's Plan and `flotilla render --gitrepo` plan through here, so neither can forget it.
func For(bundles []Bundle, namespace string, c fleet.ClusterInfo) []int {
	if fleet.Workspace(c.Namespace) != fleet.Workspace(namespace) {
		return nil
	}
	var idx []int
	for i, b := range bundles {
		if target.Matches(b.Targets, c) {
			idx = append(idx, i)
		}
	}
	return idx
}

// Warnings lists what the bundles' fleet.yaml files set that Flotilla does not act on, each naming the
// bundle, the file, the line and the key.
func Warnings(bundles []Bundle) []string {
	var w []string
	for _, b := range bundles {
		if b.Bundle == nil {
			continue
		}
		for _, m := range b.Bundle.Warnings {
			w = append(w, fmt.Sprintf("bundle %q: %s", b.Ref.Name, m))
		}
	}
	return w
}

// Rollout is the rolloutStrategy a GitRepo's clusters are rolled out with: the first (in bundle order)
// its bundles declare, nil when none does. Flotilla hands a cluster a GitRepo's commit as one, every
// bundle together, so one strategy decides for all (ADR 30); a bundle declaring another is warned about,
// naming it and the bundle whose strategy holds.
func Rollout(bundles []Bundle) (*fleet.RolloutStrategy, []string) {
	var chosen *Bundle
	var warnings []string
	for i := range bundles {
		b := &bundles[i]
		if b.Bundle == nil || b.Bundle.FleetYAML.RolloutStrategy == nil {
			continue
		}
		if chosen == nil {
			chosen = b
			continue
		}
		if !reflect.DeepEqual(b.Bundle.FleetYAML.RolloutStrategy, chosen.Bundle.FleetYAML.RolloutStrategy) {
			warnings = append(warnings, fmt.Sprintf("bundle %q: %s: rolloutStrategy differs from bundle %q's, which the GitRepo's clusters are rolled out with",
				b.Ref.Name, path.Join(b.Ref.Path, "fleet.yaml"), chosen.Ref.Name))
		}
	}
	if chosen == nil {
		return nil, nil
	}
	return chosen.Bundle.FleetYAML.RolloutStrategy, warnings
}
