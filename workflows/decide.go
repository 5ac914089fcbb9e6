package workflows

import (
	"strings"

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
}

// decide picks the next release action for a bundle, as Flux's helm-controller does from the observed
// release state: nothing when the release already holds this deployment ID and its objects are intact.
func decide(in decideInput) (action string, force bool) {
	o := in.Obs
	if o.Error != "" || !o.Deploy || in.Paused {
		return "", false
	}
	r := o.Release
	switch {
	case !r.Exists:
		return api.ActionInstall, false
	case strings.HasPrefix(r.Status, "pending-") || r.Status == "uninstalling":
		// A worker killed mid-operation leaves the release locked; nothing else moves it.
		return api.ActionRecover, false
	case r.DeploymentID != o.DesiredID:
		if r.Status == "failed" && !in.RetryDue {
			return "", false
		}
		return api.ActionUpgrade, false
	case r.Status == "failed":
		if !in.RetryDue {
			return "", false
		}
		return api.ActionUpgrade, false
	case r.Status != "deployed":
		return api.ActionUpgrade, false
	}
	drifted := o.Resources.Counts.Missing > 0 || o.Resources.Counts.Modified > 0
	if drifted && in.CorrectDrift != nil && in.CorrectDrift.Enabled && in.RetryDue {
		return api.ActionRollback, in.CorrectDrift.Force
	}
	return "", false
}
