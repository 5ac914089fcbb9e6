package workflows

import (
	"time"

	"github.com/flotilla-gitops/flotilla/api"
)

// deployment builds the record of one Apply from its actions, the observation they were decided on and
// its result (nil when the apply did not run: applyErr says why). Skipped bundles (their desired state
// moved on before the apply) are left out; nil when nothing is left. It is pure.
func deployment(at time.Time, took time.Duration, commit string, actions []api.BundleAction, obs api.Observation,
	res *api.ApplyResult, applyErr error) *api.Deployment {
	chart := map[string]string{}
	for _, o := range obs.Bundles {
		chart[o.Bundle] = o.ChartVersion
	}
	d := &api.Deployment{At: at, Seconds: took.Seconds(), Commit: commit, Bundles: []api.DeployedBundle{}, Attempts: 1}
	if res == nil {
		d.Error = "not applied"
		if applyErr != nil {
			d.Error = applyErr.Error()
		}
		for _, a := range actions {
			d.Bundles = append(d.Bundles, api.DeployedBundle{Bundle: a.Bundle, Action: a.Action, ChartVersion: chart[a.Bundle]})
		}
		return d
	}
	action := map[string]api.Action{}
	for _, a := range actions {
		action[a.Bundle] = a.Action
	}
	for _, b := range res.Bundles {
		if b.Skipped {
			continue
		}
		d.Bundles = append(d.Bundles, api.DeployedBundle{Bundle: b.Bundle, Action: action[b.Bundle], ChartVersion: chart[b.Bundle],
			Revision: b.Revision, Error: b.Error})
	}
	if len(d.Bundles) == 0 {
		return nil
	}
	return d
}

// remember adds a deployment to a cluster's history and keeps the last api.HistoryLength. A failure that
// repeats the last one (same commit, same bundles, same errors: an apply retried with backoff) counts as
// another attempt of it, so a cluster failing for hours keeps the deployments before the failure.
func remember(history []api.Deployment, d api.Deployment) []api.Deployment {
	if n := len(history); n > 0 && d.Failed() && sameOutcome(history[n-1], d) {
		last := &history[n-1]
		last.Attempts++
		last.At, last.Seconds = d.At, d.Seconds
		return history
	}
	history = append(history, d)
	if over := len(history) - api.HistoryLength; over > 0 {
		history = append(history[:0:0], history[over:]...)
	}
	return history
}

func sameOutcome(a, b api.Deployment) bool {
	if a.Commit != b.Commit || a.Error != b.Error || len(a.Bundles) != len(b.Bundles) {
		return false
	}
	for i := range a.Bundles {
		x, y := a.Bundles[i], b.Bundles[i]
		if x.Bundle != y.Bundle || x.Action != y.Action || x.Error != y.Error || x.Revision != y.Revision {
			return false
		}
	}
	return true
}
