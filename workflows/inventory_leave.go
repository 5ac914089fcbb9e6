package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"github.com/flotilla-gitops/flotilla/inventory"
)

// leaveDecider is the inventory's second step of a cluster's removal (ADR 16, ADR 29): while clusters are
// leaving, it asks what still holds them (ActivityLeavingHolders) and forgets each once nothing does. The
// CLI only asks for the removal (UpdateLeaveCluster) and waits (UpdateAwaitClusterRemoved).
type leaveDecider struct {
	inv *inventory.Inventory
	// running: the loop runs, in its own coroutine, until no cluster is leaving.
	running bool
	// holders is what held each leaving cluster when last asked, by entry.
	holders map[string]api.LeavingHolders
	// nudge are leaving clusters whose workflows are told to check at the next ask.
	nudge []inventory.RemoveInput
	// awaited counts the awaitClusterRemoved updates in progress: someone waits, so ask more often.
	awaited int
	// cancel ends the ask in flight, so the loop asks again at once (nil: none in flight); again tells a
	// loop waiting to retry a failed ask not to wait.
	cancel workflow.CancelFunc
	again  bool
}

func newLeaveDecider(inv *inventory.Inventory) *leaveDecider {
	return &leaveDecider{inv: inv, holders: map[string]api.LeavingHolders{}}
}

func leaveEntry(ns, name string) string { return fleet.Workspace(ns) + "/" + name }

// start runs the loop unless it runs already.
func (d *leaveDecider) start(ctx workflow.Context) {
	if d.running {
		return
	}
	d.running = true
	workflow.Go(ctx, d.loop)
}

// askNow ends the ask in flight: the loop asks again at once, with what is nudged and how often to look.
func (d *leaveDecider) askNow() {
	d.again = true
	if d.cancel != nil {
		d.cancel()
	}
}

func (d *leaveDecider) loop(ctx workflow.Context) {
	defer func() { d.running = false }()
	for len(d.inv.Leaving) > 0 {
		within := leaveAskIdle
		if d.awaited > 0 {
			within = leaveAskAwaited
		}
		in := api.LeavingHoldersInput{Clusters: append([]inventory.Leaving(nil), d.inv.Leaving...), Nudge: d.nudge, Within: within}
		d.nudge, d.again = nil, false
		actx, cancel := workflow.WithCancel(ctx)
		d.cancel = cancel
		actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
			StartToCloseTimeout: within + time.Minute,
			HeartbeatTimeout:    heartbeat,
			RetryPolicy:         retries(3),
			Summary:             "what still holds the leaving clusters",
		})
		var res api.LeavingHoldersResult
		asked := workflow.Now(ctx)
		err := workflow.ExecuteActivity(actx, api.ActivityLeavingHolders, in).Get(ctx, &res)
		d.cancel = nil
		cancel()
		if temporal.IsCanceledError(err) && ctx.Err() == nil {
			continue // asked to ask again
		}
		if err != nil {
			workflow.GetLogger(ctx).Warn("could not list what holds the leaving clusters", "error", err)
			for _, l := range in.Clusters {
				lh := d.holders[leaveEntry(l.Namespace, l.Name)]
				lh.Error = err.Error()
				d.holders[leaveEntry(l.Namespace, l.Name)] = lh
			}
			if _, err := workflow.AwaitWithTimeout(ctx, leaveAskRetry, func() bool { return d.again }); err != nil {
				return
			}
			continue
		}
		forgot := false
		for _, lh := range res.Clusters {
			l, leaving := d.inv.LeavingCluster(lh.Namespace, lh.Name)
			if !leaving {
				continue // forgotten meanwhile
			}
			d.holders[leaveEntry(l.Namespace, l.Name)] = lh
			if lh.Error == "" && len(lh.Holders) == 0 {
				d.forget(ctx, l)
				forgot = true
			}
		}
		// An ask answers early only when a cluster is free: one that did not keeps the asks spaced, so a
		// worker of another version cannot fill the history with them.
		if rest := within - workflow.Now(ctx).Sub(asked); !forgot && rest > 0 {
			if _, err := workflow.AwaitWithTimeout(ctx, rest, func() bool { return d.again }); err != nil {
				return
			}
		}
	}
}

