// Package plan is how a GitRepo sees a checkout: its bundles, each loaded, with the targets that choose its
// clusters. The worker's Plan activity and `flotilla render --gitrepo` both use it, so a preview plans
// exactly as the worker does. It is pure: no Temporal, no cluster, only the checkout.
package plan

import (
	"fmt"
	"path"

	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/target"
)

// Bundle is one discovered bundle, loaded, and the targets that choose its clusters: its fleet.yaml
// overrideTargets when it has them, else the GitRepo's.
type Bundle struct {
	Ref     bundle.Ref
	Bundle  *bundle.Bundle
	Targets []fleet.GitTarget
}

// Load discovers and loads every bundle of a GitRepo at a checkout. A bundle that does not load fails
// the whole plan, naming the bundle and the file: its overrideTargets are then unknown, and planning
// without them would drop clusters only they reach, and so uninstall the bundle there.
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
		b, err := bundle.Load(dir, ref)
		if err != nil {
			return nil, fmt.Errorf("bundle %q: %w", ref.Name, err)
		}
		out[i] = Bundle{Ref: ref, Bundle: b, Targets: targets}
		if o := b.FleetYAML.OverrideTargets; len(o) > 0 {
			if err := target.Validate(o); err != nil {
				return nil, fmt.Errorf("bundle %q: %s: overrideTargets: %w", ref.Name, path.Join(ref.Path, "fleet.yaml"), err)
			}
			out[i].Targets = o
		}
	}
	return out, nil
}

// For lists the indexes of the bundles that go to a cluster.
func For(bundles []Bundle, c fleet.ClusterInfo) []int {
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
		for _, m := range b.Bundle.Warnings {
			w = append(w, fmt.Sprintf("bundle %q: %s", b.Ref.Name, m))
		}
	}
	return w
}
