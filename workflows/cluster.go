package workflows

import (
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ClusterCarry is what a cluster workflow keeps across continue-as-new.
type ClusterCarry struct {
	Status       api.ClusterStatus       `json:"status"`
	Failures     map[string]applyFailure `json:"failures,omitempty"`
	LastReported string                  `json:"lastReported,omitempty"`
	PromptStep   int                     `json:"promptStep,omitempty"`
	FailStreak   int                     `json:"failStreak,omitempty"`
	// SweptKey identifies the set of releases the last successful sweep kept (see sweepFor).
	SweptKey string `json:"sweptKey,omitempty"`
	// History is the cluster's last deployments, oldest first (QueryHistory).
	History []api.Deployment `json:"history,omitempty"`
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
	in    api.ClusterWorkflowInput
	carry ClusterCarry
	// sweeping caches whether this run sweeps (see sweeps); 0 unknown, 1 yes, -1 no.
	sweeping int
	// prepared is the management side's rendering of the desired state for an agent-mode cluster (see
	// prepare); a new desired state clears it.
	prepared []api.PreparedBundle
	// grant is the management side's grant of prepared, which the agent checks (ADR 26).
	grant string
}

// ClusterWorkflow applies a GitRepo's bundles to one cluster and keeps checking them. It is a long-lived
// entity (ID gitrepo/<name>/cluster/<cluster>, gitrepo/<namespace>/<name>/cluster/<cluster> outside
// fleet-default; its target names the GitRepo it reports to, namespace included): its failures stay on its own branch, and the GitRepo learns
// of them through status reports.
func ClusterWorkflow(ctx workflow.Context, in api.ClusterWorkflowInput) error {
	r := &clusterRun{in: in}
	if err := readCarry(in.Carry, &r.carry); err != nil {
		return temporal.NewNonRetryableApplicationError("cluster "+in.Target.Cluster+": carried state: "+err.Error(), api.ErrTypeInvalidCarry, nil)
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
	if err := workflow.SetQueryHandler(ctx, api.QueryHistory, func() ([]api.Deployment, error) {
		return append([]api.Deployment{}, r.carry.History...), nil
	}); err != nil {
		return err
	}
	// The desired state this workflow holds, which a worker serving its agent packages reads (ReadContent).
	if err := workflow.SetQueryHandler(ctx, api.QueryTarget, func() (api.ClusterTarget, error) {
		return r.in.Target, nil
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
			searchGitRepo.ValueSet(in.Target.GitRepo), searchCluster.ValueSet(in.Target.Cluster),
			searchNamespace.ValueSet(in.Target.Key().Namespace))
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
	if r.in.Remove != nil {
		return r.remove(ctx, *r.in.Remove, removeCh, checkCh)
	}
	dirty := true
	var remove *api.RemoveRequest
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
			var d api.DesiredUpdate
			c.Receive(ctx, &d)
			r.setDesired(d)
			dirty = true
		})
		sel.AddReceive(removeCh, func(c workflow.ReceiveChannel, _ bool) {
			var rr api.RemoveRequest
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
			return r.remove(ctx, *remove, removeCh, checkCh)
		}
		info := workflow.GetInfo(ctx)
		if info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > clusterMaxHistory {
			in := r.in
			var err error
			if in.Carry, err = writeCarry(r.carry); err != nil {
				return err
			}
			in.Shape = ClusterShapeCurrent // the new run is executed by this code, not replayed
			return workflow.NewContinueAsNewError(ctx, ClusterWorkflow, in)
		}
	}
}

func (r *clusterRun) drain(ctx workflow.Context, desiredCh, removeCh, checkCh workflow.ReceiveChannel, remove **api.RemoveRequest) bool {
	dirty := false
	for {
		var d api.DesiredUpdate
		if !desiredCh.ReceiveAsync(&d) {
			break
		}
		r.setDesired(d)
		dirty = true
	}
	for checkCh.ReceiveAsync(nil) {
		dirty = true
	}
	var rr api.RemoveRequest
	if removeCh.ReceiveAsync(&rr) {
		*remove = &rr
	}
	return dirty
}

func (r *clusterRun) setDesired(d api.DesiredUpdate) {
	if d.Generation < r.in.Generation {
		return // a late signal from an older rollout
	}
	r.in.Target, r.in.Generation, r.in.Paused, r.in.SyncWindows = d.Target, d.Generation, d.Paused, d.SyncWindows
	if d.CheckInterval > 0 {
		r.in.CheckInterval = d.CheckInterval
	}
	r.carry.PromptStep = 0
	r.prepared, r.grant = nil, ""
}

// loop2 reports whether this run has the loop-2 shape (see clusterLoop2).
func (r *clusterRun) loop2(ctx workflow.Context) bool {
	if r.in.Shape >= clusterShapeLoop2 {
		return true
	}
	return workflow.GetVersion(ctx, clusterLoop2, workflow.DefaultVersion, 1) == 1
}
