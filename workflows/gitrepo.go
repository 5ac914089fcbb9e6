package workflows

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

type gitRepoRun struct {
	// key is the GitRepo's identity, fixed for the life of the workflow (api.GitRepoInput.Workspace).
	key   api.GitRepoKey
	spec  fleet.GitRepo
	opts  api.RunOptions
	carry GitRepoCarry
	// r is carry.Rollout: the per-cluster state and its rules.
	r      *rollout
	paused bool
	events workflow.Channel
	wake   workflow.Channel // an update changed when to poll next
	// diffPlan is the last commit a diff planned (gitrepo_diff.go), kept for its next pages.
	diffPlan      *api.Plan
	nextPoll      time.Time
	polls         int64
	pending       int
	startsThisRun int
	// boundSignals says this run bounds the signals it has waiting for the server (gitRepoBoundSignals);
	// removalsInFlight counts the remove signals among them.
	boundSignals     bool
	removalsInFlight int
	// draining says the run wants to continue as new and hands nothing more over meanwhile.
	draining bool
	// workBudget says this run continues as new once its passes have looked at maxClusterPassesPerRun
	// clusters in all (gitRepoWorkBudget); clusterPasses counts them.
	workBudget    bool
	clusterPasses int
	// The loop's wake-up timer, kept across passes while its time does not change.
	timer       workflow.Future
	timerAt     time.Time
	timerCancel workflow.CancelFunc
	// What was last published and when, and when held-back progress is due (zero: nothing held back).
	publishedAt  time.Time
	publishedKey string
	publishDue   time.Time
	// windowDue is when a planned cluster's sync windows next open or close (zero: never, or none).
	windowDue time.Time
	// hashes remembers the planned clusters' desired-state hashes (desiredHash).
	hashes desiredHashes
}

// GitRepoWorkflow keeps one GitRepo deployed: it polls the repository, plans bundles and targets against the
// inventory, and hands each targeted cluster its desired state through a child ClusterWorkflow. Clusters
// fail alone: the parent never waits on one cluster to serve another.
func GitRepoWorkflow(ctx workflow.Context, in api.GitRepoInput) error {
	if in.HelmOp != nil {
		gr, err := in.HelmOp.AsGitRepo()
		if err != nil {
			return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalidGitRepo, nil)
		}
		in.GitRepo, in.HelmOp = gr, nil
		if in.Workspace == "" && fleet.Workspace(gr.Metadata.Namespace) != fleet.DefaultNamespace {
			in.Workspace = gr.Metadata.Namespace
		}
	}
	validate := fleet.ValidateGitRepoLegacyURL
	if workflow.GetVersion(ctx, strictRepoURL, workflow.DefaultVersion, 1) == 1 {
		validate = fleet.ValidateGitRepo
	}
	if err := validate(in.GitRepo); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalidGitRepo, nil)
	}
	key := api.KeyOf(in.Workspace, in.Metadata.Name)
	if err := validateWorkspace(in.GitRepo, in.Workspace); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalidGitRepo, nil)
	}
	g := &gitRepoRun{key: key, spec: withWorkspace(in.GitRepo, key), paused: in.Spec.Paused}
	if in.Flotilla != nil {
		g.opts = *in.Flotilla
	}
	if err := readCarry(in.Carry, &g.carry); err != nil {
		return temporal.NewNonRetryableApplicationError("gitrepo "+key.String()+": carried state: "+err.Error(), api.ErrTypeInvalidCarry, nil)
	}
	if len(in.CarryZ) > 0 {
		c, err := unpackCarry(in.CarryZ)
		if err != nil {
			return temporal.NewNonRetryableApplicationError("gitrepo "+key.String()+": carried state: "+err.Error(), api.ErrTypeInvalidCarry, nil)
		}
		g.carry = c
	}
	g.r = g.carry.takeRollout()
	g.restoreHashes()
	g.events = workflow.NewBufferedChannel(ctx, 10000)
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.GitRepoStatus, error) {
		return boundedStatus(g.view(workflow.Now(ctx)), statusAnswerLimit), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryStatusPage, func(in api.StatusPageInput) (api.GitRepoStatus, error) {
		return boundedStatus(statusPage(g.view(workflow.Now(ctx)), in), statusAnswerLimit), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, api.QuerySpec, func() (fleet.GitRepo, error) { return g.specView(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, api.QueryDiffTarget, g.diffTarget); err != nil {
		return err
	}
	g.wake = workflow.NewBufferedChannel(ctx, 1)
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.UpdateSetPollingInterval, g.setPollingInterval,
		workflow.UpdateHandlerOptions{Validator: validatePollingInterval}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.UpdateApproveRemoval, g.approveRemoval,
		workflow.UpdateHandlerOptions{Validator: g.validateApproval}); err != nil {
		return err
	}
	if err := g.setRolloutHandlers(ctx); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.UpdateRollback, g.rollback,
		workflow.UpdateHandlerOptions{Validator: g.validateRollback}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.UpdateOverrideWindow, g.overrideWindow,
		workflow.UpdateHandlerOptions{Validator: g.validateOverrideWindow}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, api.UpdateDiff, g.diff,
		workflow.UpdateHandlerOptions{Validator: g.validateDiff}); err != nil {
		return err
	}
	g.boundSignals = workflow.GetVersion(ctx, gitRepoBoundSignals, workflow.DefaultVersion, 1) == 1
	g.workBudget = workflow.GetVersion(ctx, gitRepoWorkBudget, workflow.DefaultVersion, 1) == 1
	// One upsert, as before FlotillaNamespace existed: replay matches an upsert by its kind alone.
	_ = workflow.UpsertTypedSearchAttributes(ctx, searchGitRepo.ValueSet(g.spec.Metadata.Name), searchRepo.ValueSet(g.spec.Spec.Repo),
		searchNamespace.ValueSet(key.Namespace))
	return g.loop(ctx)
}

