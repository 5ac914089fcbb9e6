package api_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet/bundle"
	"github.com/flotilla-gitops/flotilla/fleet/plan"
)

// What the plan resolved of a bundle's dependsOn reaches every cluster with the bundle, entry by entry,
// and so does the cycle it is on.
func TestThePlanHandsEachBundleItsResolvedDependsOn(t *testing.T) {
	b := plan.Bundle{Ref: bundle.Ref{Name: "multi-app", Path: "multi/app"}}
	ref := api.BundleRefOf(b, plan.Dependencies{
		DependsOn: []plan.Dependency{
			{Name: "multi-crd", Bundles: []string{"multi-crd"}},
			{Selector: "tier=db", Bundles: []string{"db-a", "db-b"}, AcceptedStates: []string{"Ready", "Modified"}},
		},
		Err: errors.New("dependsOn cycle: multi-app → multi-crd → multi-app"),
	})
	require.Equal(t, api.BundleRef{Name: "multi-app", Path: "multi/app",
		DependsOn: []api.Dependency{
			{Name: "multi-crd", Bundles: []string{"multi-crd"}},
			{Selector: "tier=db", Bundles: []string{"db-a", "db-b"}, AcceptedStates: []string{"Ready", "Modified"}},
		},
		DependsOnError: "dependsOn cycle: multi-app → multi-crd → multi-app"}, ref)

	require.Equal(t, api.BundleRef{Name: "web", Path: "web"}, api.BundleRefOf(plan.Bundle{Ref: bundle.Ref{Name: "web", Path: "web"}}, plan.Dependencies{}),
		"a bundle without dependsOn plans as before")
}
