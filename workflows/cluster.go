package workflows

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// ClusterWorkflowInput starts the workflow that keeps one GitRepo's bundles applied and checked on one cluster.
type ClusterWorkflowInput struct {
	Target        api.ClusterTarget `json:"target"`
	Generation    int64             `json:"generation"`
	Paused        bool              `json:"paused,omitempty"`
	CheckInterval time.Duration     `json:"checkInterval,omitempty"`
	// Carry is the state handed over by continue-as-new; a fresh start leaves it empty.
	Carry *ClusterCarry `json:"carry,omitempty"`
	// Shape is the workflow code a run was started for (ClusterShapeCurrent by the current GitRepo and by
	// continue-as-new). Zero is a run started before the field existed, which asks GetVersion instead.
	Shape int `json:"shape,omitempty"`
}

// DesiredUpdate is the parent's `desired` signal: what this cluster should run now.
type DesiredUpdate struct {
	Target        api.ClusterTarget `json:"target"`
	Generation    int64             `json:"generation"`
	Paused        bool              `json:"paused,omitempty"`
	CheckInterval time.Duration     `json:"checkInterval,omitempty"`
}

// RemoveRequest is the parent's `remove` signal.
type RemoveRequest struct {
	KeepResources bool `json:"keepResources,omitempty"`
}

// ClusterReport is a child's status report to its GitRepo, sent only when the status changed.
type ClusterReport struct {
	Cluster string            `json:"cluster"`
	Status  api.ClusterStatus `json:"status"`
	Removed bool              `json:"removed,omitempty"`
}

// ClusterCarry is what a cluster workflow keeps across continue-as-new.
type ClusterCarry struct {
	Status       api.ClusterStatus       `json:"status"`
	Failures     map[string]applyFailure `json:"failures,omitempty"`
	LastReported string                  `json:"lastReported,omitempty"`
	PromptStep   int                     `json:"promptStep,omitempty"`
	FailStreak   int                     `json:"failStreak,omitempty"`
	// SweptKey identifies the set of releases the last successful sweep kept (see sweepFor).
	SweptKey string `json:"sweptKey,omitempty"`
}

// applyFailure remembers a failed apply of one desired state, so it is retried with backoff, not in a loop.
type applyFailure struct {
	DesiredID string    `json:"desiredID"`
	Message   string    `json:"message"`
	Attempts  int       `json:"attempts"`
	NextRetry time.Time `json:"nextRetry"`
}

const clusterMaxHistory = 2000

type clusterRun struct {
	in    ClusterWorkflowInput
	carry ClusterCarry
	// sweeping caches whether this run sweeps (see sweeps); 0 unknown, 1 yes, -1 no.
	sweeping int
}

// ClusterWorkflow applies a GitRepo's bundles to one cluster and keeps checking them. It is a long-lived
// entity (ID gitrepo/<name>/cluster/<cluster>): its failures stay on its own branch, and the GitRepo learns
// of them through status reports.
func ClusterWorkflow(ctx workflow.Context, in ClusterWorkflowInput) error {
	r := &clusterRun{in: in}
	if in.Carry != nil {
		r.carry = *in.Carry
	}
	if r.carry.Failures == nil {
		r.carry.Failures = map[string]applyFailure{}
	}
	r.carry.Status.Name = in.Target.Cluster
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.ClusterStatus, error) {
		return r.carry.Status, nil
	}); err != nil {
		return err
	}
	// The GitRepo starts its children with these attributes and continue-as-new keeps them; upserting them
	// again cost a visibility write per cluster. Histories from before the change upserted unconditionally.
	sa := workflow.GetTypedSearchAttributes(ctx)
	repo, _ := sa.GetKeyword(searchGitRepo)
	cluster, _ := sa.GetKeyword(searchCluster)
	if !r.loop2(ctx) || repo != in.Target.GitRepo || cluster != in.Target.Cluster {
		_ = workflow.UpsertTypedSearchAttributes(ctx,
			searchGitRepo.ValueSet(in.Target.GitRepo), searchCluster.ValueSet(in.Target.Cluster))
	}
	return r.loop(ctx)
}

