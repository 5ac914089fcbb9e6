package target

import (
	"fmt"
	"strings"

	"github.com/flotilla-gitops/flotilla/fleet"
)

// The values of fleet.yaml's targetCustomizationMode (Fleet v0.16); empty means FirstMatch. Fleet's CRD
// spells them exactly so, and so does Flotilla: no other case is read.
const (
	FirstMatch = "FirstMatch"
	AllMatches = "AllMatches"
)

// CheckMode reports a targetCustomizationMode Fleet does not know, naming it.
func CheckMode(mode string) error {
	switch mode {
	case "", FirstMatch, AllMatches:
		return nil
	}
	return fmt.Errorf("targetCustomizationMode: unknown mode %q (want %s or %s)", mode, FirstMatch, AllMatches)
}

// Result is what one cluster gets of a bundle's fleet.yaml.
type Result struct {
	// Options are the root options with the customizations applied merged over them (merge.go).
	Options fleet.BundleDeploymentOptions
	// Name is the customization applied; with AllMatches, the names of those applied, joined in order by ", ".
	Name string
	// Deploy is false when a match says doNotDeploy (with AllMatches, any match): Name is then that one's,
	// and Options are the root's.
	Deploy bool
	// ValuesLevels are the levels Helm values are built from, in Fleet's order: the root's, then each
	// customization applied, in the order written. Options.Helm.Values and ValuesFiles hold them merged
	// and concatenated, which loses that order: a customization's values come after the root's files.
	ValuesLevels []ValuesLevel
}

// ValuesLevel is one level of a bundle's Helm values: fleet.yaml's root helm options or one
// targetCustomization's. Within a level, each valuesFiles entry is merged over the inline values in turn,
// as Fleet's `fleet apply` merges them into that level's values before anything else sees them.
type ValuesLevel struct {
	// Field is how errors name the level's inline values: "helm.values", "targetCustomizations[1].helm.values".
	Field       string
	Values      map[string]any
	ValuesFiles []string
}

// Customize merges the targetCustomizations matching a cluster over the bundle's root options, as
// fleet.yaml's targetCustomizationMode says: the first match (FirstMatch, the default), or every match in
// the order written (AllMatches). Options merge as Fleet merges them (merge.go).
func Customize(fy fleet.FleetYAML, c fleet.ClusterInfo) (Result, error) {
	if err := CheckMode(fy.TargetCustomizationMode); err != nil {
		return Result{}, err
	}
	// Every customization is checked before any is matched, so a broken one fails the bundle on every
	// cluster, not only on those no earlier customization matches.
	for i, tc := range fy.TargetCustomizations {
		if err := Validate([]fleet.GitTarget{{Name: tc.Name, ClusterSelector: tc.ClusterSelector, ClusterGroupSelector: tc.ClusterGroupSelector}}); err != nil {
			return Result{}, fmt.Errorf("targetCustomizations[%d]: %w", i, err)
		}
	}
	root, err := deepCopy(fy.BundleDeploymentOptions)
	if err != nil {
		return Result{}, err
	}
	res := Result{Options: root, Deploy: true, ValuesLevels: levelOf("helm.values", root.Helm, nil)}
	var names []string
	for i, tc := range fy.TargetCustomizations {
		if !(criteria{tc.ClusterName, tc.ClusterSelector, tc.ClusterGroup, tc.ClusterGroupSelector}).matches(c) {
			continue
		}
		if tc.DoNotDeploy {
			return Result{Options: root, Name: tc.Name}, nil
		}
		over, err := deepCopy(tc.BundleDeploymentOptions)
		if err != nil {
			return Result{}, err
		}
		res.Options = merge(res.Options, over)
		res.ValuesLevels = levelOf(fmt.Sprintf("targetCustomizations[%d].helm.values", i), over.Helm, res.ValuesLevels)
		if fy.TargetCustomizationMode != AllMatches {
			res.Name = tc.Name
			return res, nil
		}
		if tc.Name != "" {
			names = append(names, tc.Name)
		}
	}
	res.Name = strings.Join(names, ", ")
	return res, nil
}

// levelOf appends h's values level to levels, if h sets any values.
func levelOf(field string, h *fleet.HelmOptions, levels []ValuesLevel) []ValuesLevel {
	if h == nil || len(h.Values) == 0 && len(h.ValuesFiles) == 0 {
		return levels
	}
	return append(levels, ValuesLevel{Field: field, Values: h.Values, ValuesFiles: h.ValuesFiles})
}
