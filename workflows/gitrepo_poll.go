package workflows

import (
	"fmt"

	"github.com/flotilla-gitops/flotilla/api"
	"go.temporal.io/sdk/workflow"
)

// planKey covers everything planning depends on besides the commit and the inventory.
func (g *gitRepoRun) planKey() string {
	s := g.spec.Spec
	parts := []any{s.Repo, s.Paths, s.Targets, s.ClientSecretName}
	if a := api.ChartAccessOf(s); a != nil {
		// Only when set, so that the key of every spec from before it existed stays the same.
		parts = append(parts, *a)
	}
	if s.HelmOp != nil {
		parts = append(parts, *s.HelmOp)
	}
	if len(s.SyncWindows) > 0 {
		parts = append(parts, s.SyncWindows) // which windows choose which clusters is planned
	}
	return hashOf(parts)
}

// resolvesCharts says whether a plan pins remote charts or fetched dependencies: what a source resolves
// to can change without a commit (a new chart version published), so such a plan is made again at every
// poll; the clusters hear of it only when a lock changed.
func resolvesCharts(p *api.Plan) bool {
	if p == nil {
		return false
	}
	for _, b := range p.Bundles {
		if len(b.Charts) > 0 {
			return true
		}
	}
	return false
}

// poll resolves the commit and re-plans when the commit, the inventory or the spec changed.
// A failure keeps the previous plan: nothing is removed because a listing failed.
func (g *gitRepoRun) poll(ctx workflow.Context, resync bool) {
	g.carry.ForceSync = false
	s := g.spec.Spec
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: pollTimeout,
		HeartbeatTimeout:    heartbeat, // a poll lost with a killed worker is retried in seconds, not a minute
		RetryPolicy:         retries(3),
		Summary:             "ls-remote " + s.Repo,
	})
	var res api.PollResult
	err := workflow.ExecuteActivity(actx, api.ActivityPoll, api.PollInput{
		GitRepo: g.name(), Repo: s.Repo, Branch: s.Branch, Revision: s.Revision, ClientSecretName: s.ClientSecretName,
		Namespace: g.key.PayloadNamespace(), CABundle: s.CABundle, InsecureSkipTLSVerify: s.InsecureSkipTLSVerify, HelmOp: s.HelmOp,
	}).Get(ctx, &res)
	g.carry.LastPolled = workflow.Now(ctx)
	if err != nil {
		g.carry.Error = "repository: " + errorMessage(err)
		return
	}
	g.applyLeaving(ctx, res.InventoryGeneration, res.Leaving)
	key := g.planKey()
	if g.carry.Plan != nil && res.Commit == g.carry.Commit && res.InventoryGeneration == g.carry.InventoryGeneration &&
		key == g.carry.PlanKey && !resync && !resolvesCharts(g.carry.Plan) {
		g.carry.Error, g.carry.Held = "", nil
		return
	}
	if h := g.carry.Held; h != nil && h.Commit == res.Commit && h.InventoryGeneration == res.InventoryGeneration &&
		h.PlanKey == key && g.carry.Approved != h.Key {
		g.carry.Error = ""
		return // still waiting for approval; planning again would only hold it again
	}
	pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: planTimeout,
		HeartbeatTimeout:    heartbeat,
		RetryPolicy:         retries(3),
		Summary:             "plan " + api.ShortCommit(res.Commit),
	})
	var plan api.Plan
	err = workflow.ExecuteActivity(pctx, api.ActivityPlan, api.PlanInput{
		GitRepo: g.name(), Repo: s.Repo, Commit: res.Commit, ClientSecretName: s.ClientSecretName,
		Paths: s.Paths, Targets: s.Targets, Namespace: g.key.PayloadNamespace(),
		CABundle: s.CABundle, InsecureSkipTLSVerify: s.InsecureSkipTLSVerify, ChartAccess: api.ChartAccessOf(s), HelmOp: s.HelmOp,
		SyncWindows: s.SyncWindows, Pack: true,
	}).Get(ctx, &plan)
	if err == nil {
		err = unpackPlan(&plan)
	}
	if err != nil {
		g.carry.Error = fmt.Sprintf("commit %s: %s", api.ShortCommit(res.Commit), errorMessage(err))
		return
	}
	g.carry.Error = ""
	g.applyLeaving(ctx, plan.InventoryGeneration, plan.Leaving)
	keepUnloaded(g.carry.Plan, &plan)
	holdKey := hashOf([]any{plan.Commit, plan.InventoryGeneration, key})
	if msg := removalHold(g.key, g.carry.Plan, &plan, g.carry.Leaving); msg != "" && g.carry.Approved != holdKey {
		g.carry.Held = &HeldPlan{Key: holdKey, Commit: plan.Commit, InventoryGeneration: plan.InventoryGeneration, PlanKey: key, Message: msg}
		workflow.GetLogger(ctx).Warn("plan held for approval", "gitRepo", g.key.String(), "commit", plan.Commit)
		return
	}
	g.carry.Held, g.carry.Approved = nil, ""
	g.carry.Plan, g.carry.Commit, g.carry.InventoryGeneration, g.carry.PlanKey = &plan, plan.Commit, plan.InventoryGeneration, key
	g.removeUntargeted(ctx)
}

