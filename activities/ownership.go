package activities

import (
	"fmt"

	"github.com/flotilla-gitops/flotilla/agentclient"
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/render"
)

// A release that exists under a bundle's name may belong to someone else: another GitRepo (one of the same
// name in another workspace included: a release without a namespace label is fleet-default's), another bundle
// of this GitRepo, or no Flotilla GitRepo at all (installed by hand, by Fleet, by another tool). Flotilla
// never upgrades, rolls back, repairs or uninstalls such a release unless the bundle sets
// helm.takeOwnership: last-writer-wins would have two GitRepos overwrite each other at every check, and
// deleting either would uninstall the other's workload.

// releaseConflict says why a live release is not this bundle's to change, or "" when it is. A release
// of a bundle this target no longer has is this GitRepo's own, left by a rename; it may be taken over.
func releaseConflict(st agentclient.ReleaseState, rel *render.Release, t api.ClusterTarget) string {
	if !st.Exists {
		return ""
	}
	owner, ownerBundle, self := api.ReleaseOwner(st.Labels), st.Labels[api.LabelBundle], t.Key()
	if rel.Options.Helm != nil && rel.Options.Helm.TakeOwnership {
		if owner.Name == "" || owner.Namespace == self.Namespace {
			return ""
		}
		// Adopted, another workspace's release would be uninstalled when the adopter leaves: a workspace is a
		// boundary, and content of one never takes what another deployed.
		return fmt.Sprintf("release %s/%s belongs to GitRepo %q of workspace %q: helm.takeOwnership adopts only a release no "+
			"Flotilla GitRepo owns, or one of this GitRepo's own workspace (%q); give this bundle its own helm.releaseName (or namespace)",
			st.Namespace, st.Name, owner.Qualified(), owner.Namespace, self.Namespace)
	}
	var whose string
	switch {
	case owner.Name == "":
		whose = "was not installed by Flotilla"
	case owner != self:
		// A GitRepo of the same name in another workspace is another GitRepo: name both workspaces then.
		name := owner.String()
		if owner.Namespace != self.Namespace {
			name = owner.Qualified()
		}
		whose = fmt.Sprintf("belongs to GitRepo %q (bundle %q)", name, ownerBundle)
	case ownerBundle != rel.Bundle && targetHasBundle(t, ownerBundle):
		whose = fmt.Sprintf("belongs to bundle %q of this GitRepo", ownerBundle)
	default:
		return ""
	}
	return fmt.Sprintf("release %s/%s %s: refusing to take it over; give this bundle its own helm.releaseName "+
		"(or namespace), or set helm.takeOwnership: true to adopt the release", st.Namespace, st.Name, whose)
}

func targetHasBundle(t api.ClusterTarget, name string) bool {
	for _, b := range t.Bundles {
		if b.Name == name {
			return true
		}
	}
	return false
}