func (r *clusterRun) checkInterval() time.Duration {
	if r.in.CheckInterval > 0 {
		return r.in.CheckInterval
	}
	return DefaultCheckInterval
}

func (r *clusterRun) loop(ctx workflow.Context) error {
	desiredCh := workflow.GetSignalChannel(ctx, api.SignalDesired)
	removeCh := workflow.GetSignalChannel(ctx, api.SignalRemove)
	checkCh := workflow.GetSignalChannel(ctx, api.SignalCheck)
	dirty := true
	var remove *RemoveRequest
	var nextCheck time.Time
	for {
		if dirty || !workflow.Now(ctx).Before(nextCheck) {
			delay := r.reconcile(ctx)
			nextCheck = workflow.Now(ctx).Add(delay)
			dirty = false
		}
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		timer := workflow.NewTimer(timerCtx, nextCheck.Sub(workflow.Now(ctx)))
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(desiredCh, func(c workflow.ReceiveChannel, _ bool) {
			var d DesiredUpdate
			c.Receive(ctx, &d)
			r.setDesired(d)
			dirty = true
		})
		sel.AddReceive(removeCh, func(c workflow.ReceiveChannel, _ bool) {
			var rr RemoveRequest
			c.Receive(ctx, &rr)
			remove = &rr
		})
		sel.AddReceive(checkCh, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			dirty = true
		})
		sel.AddFuture(timer, func(workflow.Future) {})
		sel.Select(ctx)
		cancelTimer()
		// Coalesce a burst of signals into one reconcile.
		dirty = r.drain(ctx, desiredCh, removeCh, checkCh, &remove) || dirty
		if remove != nil {
			return r.remove(ctx, *remove)
		}
		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > clusterMaxHistory {
			in := r.in
			carry := r.carry
			in.Carry = &carry
			in.Shape = ClusterShapeCurrent // the new run is executed by this code, not replayed
			return workflow.NewContinueAsNewError(ctx, ClusterWorkflow, in)
		}
	}
}

func (r *clusterRun) drain(ctx workflow.Context, desiredCh, removeCh, checkCh workflow.ReceiveChannel, remove **RemoveRequest) bool {
	dirty := false
	for {
		var d DesiredUpdate
		if !desiredCh.ReceiveAsync(&d) {
			break
		}
		r.setDesired(d)
		dirty = true
	}
	for checkCh.ReceiveAsync(nil) {
		dirty = true
	}
	var rr RemoveRequest
	if removeCh.ReceiveAsync(&rr) {
		*remove = &rr
	}
	return dirty
}

func (r *clusterRun) setDesired(d DesiredUpdate) {
	if d.Generation < r.in.Generation {
		return // a late signal from an older rollout
	}
	r.in.Target, r.in.Generation, r.in.Paused = d.Target, d.Generation, d.Paused
	if d.CheckInterval > 0 {
		r.in.CheckInterval = d.CheckInterval
	}
	r.carry.PromptStep = 0
}

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
	var actions []api.BundleAction
	for _, o := range obs.Bundles {
		f, failed := r.carry.Failures[o.Bundle]
		if failed && f.DesiredID != o.DesiredID {
			delete(r.carry.Failures, o.Bundle) // a new desired state deserves a fresh attempt
			failed = false
		}
		due := !failed || !now.Before(f.NextRetry)
		action, force := decide(decideInput{Obs: o, CorrectDrift: r.in.Target.Options.CorrectDrift, Paused: r.in.Paused, RetryDue: due})
		if action != "" {
			actions = append(actions, api.BundleAction{Bundle: o.Bundle, Action: action, ExpectedID: o.DesiredID, Force: force})
		}
	}
	sweep, sweepKey := r.sweepFor(ctx, obs)
	if len(actions) > 0 {
		res, err := r.apply(ctx, actions, sweep)
		if err != nil {
			return r.unreachable(ctx, err)
		}
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
	st.Reachable, st.LastSeen, st.Message = true, now, ""
	st.Commit = r.in.Target.Commit
	st.Bundles = st.Bundles[:0]
	for _, o := range obs.Bundles {
		if !o.Deploy && o.Error == "" {
			continue
		}
		failure := ""
		if f, ok := r.carry.Failures[o.Bundle]; ok && f.DesiredID == o.DesiredID {
			failure = f.Message
		}
		st.Bundles = append(st.Bundles, bundleStatus(o, failure))
	}
	summarizeCluster(st)
	r.report(ctx, false)
	// The delay runs from now, not from when this reconcile began: an apply can take minutes, and a retry
	// due two seconds after it failed must not be measured from before it started.
	return r.nextDelay(ctx, workflow.Now(ctx))
}

