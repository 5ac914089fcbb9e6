package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// Pull mode (ADR 22): the activities that touch an agent-mode cluster run on its own task queue, which
// only its flotilla-agent polls; the management side renders for it first (Prepare).

// clusterSide is ctx with opts for an activity that touches the cluster: on the agent's task queue for an
// agent-mode cluster, waiting at most the agent's presence timeout to be picked up.
func (r *clusterRun) clusterSide(ctx workflow.Context, opts workflow.ActivityOptions) workflow.Context {
	if r.in.Target.Agent {
		opts.TaskQueue = api.AgentTaskQueue(workflow.GetInfo(ctx).TaskQueueName, r.in.Target.Namespace, r.in.Target.Cluster)
		opts.ScheduleToStartTimeout = r.agentPresence()
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// agentPresence is how long a task waits in the agent's queue: short, so that an agent that stops is seen
// Offline soon after the first check that misses it.
func (r *clusterRun) agentPresence() time.Duration {
	return min(max(r.checkInterval()/4, agentPresenceMin), agentPresenceMax)
}

// observeByAgent renders on the management side (a local activity, skipped while the desired state is the
// one last prepared) and has the agent read the releases and their objects.
func (r *clusterRun) observeByAgent(ctx workflow.Context) (api.Observation, error) {
	prepared, err := r.prepare(ctx)
	if err != nil {
		return api.Observation{}, err
	}
	actx := r.clusterSide(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: observeTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(2),
		Summary:             "observe " + r.in.Target.Cluster + " (agent)",
	})
	var obs api.Observation
	err = workflow.ExecuteActivity(actx, api.ActivityObserve, api.ObserveInput{Target: r.in.Target, Resources: true, Prepared: prepared,
		Generation: r.in.Generation, Grant: r.grant}).Get(ctx, &obs)
	return obs, err
}

// prepare is the management side's rendering of the current desired state for the agent, made once per
// desired state: a rendering depends only on the target (commit, chart locks, the cluster's inventory
// digest), and a worker that lost a package makes it again when the agent asks for it (ReadContent).
func (r *clusterRun) prepare(ctx workflow.Context) ([]api.PreparedBundle, error) {
	if r.prepared != nil {
		return r.prepared, nil
	}
	res, err := prepareFor(ctx, r.in.Target, r.in.Generation)
	if err != nil {
		return nil, err
	}
	r.prepared, r.grant = res.Bundles, res.Grant
	if r.prepared == nil {
		r.prepared = []api.PreparedBundle{}
	}
	return r.prepared, nil
}

// prepareFor runs the management side's rendering of target for its agent (the local Prepare activity).
func prepareFor(ctx workflow.Context, target api.ClusterTarget, generation int64) (api.PrepareResult, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 2 * observeTimeout,
		StartToCloseTimeout:    observeTimeout,
		RetryPolicy:            retries(2),
		Summary:                "render for " + target.Cluster + " (agent)",
	})
	var res api.PrepareResult
	err := workflow.ExecuteLocalActivity(lctx, api.ActivityPrepare, api.PrepareInput{Target: target, Generation: generation}).Get(ctx, &res)
	return res, err
}

// newerDesiredWaiting reports, for an agent-mode cluster, that a newer desired state arrived while the
// agent was being waited for: acting on the observation made for the older one would add a Helm revision
// for a commit already superseded, so the caller goes round again with the newer one. (Kubeconfig-mode
// histories never take this branch, so they replay unchanged.)
func (r *clusterRun) newerDesiredWaiting(ctx workflow.Context) bool {
	return r.in.Target.Agent && workflow.GetSignalChannel(ctx, api.SignalDesired).Len() > 0
}

// agentAway reports whether err is a cluster-side task that no agent picked up in time.
func agentAway(err error) bool {
	var te *temporal.TimeoutError
	return errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START
}

// offlineMessage says why an agent-mode cluster is Offline and since when it was last seen.
func (r *clusterRun) offlineMessage(ctx workflow.Context, waited time.Duration) string {
	seen := "never seen"
	if ls := r.carry.Status.LastSeen; !ls.IsZero() {
		seen = fmt.Sprintf("last seen %s (%s ago)", ls.UTC().Format(time.RFC3339), workflow.Now(ctx).Sub(ls).Round(time.Second))
	}
	return fmt.Sprintf("cluster %q: agent offline: no flotilla-agent picked up its task within %s on task queue %q; %s",
		r.in.Target.Cluster, waited, api.AgentTaskQueue(workflow.GetInfo(ctx).TaskQueueName, r.in.Target.Namespace, r.in.Target.Cluster), seen)
}