func (g *gitRepoRun) name() string { return g.spec.Metadata.Name }

// withWorkspace writes the namespace of a GitRepo outside fleet-default into a spec that names none, so
// the spec query says where it runs; fleet-default specs are kept as they came, as before workspaces.
func withWorkspace(spec fleet.GitRepo, key api.GitRepoKey) fleet.GitRepo {
	if spec.Metadata.Namespace == "" && !key.IsDefault() {
		spec.Metadata.Namespace = key.Namespace
	}
	return spec
}

func (g *gitRepoRun) pollingInterval() time.Duration {
	if d, err := time.ParseDuration(g.spec.Spec.PollingInterval); err == nil && d > 0 {
		return d
	}
	return DefaultPollingInterval
}

func (g *gitRepoRun) resyncInterval() time.Duration {
	if d, err := time.ParseDuration(g.opts.ResyncInterval); err == nil && d > 0 {
		return d
	}
	return DefaultResyncInterval
}

func (g *gitRepoRun) checkInterval() time.Duration {
	if d, err := time.ParseDuration(g.opts.CheckInterval); err == nil && d > 0 {
		return d
	}
	return 0
}

func (g *gitRepoRun) window() int {
	w := api.DefaultRolloutWindow
	if g.opts.RolloutWindow > 0 {
		w = g.opts.RolloutWindow
	}
	if g.boundSignals && w > maxRolloutWindow {
		// Each hand-over in the window may be a signal waiting for the server: see maxRolloutWindow.
		w = maxRolloutWindow
	}
	return w
}

// jitter delays the nth poll by up to 10% of the interval, as Fleet's polling trigger does, so GitRepos
// started together do not poll together.
func (g *gitRepoRun) jitter(d time.Duration, n int64) time.Duration {
	return time.Duration(float64(d) * 0.1 * float64(spread(fmt.Sprintf("%s/%d", g.key, n))) / 65535.0)
}

