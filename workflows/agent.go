package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// AgentWorkflow keeps one agent-mode cluster's agent (ADR 23): it reads the agent's effective configuration
// on the management side and has the agent bring its own release to it, which the agent does only when the
// release records another configuration digest. So the agent's Deployment rolls exactly when its effective
// configuration changed, never because a worker, an agent or Temporal restarted. It checks when signalled
// (api.SignalCheck: `cluster add` and every worker start send it) and every AgentResyncInterval, and ends
// when the cluster leaves the inventory or agent mode.
func AgentWorkflow(ctx workflow.Context, in api.AgentWorkflowInput) error {
	k := &agentKeeper{in: in}
	if in.Status != nil {
		k.st = *in.Status
	}
	k.st.Workspace, k.st.Cluster = fleet.Workspace(in.Workspace), in.Cluster
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.AgentStatus, error) { return k.st, nil }); err != nil {
		return err
	}
	// Continue-as-new keeps the attributes; the first run sets them, so the Web UI finds the workflow by cluster.
	sa := workflow.GetTypedSearchAttributes(ctx)
	if cluster, _ := sa.GetKeyword(searchCluster); cluster != in.Cluster {
		_ = workflow.UpsertTypedSearchAttributes(ctx, searchCluster.ValueSet(in.Cluster), searchNamespace.ValueSet(k.st.Workspace))
	}
	checkCh := workflow.GetSignalChannel(ctx, api.SignalCheck)
	// The signal a run was started with (SignalWithStart) asks for the check it makes first anyway.
	for checkCh.ReceiveAsync(nil) {
	}
	for {
		delay, keep := k.check(ctx)
		if !keep {
			return nil
		}
		timerCtx, cancelTimer := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, delay), func(workflow.Future) {})
		sel.AddReceive(checkCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		cancelTimer()
		// A burst of signals (a worker restart beside a `cluster add`) is one check.
		for checkCh.ReceiveAsync(nil) {
		}
		if info := workflow.GetInfo(ctx); info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > agentMaxHistory {
			st := k.st
			return workflow.NewContinueAsNewError(ctx, AgentWorkflow, api.AgentWorkflowInput{Workspace: in.Workspace, Cluster: in.Cluster, Status: &st})
		}
	}
}

// agentMaxHistory keeps a run short: an idle agent adds a dozen events per resync.
const agentMaxHistory = 2000

type agentKeeper struct {
	in api.AgentWorkflowInput
	st api.AgentStatus
	// failures counts the checks failed in a row, for the backoff of the next.
	failures int
}

func (k *agentKeeper) name() string { return fleet.DisplayName(k.in.Workspace, k.in.Cluster) }

// check reads the desired configuration and has the agent keep it; it returns when to check next, and
// false when there is no agent to keep any more.
func (k *agentKeeper) check(ctx workflow.Context) (time.Duration, bool) {
	log := workflow.GetLogger(ctx)
	mctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: pollTimeout,
		RetryPolicy:         retries(3),
		Summary:             "agent configuration of " + k.name(),
	})
	var d api.AgentDesired
	if err := workflow.ExecuteActivity(mctx, api.ActivityAgentDesired, api.AgentDesiredInput{Workspace: k.in.Workspace, Cluster: k.in.Cluster}).Get(ctx, &d); err != nil {
		return k.failed(ctx, fmt.Sprintf("cluster %q: reading the agent's configuration: %v", k.name(), err)), true
	}
	if !d.Keep {
		log.Info("agent no longer kept", "cluster", k.name(), "reason", d.Reason)
		return 0, false
	}
	k.st.DesiredDigest = d.Digest
	// On the agent's own queue, waiting briefly to be picked up: an absent agent fails the check, which is
	// tried again later, instead of holding the loop (and its change signals) until the agent returns.
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              api.AgentTaskQueue(workflow.GetInfo(ctx).TaskQueueName, k.in.Workspace, k.in.Cluster),
		ScheduleToStartTimeout: agentPresenceMax,
		StartToCloseTimeout:    observeTimeout,
		// An agent killed during a check (as its own rollout kills it) is seen gone within a heartbeat, not
		// a StartToClose later: the loop, and the change signals waiting on it, go on.
		HeartbeatTimeout: heartbeat,
		RetryPolicy:      retries(2),
		Summary:          "keep the agent of " + k.name(),
	})
	var res api.KeepAgentResult
	err := workflow.ExecuteActivity(actx, api.ActivityKeepAgent, api.KeepAgentInput{Workspace: k.in.Workspace, Cluster: k.in.Cluster,
		Namespace: d.Namespace, Digest: d.Digest, Manifests: d.Manifests, Grant: d.Grant}).Get(ctx, &res)
	if agentAway(err) {
		return k.failed(ctx, fmt.Sprintf("cluster %q: agent offline: no flotilla-agent picked up its check within %s", k.name(), agentPresenceMax)), true
	}
	if err != nil {
		return k.failed(ctx, fmt.Sprintf("cluster %q: keeping the agent: %v", k.name(), err)), true
	}
	now := workflow.Now(ctx)
	k.st.AppliedDigest, k.st.Revision, k.st.Error = res.Digest, res.Revision, ""
	if res.Applied {
		k.st.LastApplied = now
		log.Info("agent release applied", "cluster", k.name(), "digest", res.Digest, "revision", res.Revision)
	}
	k.st.LastChecked, k.failures = now, 0
	k.st.Checks++
	return AgentResyncInterval, true
}

// failed records a failed check and returns the delay before the next: from agentRetryFirst, doubling up
// to AgentResyncInterval.
func (k *agentKeeper) failed(ctx workflow.Context, msg string) time.Duration {
	workflow.GetLogger(ctx).Warn("agent check failed", "cluster", k.name(), "failures", k.failures+1)
	k.st.Error, k.st.LastChecked = msg, workflow.Now(ctx)
	k.st.Checks++
	delay := agentRetryFirst << min(k.failures, 8)
	k.failures++
	return min(delay, AgentResyncInterval)
}