// nextDelay checks promptly while something is converging, at the next retry when an apply failed,
// and at the (jittered) check interval when all is quiet; it is measured from now, the moment the
// caller starts waiting.
func (r *clusterRun) nextDelay(ctx workflow.Context, now time.Time) time.Duration {
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
	for _, b := range workflow.DeterministicKeys(r.carry.Failures) {
		if d := r.carry.Failures[b].NextRetry.Sub(now); d < delay {
			delay = d
		}
	}
	if delay < 100*time.Millisecond {
		delay = 100 * time.Millisecond
	}
	return delay
}

// jittered spreads idle checks of many clusters over ±10% of the interval, deterministically per workflow.
func (r *clusterRun) jittered(ctx workflow.Context, d time.Duration) time.Duration {
	sum := sha256.Sum256([]byte(workflow.GetInfo(ctx).WorkflowExecution.ID))
	frac := float64(binary.BigEndian.Uint16(sum[:2]))/65535.0*0.2 - 0.1
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
	msg := errorMessage(err)
	since := ""
	if !st.LastSeen.IsZero() {
		since = fmt.Sprintf(" (last successful check %s ago)", workflow.Now(ctx).Sub(st.LastSeen).Round(time.Second))
	}
	st.Message = fmt.Sprintf("cluster %q: %s%s", r.in.Target.Cluster, msg, since)
	for i := range st.Bundles {
		if st.Bundles[i].State == api.StateReady {
			st.Bundles[i].State = api.StateNotReady
			st.Bundles[i].Message = "cluster unreachable"
		}
	}
	summarizeCluster(st)
	r.carry.FailStreak++
	r.report(ctx, false)
	return backoff(r.carry.FailStreak)
}

// errorMessage unwraps Temporal's activity error layers to the message that names the cause.
func errorMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return "timed out: " + timeoutErr.Error()
	}
	return err.Error()
}

// clusterLoop2 is the version from which Observe runs as a local activity and a child started with its
// search attributes does not upsert them again.
const clusterLoop2 = "cluster-loop-2"

// clusterShapeSweep is the first Shape that sweeps releases its target no longer has (see sweepFor).
const clusterShapeSweep = 3

// clusterSweep is the version from which a run started with an older Shape sweeps too.
const clusterSweep = "cluster-sweep"

// ClusterShapeCurrent is the Shape a run is started with. A run that knows its shape from its input
// needs no GetVersion: the SDK's GetVersion records a marker and upserts the TemporalChangeVersion search
// attribute, a visibility write for every cluster workflow run, which at a thousand clusters was a
// measurable share of Temporal's work in a rollout (docs/performance.md). Histories of runs started
// before Shape existed replay through GetVersion as they were recorded.
const ClusterShapeCurrent = clusterShapeSweep

// clusterShapeLoop2 is the first Shape with the clusterLoop2 behaviour; later shapes keep it.
const clusterShapeLoop2 = 2

// loop2 reports whether this run has the loop-2 shape (see clusterLoop2).
func (r *clusterRun) loop2(ctx workflow.Context) bool {
	if r.in.Shape >= clusterShapeLoop2 {
		return true
	}
	return workflow.GetVersion(ctx, clusterLoop2, workflow.DefaultVersion, 1) == 1
}