func (g *gitRepoRun) loop(ctx workflow.Context) error {
	syncCh := workflow.GetSignalChannel(ctx, api.SignalSync)
	specCh := workflow.GetSignalChannel(ctx, api.SignalSpec)
	pauseCh := workflow.GetSignalChannel(ctx, api.SignalPause)
	resumeCh := workflow.GetSignalChannel(ctx, api.SignalResume)
	deleteCh := workflow.GetSignalChannel(ctx, api.SignalDelete)
	reportCh := workflow.GetSignalChannel(ctx, api.SignalClusterReport)
	loop2 := workflow.GetVersion(ctx, gitRepoLoop2, workflow.DefaultVersion, 1) == 1
	for {
		now := workflow.Now(ctx)
		resyncDue := !now.Before(g.carry.LastResync.Add(g.resyncInterval()))
		pollDue := !now.Before(g.nextPoll) && !g.spec.Spec.DisablePolling
		if g.carry.Plan == nil || g.carry.ForceSync || pollDue || resyncDue {
			g.poll(ctx, resyncDue)
			g.polls++
			g.nextPoll = workflow.Now(ctx).Add(g.pollingInterval() + g.jitter(g.pollingInterval(), g.polls))
		}
		if resyncDue {
			g.resync(ctx)
		}
		if g.carry.Deleting {
			return g.deleteEverywhere(ctx, reportCh)
		}
		g.deliver(ctx)
		g.publish(ctx, loop2)
		g.clusterPasses += len(g.r.Clusters)

		wake := g.nextPoll
		if g.spec.Spec.DisablePolling || wake.IsZero() {
			wake = workflow.Now(ctx).Add(g.resyncInterval())
		}
		if r := g.carry.LastResync.Add(g.resyncInterval()); r.Before(wake) {
			wake = r
		}
		wake = g.r.nextAckDeadline(workflow.Now(ctx), wake)
		if d := g.r.soakDue; d.After(workflow.Now(ctx)) && d.Before(wake) {
			wake = d // a partition's soak time ends: its gate opens
		}
		if d := g.windowDue; d.After(workflow.Now(ctx)) && d.Before(wake) {
			wake = d // a sync window opens or closes
		}
		if !g.publishDue.IsZero() && g.publishDue.Before(wake) {
			wake = g.publishDue
		}
		timer := g.wakeAt(ctx, wake, loop2)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) { g.timer = nil })
		g.addSignalHandlers(ctx, sel, syncCh, specCh, pauseCh, resumeCh, deleteCh, reportCh)
		sel.AddReceive(g.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(g.events, func(c workflow.ReceiveChannel, _ bool) {
			var ev deliveryEvent
			c.Receive(ctx, &ev)
			g.handleEvent(ctx, ev)
		})
		sel.Select(ctx)
		if !loop2 {
			g.cancelTimer()
		}
		// Take everything already waiting before deciding again, so bursts of reports cost one pass.
		for sel.HasPending() {
			sel.Select(ctx)
		}
		if g.carry.Deleting {
			continue
		}
		wantCAN := g.runLongEnough(ctx) || g.startsThisRun >= MaxChildStartsPerRun
		// Hand nothing more over once this run should end: a rollout that keeps its window full would
		// otherwise never let the hand-overs drain, and the run would grow past every bound it set itself.
		g.draining = wantCAN && g.boundSignals
		// An update still planning (a rollback, a diff) would be lost with this run: it wakes the loop when done.
		if wantCAN && g.pending == 0 && workflow.AllHandlersFinished(ctx) {
			for sel.HasPending() {
				sel.Select(ctx)
			}
			if g.pending == 0 && !g.carry.Deleting {
				return g.continueAsNew(ctx)
			}
		}
	}
}

