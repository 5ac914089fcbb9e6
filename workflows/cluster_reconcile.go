package workflows

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"go.temporal.io/sdk/workflow"
)

// reconcile observes, decides, acts, reports, and returns how long to wait before the next check.
func (r *clusterRun) reconcile(ctx workflow.Context) time.Duration {
	now := workflow.Now(ctx)
	st := &r.carry.Status
	st.Generation = r.in.Generation
	st.LastChecked = now
	obs, err := r.observe(ctx)
	if err != nil {
		return r.unreachable(ctx, err)
	}
	if r.newerDesiredWaiting(ctx) {
		return minCheckDelay
	}
	var actions []api.BundleAction
	for _, o := range obs.Bundles {
		if f, failed := r.carry.Failures[o.Bundle]; failed && f.DesiredID != o.DesiredID {
			delete(r.carry.Failures, o.Bundle) // a new desired state deserves a fresh attempt
		}
	}
	judge := r.judge(obs, now, workflow.Now(ctx))
	for _, o := range obs.Bundles {
		d := decide(judge.decideInput(o))
		if d.Action != api.ActionNone {
			actions = append(actions, api.BundleAction{Bundle: o.Bundle, Action: d.Action, ExpectedID: o.DesiredID, Force: d.Force})
		}
	}
	sweep, sweepKey := r.sweepFor(ctx, obs)
	if len(actions) > 0 {
		started := workflow.Now(ctx)
		res, err := r.apply(ctx, actions, sweep)
		if err != nil {
			r.recordDeployment(deployment(started, workflow.Now(ctx).Sub(started), r.in.Target.Commit, actions, obs, nil, err))
			return r.unreachable(ctx, err)
		}
		r.recordDeployment(deployment(started, workflow.Now(ctx).Sub(started), r.in.Target.Commit, actions, obs, &res, nil))
		r.recordSweep(ctx, sweep, sweepKey, res.Swept, res.SweepError)
		r.recordApply(ctx, res, obs)
		// The Apply activity observes after applying; only an activity that could not (or an older worker
		// that does not) leaves it to a separate Observe. The choice follows the recorded result, so
		// histories of either kind replay.
		if res.Observation != nil {
			obs = *res.Observation
		} else if obs, err = r.observe(ctx); err != nil {
			return r.unreachable(ctx, err)
		}
		r.carry.PromptStep = 0
	} else if sweep != nil {
		removed, err := r.uninstallStale(ctx, *sweep)
		if err != nil {
			return r.unreachable(ctx, err)
		}
		r.recordSweep(ctx, sweep, sweepKey, removed, "")
	}
	r.carry.FailStreak = 0
	st.Reachable, st.Offline, st.LastSeen, st.Message = true, false, now, ""
	st.Commit = r.in.Target.Commit
	st.Bundles = st.Bundles[:0]
	judge = r.judge(obs, now, workflow.Now(ctx))
	for _, o := range obs.Bundles {
		if !o.Deploy && o.Error == "" {
			continue
		}
		st.Bundles = append(st.Bundles, judge.status(o))
	}
	summarizeCluster(st)
	if appliedAll(obs) {
		st.SyncGeneration = r.in.Target.Options.ForceSyncGeneration
	}
	r.report(ctx, false)
	// The delay runs from now, not from when this reconcile began: an apply can take minutes, and a retry
	// due two seconds after it failed must not be measured from before it started.
	return r.nextDelay(ctx, workflow.Now(ctx), judge.waitsOnState())
}

// judge judges the bundles of an observation together (dependsOn), with this run's failures and pause;
// the sync windows are judged at windowsAt, the moment of the decision (after the observation), so what is
// applied starts inside an open window.
func (r *clusterRun) judge(obs api.Observation, now, windowsAt time.Time) *clusterJudge {
	// Closed sync windows hold every action, or every one but drift correction when a window allows it.
	var closed, driftOnly bool
	if len(r.in.SyncWindows) > 0 {
		w := fleet.WindowsAt(r.in.SyncWindows, windowsAt)
		closed, driftOnly = !w.Open && !w.CorrectDrift, !w.Open && w.CorrectDrift
	}
	input := func(o api.BundleObservation) decideInput {
		f, failed := r.carry.Failures[o.Bundle]
		return decideInput{Obs: o, CorrectDrift: effectiveCorrectDrift(o, r.in.Target.Options), Paused: r.in.Paused || o.Paused || closed,
			RetryDue: !failed || !now.Before(f.NextRetry), DriftOnly: driftOnly}
	}
	failure := func(o api.BundleObservation) string {
		if f, ok := r.carry.Failures[o.Bundle]; ok && f.DesiredID == o.DesiredID {
			return f.Message
		}
		return ""
	}
	return newClusterJudge(r.in.Target.Bundles, obs, input, failure)
}

