package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// A cluster workflow told to remove uninstalls its GitRepo's releases from its cluster and ends. An
// uninstall that fails (the cluster cannot be reached) is retried until it succeeds, never given up
// silently: between attempts the GitRepo hears why, so status and `flotilla cluster remove` can say which
// cluster keeps what. A cluster leaving the inventory with its workloads kept is only forgotten: the
// workflow ends without touching it, also when that request comes while an uninstall keeps failing.

// remove uninstalls and ends; see above.
func (r *clusterRun) remove(ctx workflow.Context, rr api.RemoveRequest, removeCh, checkCh workflow.ReceiveChannel) error {
	if r.in.Shape < clusterShapeRemoveReports && workflow.GetVersion(ctx, clusterRemoveReports, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return r.removeOnce(ctx, rr)
	}
	for attempt := 1; ; attempt++ {
		if rr.Forget {
			return r.removed(ctx, "forgotten: the cluster left the inventory with its workloads kept; its releases and objects stay", nil)
		}
		res, next, err := r.uninstallAll(ctx, rr, removeCh)
		if next != nil {
			rr = mergeRemove(rr, *next)
			continue
		}
		if err == nil {
			return r.removed(ctx, "removed", &res)
		}
		r.reportRemoval(ctx, err)
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > clusterMaxHistory {
			// An uninstall can fail for days; each attempt adds to the history, so it goes on in a new run.
			in := r.in
			var werr error
			if in.Carry, werr = writeCarry(r.carry); werr != nil {
				return werr
			}
			in.Remove, in.Shape = &rr, ClusterShapeCurrent
			return workflow.NewContinueAsNewError(ctx, ClusterWorkflow, in)
		}
		// Back off, unless asked to try again now (a `check`, as `flotilla cluster remove` sends when run
		// again) or to forget the cluster instead.
		sel := workflow.NewSelector(ctx)
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, backoff(attempt)), func(workflow.Future) {})
		sel.AddReceive(checkCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(removeCh, func(c workflow.ReceiveChannel, _ bool) {
			var again api.RemoveRequest
			c.Receive(ctx, &again)
			rr = mergeRemove(rr, again)
		})
		sel.Select(ctx)
		cancelTimer()
	}
}

// mergeRemove combines a remove request with a later one: forgetting wins, as do deleting a namespace
// and keeping resources.
func mergeRemove(a, b api.RemoveRequest) api.RemoveRequest {
	a.Forget = a.Forget || b.Forget
	a.KeepResources = a.KeepResources || b.KeepResources
	if b.DeleteNamespace != "" {
		a.DeleteNamespace = b.DeleteNamespace
	}
	return a
}

func (r *clusterRun) uninstallInput(rr api.RemoveRequest) api.UninstallInput {
	return api.UninstallInput{
		GitRepo: r.in.Target.GitRepo, Cluster: r.in.Target.Cluster, ClusterDigest: r.in.Target.ClusterDigest,
		KeepResources: rr.KeepResources || r.in.Target.Options.KeepResources, DeleteNamespace: rr.DeleteNamespace,
		Namespace: r.in.Target.Namespace,
	}
}

// grantedRemoval is in with the management side's grant, for an agent-mode cluster, whose agent removes
// nothing without one (ADR 26). A grant that cannot be had leaves in without: the agent refuses it, and
// the removal is tried again as any failed one.
func (r *clusterRun) grantedRemoval(ctx workflow.Context, in api.UninstallInput) api.UninstallInput {
	if !r.in.Target.Agent {
		return in
	}
	if r.in.Shape < clusterShapeRemovalGrant && workflow.GetVersion(ctx, clusterRemovalGrant, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return in
	}
	in.Generation = r.in.Generation
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: observeTimeout,
		RetryPolicy:         retries(2),
		Summary:             "grant the removal from " + r.in.Target.Cluster,
	})
	var grant string
	if err := workflow.ExecuteLocalActivity(lctx, api.ActivityGrantRemoval, api.GrantRemovalInput{Uninstall: in}).Get(ctx, &grant); err != nil {
		workflow.GetLogger(ctx).Warn("removal not granted", "cluster", r.in.Target.Cluster, "error", err)
		return in
	}
	in.Grant = grant
	return in
}