// observe runs the Observe activity. It is a local activity: a read of a few objects that takes well under
// a second, where a scheduled activity costs a task round trip through the server and one more workflow
// task, per cluster and per check. At a thousand clusters that was a third of Temporal's work for a
// rollout and half of an idle check's (docs/performance.md). Histories recorded before the change replay
// with the scheduled activity they hold.
func (r *clusterRun) observe(ctx workflow.Context) (api.Observation, error) {
	in := api.ObserveInput{Target: r.in.Target, Resources: true}
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2}
	var obs api.Observation
	if r.loop2(ctx) {
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			ScheduleToCloseTimeout: 2 * observeTimeout,
			StartToCloseTimeout:    observeTimeout,
			RetryPolicy:            retry,
			Summary:                "observe " + r.in.Target.Cluster,
		})
		err := workflow.ExecuteLocalActivity(lctx, api.ActivityObserve, in).Get(ctx, &obs)
		return obs, err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: observeTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retry,
		Summary:             "observe " + r.in.Target.Cluster,
	})
	err := workflow.ExecuteActivity(ctx, api.ActivityObserve, in).Get(ctx, &obs)
	return obs, err
}

func (r *clusterRun) apply(ctx workflow.Context, actions []api.BundleAction, sweep *api.Sweep) (api.ApplyResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             fmt.Sprintf("apply %d bundle(s) to %s", len(actions), r.in.Target.Cluster),
	})
	var res api.ApplyResult
	err := workflow.ExecuteActivity(ctx, api.ActivityApply, api.ApplyInput{Target: r.in.Target, Actions: actions, Observe: true, Sweep: sweep}).Get(ctx, &res)
	return res, err
}

// report signals the GitRepo workflow when the status changed, and mirrors it in search attributes and
// the Web UI's current details.
func (r *clusterRun) report(ctx workflow.Context, removed bool) {
	st := r.carry.Status
	fp := fingerprint(st, removed)
	if fp == r.carry.LastReported {
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		searchState.ValueSet(st.State), searchCommit.ValueSet(st.Commit),
		searchHasError.ValueSet(st.State == api.StateErrApplied))
	workflow.SetCurrentDetails(ctx, clusterDetails(st))
	parent := api.GitRepoWorkflowID(r.in.Target.GitRepo)
	err := workflow.SignalExternalWorkflow(ctx, parent, "", api.SignalClusterReport,
		ClusterReport{Cluster: r.in.Target.Cluster, Status: st, Removed: removed}).Get(ctx, nil)
	if err != nil {
		// The GitRepo may be continuing as new or gone; the next change reports again.
		workflow.GetLogger(ctx).Warn("status report not delivered", "gitRepo", r.in.Target.GitRepo, "error", err)
		return
	}
	r.carry.LastReported = fp
}

// fingerprint ignores timestamps so an unchanged status is never re-sent.
func fingerprint(st api.ClusterStatus, removed bool) string {
	st.LastChecked, st.LastSeen = time.Time{}, time.Time{}
	return hashOf(struct {
		S api.ClusterStatus
		R bool
	}{st, removed})
}

// hashOf identifies plain data. encoding/json is deterministic here: struct fields keep their order and
// map keys are sorted; workflowcheck cannot see that through reflection.
//
//workflowcheck:ignore
func hashOf(v any) string {
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:12])
}

func clusterDetails(st api.ClusterStatus) string {
	d := fmt.Sprintf("**%s** on cluster `%s` at commit `%s`", st.State, st.Name, short(st.Commit))
	if st.Message != "" {
		d += "\n\n" + st.Message
	}
	return d
}

func (r *clusterRun) remove(ctx workflow.Context, rr RemoveRequest) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
		Summary:             "uninstall from " + r.in.Target.Cluster,
	})
	var res api.UninstallResult
	err := workflow.ExecuteActivity(actx, api.ActivityUninstall, api.UninstallInput{
		GitRepo: r.in.Target.GitRepo, Cluster: r.in.Target.Cluster, ClusterDigest: r.in.Target.ClusterDigest,
		KeepResources: rr.KeepResources || r.in.Target.Options.KeepResources,
	}).Get(ctx, &res)
	if err != nil {
		return err
	}
	r.carry.Status.Bundles = nil
	r.carry.Status.State, r.carry.Status.Message = api.StateReady, "removed"
	r.carry.LastReported = ""
	r.report(ctx, true)
	return nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
