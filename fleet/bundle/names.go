package bundle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/flotilla-gitops/flotilla/fleet/names"
)

// checkName refuses a fleet.yaml name that cannot be the value of the flotilla.dev/bundle label every
// object and release of the bundle carries.
func checkName(name string) error {
	if name == "" || len(validation.IsValidLabelValue(name)) == 0 {
		return nil
	}
	return fmt.Errorf("name %q: must be a Kubernetes label value: at most %d characters, letters, digits, "+
		"'-', '_' or '.', starting and ending with a letter or digit", name, validation.LabelValueMaxLength)
}

// checkDistinct refuses two bundles that would share a name or a Helm release on a cluster: each deploy of
// one would overwrite the other's release. Names that differ can still share a release: HelmReleaseName
// folds runs of '-' ("a--b" and "a-b").
func checkDistinct(refs []Ref) error {
	byName := map[string]Ref{}
	byRelease := map[string]Ref{}
	for _, r := range refs {
		if other, dup := byName[r.Name]; dup {
			return fmt.Errorf("bundles %q and %q are both named %q; set distinct names in their fleet.yaml", other.Path, r.Path, r.Name)
		}
		byName[r.Name] = r
		release := names.HelmReleaseName(r.Name)
		if other, dup := byRelease[release]; dup {
			return fmt.Errorf("bundles %q (named %q) and %q (named %q) would share the Helm release %q; "+
				"set distinct names in their fleet.yaml", other.Path, other.Name, r.Path, r.Name, release)
		}
		byRelease[release] = r
	}
	return nil
}