// removeUntargeted tells clusters that a successful plan no longer targets to uninstall this GitRepo.
func (g *gitRepoRun) removeUntargeted(ctx workflow.Context) {
	for _, c := range g.r.untargeted(g.carry.Plan) {
		g.signalRemove(ctx, api.RemoveRequest{KeepResources: g.spec.Spec.KeepResources}, c)
	}
}

// applyLeaving takes the leaving clusters of the inventory a poll or a plan just read (ADR 16): the plan
// the GitRepo delivers no longer has them, whatever becomes of its newest plan (held, failed), and each is
// told to uninstall, or to forget the cluster when it leaves with its workloads kept. The latest read wins,
// even with a lower generation (an inventory started afresh counts from one again). Runs that never saw a
// leaving cluster issue no command here.
func (g *gitRepoRun) applyLeaving(ctx workflow.Context, generation int64, leaving []api.LeavingCluster) {
	g.carry.InventorySeen, g.carry.Leaving = generation, leaving
	if len(leaving) == 0 {
		return
	}
	if p, dropped := dropLeaving(g.carry.Plan, leaving); dropped {
		g.carry.Plan = p
		workflow.GetLogger(ctx).Info("leaving clusters no longer targeted", "gitRepo", g.key.String(), "generation", generation)
	}
	g.removeLeaving(ctx, leaving)
}

// removeLeaving signals the removals that leaving clusters call for.
func (g *gitRepoRun) removeLeaving(ctx workflow.Context, leaving []api.LeavingCluster) {
	for _, rm := range g.r.leave(leaving) {
		g.signalRemove(ctx, api.RemoveRequest{KeepResources: g.spec.Spec.KeepResources, Forget: rm.Forget}, rm.Cluster)
	}
}

// leavingCluster says whether a cluster is leaving the inventory, as the GitRepo last read it.
func (g *gitRepoRun) leavingCluster(cluster string) (api.LeavingCluster, bool) {
	for _, l := range g.carry.Leaving {
		if l.Name == cluster {
			return l, true
		}
	}
	return api.LeavingCluster{}, false
}

// signalRemove tells a cluster's workflow to uninstall this GitRepo (or only forget the cluster). At most
// maxRemovalsInFlight remove signals wait for the server at once: Temporal fails every workflow task of a
// workflow with 2,000 signals pending, so a GitRepo deleted from 10,000 clusters would otherwise wedge.
// The first ones are sent at once, in the order decided, as before the bound existed.
func (g *gitRepoRun) signalRemove(ctx workflow.Context, req api.RemoveRequest, cluster string) {
	g.pending++
	id := g.key.ClusterWorkflowID(cluster)
	sent := func(gctx workflow.Context, f workflow.Future) {
		kind := eventRemoveSent
		if err := f.Get(gctx, nil); err != nil {
			kind = eventRemoveGone
		}
		g.removalsInFlight--
		g.events.Send(gctx, deliveryEvent{cluster: cluster, kind: kind})
	}
	if !g.boundSignals || g.removalsInFlight < maxRemovalsInFlight {
		g.removalsInFlight++
		f := workflow.SignalExternalWorkflow(ctx, id, "", api.SignalRemove, req)
		workflow.Go(ctx, func(gctx workflow.Context) { sent(gctx, f) })
		return
	}
	workflow.Go(ctx, func(gctx workflow.Context) {
		_ = workflow.Await(gctx, func() bool { return g.removalsInFlight < maxRemovalsInFlight })
		g.removalsInFlight++
		sent(gctx, workflow.SignalExternalWorkflow(gctx, id, "", api.SignalRemove, req))
	})
}

// resync finds cluster workflows that should run but do not (terminated by hand, say) and re-delivers to them.
func (g *gitRepoRun) resync(ctx workflow.Context) {
	g.carry.LastResync = workflow.Now(ctx)
	if g.carry.Plan == nil {
		return
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: pollTimeout,
		RetryPolicy:         retries(2),
		Summary:             "list cluster workflows",
	})
	var res api.ListClusterWorkflowsResult
	if err := workflow.ExecuteActivity(actx, api.ActivityListClusterWorkflows,
		api.ListClusterWorkflowsInput{GitRepo: g.name(), Namespace: g.key.PayloadNamespace()}).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("listing cluster workflows failed", "gitRepo", g.key.String(), "error", err)
		return
	}
	for _, c := range g.r.restartMissing(g.carry.Plan, res.Clusters) {
		workflow.GetLogger(ctx).Info("cluster workflow not running; starting it again", "gitRepo", g.key.String(), "cluster", c)
	}
}