// forget removes a leaving cluster from the inventory. An agent-mode cluster's AgentWorkflow is told to
// check, so it ends now rather than at its next resync; the agent and its release stay in the cluster, as
// every object of a forgotten cluster does.
func (d *leaveDecider) forget(ctx workflow.Context, l inventory.Leaving) {
	c, _ := d.inv.Cluster(l.Namespace, l.Name)
	d.inv.RemoveCluster(l.Namespace, l.Name)
	delete(d.holders, leaveEntry(l.Namespace, l.Name))
	workflow.GetLogger(ctx).Info("forgot a cluster that left", "cluster", fleet.DisplayName(l.Namespace, l.Name),
		"keepWorkloads", l.KeepWorkloads)
	if c.Spec.Agent != nil {
		// Best effort, not waited for: an AgentWorkflow that is not running has nothing to end.
		workflow.SignalExternalWorkflow(ctx, api.AgentWorkflowID(workflow.GetInfo(ctx).TaskQueueName, fleet.Workspace(l.Namespace), l.Name),
			"", api.SignalCheck, nil)
	}
}

// leftAgain is the leaveCluster update's aftermath: asked to leave again, a leaving cluster's workflows
// check now, so an uninstall that failed retries at once rather than at the end of its backoff.
func (d *leaveDecider) leftAgain(l inventory.LeaveInput) {
	if !d.running {
		return
	}
	if _, leaving := d.inv.LeavingCluster(l.Namespace, l.Name); leaving {
		d.nudge = append(d.nudge, inventory.RemoveInput{Name: l.Name, Namespace: l.Namespace})
		d.askNow()
	}
}

// validateAwait refuses to wait for a registered cluster that is not leaving: it would never be forgotten.
func (d *leaveDecider) validateAwait(in api.AwaitClusterRemovedInput) error {
	if in.Timeout <= 0 {
		return fmt.Errorf("timeout must be positive, not %s", in.Timeout)
	}
	if _, leaving := d.inv.LeavingCluster(in.Namespace, in.Name); leaving {
		return nil
	}
	if _, ok := d.inv.Cluster(in.Namespace, in.Name); ok {
		return fmt.Errorf("cluster %q is not leaving: the leaveCluster update (`flotilla cluster remove`) makes it leave first",
			fleet.DisplayName(in.Namespace, in.Name))
	}
	return nil
}

// await waits until the cluster is forgotten or the timeout passes. A cluster leaving with its workloads
// kept needs nothing of the cluster, so at the timeout it is forgotten anyway.
func (d *leaveDecider) await(ctx workflow.Context, in api.AwaitClusterRemovedInput) (api.AwaitClusterRemovedResult, error) {
	l, leaving := d.inv.LeavingCluster(in.Namespace, in.Name)
	if !leaving {
		return api.AwaitClusterRemovedResult{Removed: true}, nil
	}
	d.awaited++
	defer func() { d.awaited-- }()
	d.start(ctx)
	d.askNow() // look often while someone waits
	gone := func() bool {
		_, leaving := d.inv.LeavingCluster(in.Namespace, in.Name)
		return !leaving
	}
	if _, err := workflow.AwaitWithTimeout(ctx, in.Timeout, gone); err != nil {
		return api.AwaitClusterRemovedResult{}, err
	}
	if gone() {
		return api.AwaitClusterRemovedResult{Removed: true, KeepWorkloads: l.KeepWorkloads}, nil
	}
	l, _ = d.inv.LeavingCluster(in.Namespace, in.Name) // it may have been told to keep its workloads since
	held := d.holders[leaveEntry(in.Namespace, in.Name)]
	res := api.AwaitClusterRemovedResult{KeepWorkloads: l.KeepWorkloads, Holders: held.Holders, Error: held.Error}
	if l.KeepWorkloads {
		d.forget(ctx, l)
		res.Removed = true
	}
	return res, nil
}

// leavingHolders answers QueryLeavingHolders: what held each leaving cluster when last asked.
func (d *leaveDecider) leavingHolders() []api.LeavingHolders {
	out := []api.LeavingHolders{}
	for _, l := range d.inv.Leaving {
		lh, ok := d.holders[leaveEntry(l.Namespace, l.Name)]
		if !ok {
			lh = api.LeavingHolders{Name: l.Name, Namespace: l.Namespace, Generation: l.Generation, Holders: []api.Holder{}}
		}
		out = append(out, lh)
	}
	return out
}