// wakeAt returns a timer that fires at wake, reusing the running one when it is due at the same moment.
func (g *gitRepoRun) wakeAt(ctx workflow.Context, wake time.Time, keep bool) workflow.Future {
	if keep && g.timer != nil && g.timerAt.Equal(wake) {
		return g.timer
	}
	g.cancelTimer()
	timerCtx, cancel := workflow.WithCancel(ctx)
	g.timer, g.timerAt, g.timerCancel = workflow.NewTimer(timerCtx, wake.Sub(workflow.Now(ctx))), wake, cancel
	return g.timer
}

func (g *gitRepoRun) cancelTimer() {
	if g.timerCancel != nil {
		g.timerCancel()
	}
	g.timer, g.timerCancel = nil, nil
}

// runLongEnough says the run should hand over to a new one: the server suggests it, its history is long,
// or (gitRepoWorkBudget) replaying its passes would take long.
func (g *gitRepoRun) runLongEnough(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > MaxHistoryEvents ||
		g.workBudget && g.clusterPasses > maxClusterPassesPerRun
}

func (g *gitRepoRun) continueAsNew(ctx workflow.Context) error {
	in, trimmed := g.nextRunInput()
	if trimmed {
		workflow.GetLogger(ctx).Warn("carried cluster statuses trimmed to fit the payload limit; they fill in again as clusters report",
			"gitRepo", g.key.String(), "clusters", len(g.r.Clusters))
	}
	if g.workBudget {
		ctx = workflow.WithWorkflowTaskTimeout(ctx, api.GitRepoTaskTimeout)
	}
	return workflow.NewContinueAsNewError(ctx, GitRepoWorkflow, in)
}

// nextRunInput is the input of the run that continues this one, its carried state packed.
func (g *gitRepoRun) nextRunInput() (api.GitRepoInput, bool) {
	in := api.GitRepoInput{GitRepo: g.spec, Workspace: g.key.PayloadNamespace()}
	in.Spec.Paused = g.paused
	if g.opts != (api.RunOptions{}) {
		opts := g.opts
		in.Flotilla = &opts
	}
	var trimmed bool
	carry := g.carry
	if g.boundSignals {
		carry.Rollout = g.withoutCurrentHashes()
	}
	in.CarryZ, trimmed = packCarry(carry)
	return in, trimmed
}

// A delivery's hash identifies the desired state a cluster was handed; at 10,000 clusters the hashes are
// a sixth of the carried state once compressed (no compression shortens them). Most are the cluster's
// desired state at the carried plan, which the next run computes from what it is carried anyway.

// withoutCurrentHashes copies the rollout with every delivery hash that is its cluster's desired state now
// replaced by Current.
func (g *gitRepoRun) withoutCurrentHashes() *rollout {
	if g.carry.Plan == nil {
		return g.r
	}
	r := *g.r
	r.Clusters = make(map[string]*clusterEntry, len(g.r.Clusters))
	for _, name := range sortedKeys(g.r.Clusters) {
		r.Clusters[name] = g.r.Clusters[name]
	}
	hash := g.desiredHash()
	for _, pc := range g.carry.Plan.Clusters {
		e := r.Clusters[pc.Name]
		if e == nil || e.Delivered == nil || e.Delivered.Hash == "" || e.Delivered.Hash != hash(pc) {
			continue
		}
		c, d := *e, *e.Delivered
		d.Hash, d.Current = "", true
		c.Delivered = &d
		r.Clusters[pc.Name] = &c
	}
	return &r
}

// restoreHashes computes again the hashes withoutCurrentHashes left out.
func (g *gitRepoRun) restoreHashes() {
	if g.carry.Plan == nil {
		return
	}
	hash := g.desiredHash()
	for _, pc := range g.carry.Plan.Clusters {
		if e := g.r.Clusters[pc.Name]; e != nil && e.Delivered != nil && e.Delivered.Current {
			e.Delivered.Hash, e.Delivered.Current = hash(pc), false
		}
	}
}
