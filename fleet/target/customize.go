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

// Customize merges the targetCustomizations matching a cluster over the bundle's root options, as
// fleet.yaml's targetCustomizationMode says: the first match (FirstMatch, the default), or every match in
// the order written (AllMatches). Options merge as Fleet merges them (merge.go).
//
// name is the customization applied; with AllMatches, the names of those applied, joined in order by ", ".
// deploy is false when a match says doNotDeploy (with AllMatches, any match): name is then that one's, and
// the options are the root's.
func Customize(fy fleet.FleetYAML, c fleet.ClusterInfo) (opts fleet.BundleDeploymentOptions, name string, deploy bool, err error) {
	if err := CheckMode(fy.TargetCustomizationMode); err != nil {
		return opts, "", false, err
	}
	// Every customization is checked before any is matched, so a broken one fails the bundle on every
	// cluster, not only on those no earlier customization matches.
	for i, tc := range fy.TargetCustomizations {
		if err := Validate([]fleet.GitTarget{{Name: tc.Name, ClusterSelector: tc.ClusterSelector, ClusterGroupSelector: tc.ClusterGroupSelector}}); err != nil {
			return opts, "", false, fmt.Errorf("targetCustomizations[%d]: %w", i, err)
		}
	}
	root, err := deepCopy(fy.BundleDeploymentOptions)
	if err != nil {
		return root, "", false, err
	}
	opts = root
	var names []string
	for _, tc := range fy.TargetCustomizations {
		if !(criteria{tc.ClusterName, tc.ClusterSelector, tc.ClusterGroup, tc.ClusterGroupSelector}).matches(c) {
			continue
		}
		if tc.DoNotDeploy {
			return root, tc.Name, false, nil
		}
		over, err := deepCopy(tc.BundleDeploymentOptions)
		if err != nil {
			return root, "", false, err
		}
		opts = merge(opts, over)
		if fy.TargetCustomizationMode != AllMatches {
			return opts, tc.Name, true, nil
		}
		if tc.Name != "" {
			names = append(names, tc.Name)
		}
	}
	return opts, strings.Join(names, ", "), true, nil
}
