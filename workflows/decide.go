package workflows

import (
	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// decideInput is everything the pure release decision needs about one bundle.
type decideInput struct {
	Obs          api.BundleObservation
	CorrectDrift *fleet.CorrectDrift
	Paused       bool
	// RetryDue is false while a failed apply of this same desired state is backing off.
	RetryDue bool
	// Waiting names the dependencies (dependsOn) that are not in an accepted state on this cluster: until
	// they are, the release is neither installed nor upgraded.
	Waiting string
	// DependsOnError is the dependsOn cycle the bundle is on: it is never applied.
	DependsOnError string
	// DriftOnly allows only repairs of what runs (drift corrected, a locked release recovered): the
	// cluster's sync windows are closed but let drift correction through.
	DriftOnly bool
}

// decision is what to do with one bundle's release: an action (ActionNone for nothing) and, for a
// rollback, whether objects that cannot be patched are replaced.
type decision struct {
	Action api.Action
	Force  bool
}

var nothing = decision{Action: api.ActionNone}

// decide picks the next release action for a bundle, as Flux's helm-controller does from the observed
// release state: nothing when the release already holds this deployment ID and its objects are intact.
func decide(in decideInput) decision {
	if in.DependsOnError != "" || holds(in) {
		return nothing
	}
	d := decideRelease(in)
	if in.DriftOnly && (d.Action == api.ActionInstall || d.Action == api.ActionUpgrade) {
		return nothing
	}
	return d
}

// holds reports whether the bundle has a new desired state to install or upgrade (or one to retry, once
// its backoff is over) that waits for its dependencies. Repairs of what runs (a locked release recovered,
// drift corrected) re-apply the state already there and never wait: Fleet's agent checks dependencies only
// before it deploys.
func holds(in decideInput) bool {
	if in.Waiting == "" {
		return false
	}
	in.RetryDue = true
	switch decideRelease(in).Action {
	case api.ActionInstall, api.ActionUpgrade:
		return true
	}
	return false
}

// decideRelease is the decision from the release alone, whatever the bundle depends on.
func decideRelease(in decideInput) decision {
	o := in.Obs
	if o.Error != "" || !o.Deploy || in.Paused {
		return nothing
	}
	if a := o.Release.NextAction(o.DesiredID, in.RetryDue); a != api.ActionNone || o.Release.Status != api.ReleaseDeployed {
		return decision{Action: a}
	}
	drifted := o.Resources.Counts.Missing > 0 || o.Resources.Counts.Modified > 0
	if drifted && in.CorrectDrift != nil && in.CorrectDrift.Enabled && in.RetryDue {
		return decision{Action: api.ActionRollback, Force: in.CorrectDrift.Force}
	}
	return nothing
}

// effectiveCorrectDrift is the bundle's own drift correction on this cluster, as the observation reports
// it (fleet.yaml or targetCustomization over the GitRepo's); an observation recorded before it carried one
// falls back to the GitRepo's, as those runs decided.
func effectiveCorrectDrift(o api.BundleObservation, gitRepo api.DeployOptions) *fleet.CorrectDrift {
	if o.CorrectDrift != nil {
		return o.CorrectDrift
	}
	return gitRepo.CorrectDrift
}
