package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

func (g *gitRepoRun) target(pc api.PlannedCluster) api.ClusterTarget {
	return api.TargetOf(g.key, g.spec.Spec, g.carry.Commit, pc, g.carry.Plan.Bundles)
}

// desired is what a planned cluster should run now.
// A pinned cluster (a rollback) gets its pinned commit, planned as that commit was.
// A cluster with sync windows gets them, unless pinned or overridden: those are emergencies.
func (g *gitRepoRun) desired(pc api.PlannedCluster) api.DesiredUpdate {
	if p := g.pinFor(pc.Name); p != nil {
		t := api.TargetOf(g.key, g.spec.Spec, p.Commit, *plannedIn(p.Plan, pc.Name), p.Plan.Bundles)
		return api.DesiredUpdate{Target: t, CheckInterval: g.checkInterval()}
	}
	up := api.DesiredUpdate{Target: g.target(pc), CheckInterval: g.checkInterval()}
	if !g.windowOverridden() {
		up.SyncWindows = g.windowsOf(pc)
	}
	return up
}

// deliver hands changed desired states to cluster workflows, at most window of them in flight at a time.
func (g *gitRepoRun) deliver(ctx workflow.Context) {
	g.r.soakDue, g.windowDue = time.Time{}, time.Time{}
	if g.carry.Plan == nil || g.paused || g.draining {
		return
	}
	g.r.ungated = g.pinned()
	g.r.closed, g.windowDue = g.closedWindows(workflow.Now(ctx))
	window := g.window()
	if g.boundSignals {
		// A hand-over whose signal the server has not confirmed holds its slot even once its cluster has
		// reported, so the signals waiting never exceed the window.
		window -= g.pending
	}
	if window <= 0 {
		return
	}
	for _, h := range g.r.nextDeliveries(g.carry.Plan, workflow.Now(ctx), window, g.desired, g.desiredHash()) {
		g.pending++
		g.send(ctx, h)
	}
}

// send signals the cluster workflow, starting it as a child when it does not run.
func (g *gitRepoRun) send(ctx workflow.Context, h handOver) {
	cluster, up, known := h.Cluster, h.Update, h.Running
	id := g.key.ClusterWorkflowID(cluster)
	if !known {
		g.startsThisRun++
	}
	workflow.Go(ctx, func(gctx workflow.Context) {
		if known {
			if err := workflow.SignalExternalWorkflow(gctx, id, "", api.SignalDesired, up).Get(gctx, nil); err == nil {
				g.events.Send(gctx, deliveryEvent{cluster: cluster})
				return
			}
		}
		cctx := workflow.WithChildOptions(gctx, workflow.ChildWorkflowOptions{
			WorkflowID:            id,
			ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
			WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			StaticSummary:         fmt.Sprintf("GitRepo %s on cluster %s", g.key, cluster),
			TypedSearchAttributes: temporal.NewSearchAttributes(
				searchGitRepo.ValueSet(g.name()), searchCluster.ValueSet(cluster), searchRepo.ValueSet(g.spec.Spec.Repo),
				searchNamespace.ValueSet(g.key.Namespace)),
		})
		child := workflow.ExecuteChildWorkflow(cctx, ClusterWorkflow, api.ClusterWorkflowInput{
			Target: up.Target, Generation: up.Generation, Paused: up.Paused, CheckInterval: up.CheckInterval, SyncWindows: up.SyncWindows,
			Shape: ClusterShapeCurrent,
		})
		err := child.GetChildWorkflowExecution().Get(gctx, nil)
		var already *temporal.ChildWorkflowExecutionAlreadyStartedError
		if errors.As(err, &already) {
			err = workflow.SignalExternalWorkflow(gctx, id, "", api.SignalDesired, up).Get(gctx, nil)
			g.events.Send(gctx, deliveryEvent{cluster: cluster, err: err})
			return
		}
		g.events.Send(gctx, deliveryEvent{cluster: cluster, err: err})
		if err != nil {
			return
		}
		// Learn at once if this child ends unasked (terminated from the Web UI, say).
		_ = child.Get(gctx, nil)
		g.events.Send(gctx, deliveryEvent{cluster: cluster, kind: eventEnded})
	})
}

// deleteEverywhere uninstalls the GitRepo from every cluster, then ends the workflow.
func (g *gitRepoRun) deleteEverywhere(ctx workflow.Context, reportCh workflow.ReceiveChannel) error {
	req := api.RemoveRequest{KeepResources: g.spec.Spec.KeepResources}
	if s := g.spec.Spec; s.DeleteNamespace && !s.KeepResources {
		// Fleet's deleteNamespace: the targetNamespace goes once everything in it is uninstalled.
		req.DeleteNamespace = s.TargetNamespace
	}
	if !g.boundSignals {
		for _, c := range g.r.removeAll() {
			g.signalRemove(ctx, req, c)
		}
	}
	g.publish(ctx, false)
	deadline := workflow.Now(ctx).Add(deleteTimeout)
	left, anyLeft := g.r.removing, func() bool { return len(g.r.removing()) > 0 }
	if g.boundSignals {
		left, anyLeft = g.r.leftToRemove, g.r.anyLeftToRemove
	}
	var recheck workflow.Future
	for anyLeft() && workflow.Now(ctx).Before(deadline) {
		if g.boundSignals {
			// A few hundred at a time, and a new run when the history grows long: removing a GitRepo from
			// 10,000 clusters is 30,000 events of signals and reports, past what one run should hold. The
			// clusters not told yet are those still running and not removing, which the next run tells.
			g.clusterPasses += len(g.r.Clusters)
			if g.runLongEnough(ctx) {
				if g.pending == 0 && workflow.AllHandlersFinished(ctx) {
					return g.continueAsNew(ctx)
				}
			} else {
				if n := maxRemovalsInFlight - g.removalsInFlight; n > 0 {
					for _, c := range g.r.removeNext(n) {
						g.signalRemove(ctx, req, c)
					}
				}
			}
		}
		if recheck == nil || !g.boundSignals {
			recheck = workflow.NewTimer(ctx, deleteRecheck)
		}
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(reportCh, func(c workflow.ReceiveChannel, _ bool) {
			var rep api.ClusterReport
			c.Receive(ctx, &rep)
			if rep.Removed || rep.Removing {
				g.r.onReport(rep)
			}
		})
		sel.AddReceive(g.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(g.events, func(c workflow.ReceiveChannel, _ bool) {
			var ev deliveryEvent
			c.Receive(ctx, &ev)
			g.handleEvent(ctx, ev)
		})
		sel.AddFuture(recheck, func(workflow.Future) { recheck = nil })
		sel.Select(ctx)
		for g.boundSignals && sel.HasPending() {
			sel.Select(ctx)
		}
	}
	if left := left(); len(left) > 0 {
		return temporal.NewApplicationError("gitrepo "+g.key.String()+": not removed from clusters "+strings.Join(left, ", "), api.ErrTypeRemoveIncomplete)
	}
	return nil
}