// nextDelay checks promptly while something is converging, at the next retry when an apply failed,
// within DependencyRecheck while a bundle waits for a dependency to become ready, and at the (jittered)
// check interval when all is quiet; it is measured from now, the moment the caller starts waiting.
func (r *clusterRun) nextDelay(ctx workflow.Context, now time.Time, waitingOnDependency bool) time.Duration {
	delay := r.jittered(ctx, r.checkInterval())
	converging := false
	for _, b := range r.carry.Status.Bundles {
		if b.State == api.StateNotReady || b.State == api.StateWaitApplied {
			converging = true
		}
	}
	if converging {
		d := PromptCheckFirst << r.carry.PromptStep
		if d < delay {
			delay = d
			r.carry.PromptStep++
		}
	}
	if waitingOnDependency && DependencyRecheck < delay {
		// The prompt checks back off to the check interval; a dependency that becomes ready then should
		// not leave its dependents a whole interval behind it.
		delay = DependencyRecheck
	}
	for _, b := range workflow.DeterministicKeys(r.carry.Failures) {
		if d := r.carry.Failures[b].NextRetry.Sub(now); d < delay {
			delay = d
		}
	}
	if delay < minCheckDelay {
		delay = minCheckDelay
	}
	return delay
}

// jittered spreads idle checks of many clusters over ±10% of the interval, the same for every check of a
// workflow, so a thousand clusters started together do not check together.
func (r *clusterRun) jittered(ctx workflow.Context, d time.Duration) time.Duration {
	frac := float64(spread(workflow.GetInfo(ctx).WorkflowExecution.ID))/65535.0*0.2 - 0.1
	return d + time.Duration(float64(d)*frac)
}

func (r *clusterRun) recordApply(ctx workflow.Context, res api.ApplyResult, obs api.Observation) {
	ids := map[string]string{}
	for _, o := range obs.Bundles {
		ids[o.Bundle] = o.DesiredID
	}
	now := workflow.Now(ctx)
	for _, b := range res.Bundles {
		if b.Error == "" || b.ErrorType == api.ErrTypeStale {
			delete(r.carry.Failures, b.Bundle)
			continue
		}
		f := r.carry.Failures[b.Bundle]
		f.DesiredID, f.Message = ids[b.Bundle], b.Error
		f.Attempts++
		f.NextRetry = now.Add(backoff(f.Attempts))
		r.carry.Failures[b.Bundle] = f
		workflow.GetLogger(ctx).Warn("bundle apply failed", "bundle", b.Bundle, "attempts", f.Attempts, "errorType", b.ErrorType)
	}
}

func (r *clusterRun) recordDeployment(d *api.Deployment) {
	if d != nil {
		r.carry.History = remember(r.carry.History, *d)
	}
}

func backoff(attempt int) time.Duration {
	d := RetryFirst
	for i := 1; i < attempt && d < RetryMax; i++ {
		d *= 2
	}
	if d > RetryMax {
		d = RetryMax
	}
	return d
}

// unreachable records that the cluster could not be observed or applied to, keeps the bundles' last known
// state but never shows it as Ready, and backs off.
func (r *clusterRun) unreachable(ctx workflow.Context, err error) time.Duration {
	st := &r.carry.Status
	st.Reachable = false
	offline := r.in.Target.Agent && agentAway(err)
	if offline {
		st.Message = r.offlineMessage(ctx, r.agentPresence())
	} else {
		since := ""
		if !st.LastSeen.IsZero() {
			since = fmt.Sprintf(" (last successful check %s ago)", workflow.Now(ctx).Sub(st.LastSeen).Round(time.Second))
		}
		st.Message = fmt.Sprintf("cluster %q: %s%s", r.in.Target.Cluster, errorMessage(err), since)
	}
	st.Offline = offline
	for i := range st.Bundles {
		if st.Bundles[i].State == api.StateReady {
			st.Bundles[i].State = api.StateNotReady
			st.Bundles[i].Message = "cluster unreachable"
			if offline {
				st.Bundles[i].Message = "agent offline"
			}
		}
	}
	summarizeCluster(st)
	r.carry.FailStreak++
	r.report(ctx, false)
	if offline {
		// An agent is away for its own reasons (a cluster powered off, a link down): looking again at each
		// check interval costs one task per interval, and its return is seen within one.
		return r.jittered(ctx, r.checkInterval())
	}
	return backoff(r.carry.FailStreak)
}

// appliedAll reports whether every bundle deployed here runs its desired state: only then has the cluster
// applied the desired state's sync generation.
func appliedAll(obs api.Observation) bool {
	for _, o := range obs.Bundles {
		if o.Error != "" || o.Deploy && (!o.Release.Exists || o.Release.DeploymentID != o.DesiredID) {
			return false
		}
	}
	return true
}