// uninstallAll runs one Uninstall (with a few quick retries of its own). A remove request that arrives
// meanwhile is returned as next when it changes what to do (forget the cluster, or delete a namespace
// too); forgetting cancels the uninstall at once.
func (r *clusterRun) uninstallAll(ctx workflow.Context, rr api.RemoveRequest, removeCh workflow.ReceiveChannel) (api.UninstallResult, *api.RemoveRequest, error) {
	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	actx = r.clusterSide(actx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(2),
		Summary:             "uninstall from " + r.in.Target.Cluster,
	})
	f := workflow.ExecuteActivity(actx, api.ActivityUninstall, r.grantedRemoval(ctx, r.uninstallInput(rr)))
	var res api.UninstallResult
	var err error
	var next *api.RemoveRequest
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(f workflow.Future) { err, done = f.Get(ctx, &res), true })
	sel.AddReceive(removeCh, func(c workflow.ReceiveChannel, _ bool) {
		var again api.RemoveRequest
		c.Receive(ctx, &again)
		if merged := mergeRemove(rr, again); merged != rr {
			next = &merged
		}
	})
	for !done {
		sel.Select(ctx)
		if next != nil && next.Forget {
			return res, next, nil
		}
	}
	// Done; a later request that asks for more (a namespace to delete) makes the caller go once more.
	return res, next, err
}

// reportRemoval tells the GitRepo why the uninstall has not succeeded yet, once per distinct reason.
func (r *clusterRun) reportRemoval(ctx workflow.Context, err error) {
	st := &r.carry.Status
	var appErr *temporal.ApplicationError
	st.Reachable = !(errors.As(err, &appErr) && appErr.Type() == api.ErrTypeUnreachable) && !agentAway(err)
	st.State, st.Bundles = api.StateErrApplied, nil
	st.Message = "uninstall failed, retrying until it succeeds: " + errorMessage(err)
	st.LastChecked = workflow.Now(ctx)
	st.ResourceCounts = api.ResourceCounts{}
	fp := "removing:" + fingerprint(*st, false)
	if fp == r.carry.LastReported {
		return
	}
	workflow.GetLogger(ctx).Warn("uninstall failed; retrying", "gitRepo", r.in.Target.GitRepo, "cluster", r.in.Target.Cluster, "error", err)
	_ = workflow.UpsertTypedSearchAttributes(ctx, searchState.ValueSet(st.State), searchHasError.ValueSet(true))
	workflow.SetCurrentDetails(ctx, clusterDetails(*st))
	parent := api.GitRepoWorkflowID(r.in.Target.GitRepo)
	if err := workflow.SignalExternalWorkflow(ctx, parent, "", api.SignalClusterReport,
		api.ClusterReport{Cluster: r.in.Target.Cluster, Status: *st, Removing: true}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("status report not delivered", "gitRepo", r.in.Target.GitRepo, "error", err)
		return
	}
	r.carry.LastReported = fp
}

// removed reports the removal to the GitRepo, which forgets the cluster, and ends the run.
func (r *clusterRun) removed(ctx workflow.Context, message string, res *api.UninstallResult) error {
	if res != nil && len(res.DeletedNamespaces)+len(res.KeptNamespaces) > 0 {
		workflow.GetLogger(ctx).Info("namespaces after the uninstall", "gitRepo", r.in.Target.GitRepo, "cluster", r.in.Target.Cluster,
			"deleted", res.DeletedNamespaces, "kept", res.KeptNamespaces)
		if len(res.KeptNamespaces) > 0 {
			message += fmt.Sprintf("; namespaces kept: %s", strings.Join(res.KeptNamespaces, "; "))
		}
	}
	r.carry.Status.Bundles = nil
	r.carry.Status.State, r.carry.Status.Message = api.StateReady, message
	r.carry.LastReported = ""
	r.report(ctx, true)
	return nil
}

// removeOnce is the removal of runs started before clusterShapeRemoveReports, as their histories hold it:
// one Uninstall retried until done.
func (r *clusterRun) removeOnce(ctx workflow.Context, rr api.RemoveRequest) error {
	actx := r.clusterSide(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retryUntilDone(),
		Summary:             "uninstall from " + r.in.Target.Cluster,
	})
	var res api.UninstallResult
	err := workflow.ExecuteActivity(actx, api.ActivityUninstall, r.grantedRemoval(ctx, r.uninstallInput(rr))).Get(ctx, &res)
	if err != nil {
		return err
	}
	r.carry.Status.Bundles = nil
	r.carry.Status.State, r.carry.Status.Message = api.StateReady, "removed"
	r.carry.LastReported = ""
	r.report(ctx, true)
	return nil
}
