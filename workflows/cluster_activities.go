package workflows

import (
	"fmt"

	"github.com/flotilla-gitops/flotilla/api"
	"go.temporal.io/sdk/workflow"
)

// observe runs the Observe activity. It is a local activity: a read of a few objects that takes well under
// a second, where a scheduled activity costs a task round trip through the server and one more workflow
// task, per cluster and per check. At a thousand clusters that was a third of Temporal's work for a
// rollout and half of an idle check's (docs/performance.md). Histories recorded before the change replay
// with the scheduled activity they hold.
func (r *clusterRun) observe(ctx workflow.Context) (api.Observation, error) {
	if r.in.Target.Agent {
		return r.observeByAgent(ctx)
	}
	in := api.ObserveInput{Target: r.in.Target, Resources: true}
	retry := retries(2)
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
	ctx = r.clusterSide(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: applyTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(3),
		Summary:             fmt.Sprintf("apply %d bundle(s) to %s", len(actions), r.in.Target.Cluster),
	})
	var res api.ApplyResult
	in := api.ApplyInput{Target: r.in.Target, Actions: actions, Observe: true, Sweep: sweep}
	if r.in.Target.Agent {
		in.Prepared, in.Generation, in.Grant = r.prepared, r.in.Generation, r.grant
	}
	err := workflow.ExecuteActivity(ctx, api.ActivityApply, in).Get(ctx, &res)
	return res, err
}
