package workflows

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// GitRepoInput is the input of GitRepoWorkflow: a Fleet GitRepo document as JSON, e.g.
// {"metadata":{"name":"example"},"spec":{"repo":"https://…","branch":"main","paths":["apps"]}}.
type GitRepoInput struct {
	fleet.GitRepo
	// Flotilla tunes the orchestration; all fields are optional.
	Flotilla *RunOptions `json:"flotilla,omitempty"`
	// Carry is the state handed over by continue-as-new; users never set it. CarryZ is the same state
	// compressed (see packCarry); a run gets one or the other.
	Carry  *GitRepoCarry `json:"carry,omitempty"`
	CarryZ []byte        `json:"carryZ,omitempty"`
}

// RunOptions are Flotilla's own knobs, beside Fleet's spec.
type RunOptions struct {
	// RolloutWindow is how many clusters may be applying a new desired state at once (default 200).
	RolloutWindow int `json:"rolloutWindow,omitempty"`
	// CheckInterval is how often each cluster re-checks its releases when idle (default 1m).
	CheckInterval string `json:"checkInterval,omitempty"`
	// ResyncInterval bounds how long a terminated cluster workflow or a missed change goes unnoticed (default 5m).
	ResyncInterval string `json:"resyncInterval,omitempty"`
}

// GitRepoCarry is the GitRepo workflow's state across continue-as-new.
type GitRepoCarry struct {
	Commit              string                       `json:"commit,omitempty"`
	InventoryGeneration int64                        `json:"inventoryGeneration,omitempty"`
	Plan                *api.Plan                    `json:"plan,omitempty"`
	PlanKey             string                       `json:"planKey,omitempty"`
	Generation          int64                        `json:"generation,omitempty"`
	Delivered           map[string]delivery          `json:"delivered,omitempty"`
	Clusters            map[string]api.ClusterStatus `json:"clusters,omitempty"`
	Known               map[string]bool              `json:"known,omitempty"`
	Removing            map[string]bool              `json:"removing,omitempty"`
	Error               string                       `json:"error,omitempty"`
	LastPolled          time.Time                    `json:"lastPolled,omitempty"`
	LastResync          time.Time                    `json:"lastResync,omitempty"`
	ForceSync           bool                         `json:"forceSync,omitempty"`
	Deleting            bool                         `json:"deleting,omitempty"`
	Published           string                       `json:"published,omitempty"`
	// Held is a plan waiting for approval; Approved is the key of the held plan a person approved.
	Held     *HeldPlan `json:"held,omitempty"`
	Approved string    `json:"approved,omitempty"`
}

// delivery records the desired state last sent to a cluster workflow.
type delivery struct {
	Hash       string    `json:"hash"`
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"`
	Acked      bool      `json:"acked"`
}

// deliveryEvent is how delivery coroutines report back to the main loop.
type deliveryEvent struct {
	cluster string
	kind    eventKind
	err     error
}

type eventKind int

const (
	eventDelivered  eventKind = iota // desired state handed over (err set if that failed)
	eventEnded                       // a child started by this run ended without being asked to
	eventRemoveSent                  // remove signal delivered
	eventRemoveGone                  // remove signal found no running workflow: nothing left to uninstall through it
)

type gitRepoRun struct {
	spec          fleet.GitRepo
	opts          RunOptions
	carry         GitRepoCarry
	paused        bool
	events        workflow.Channel
	wake          workflow.Channel // an update changed when to poll next
	nextPoll      time.Time
	polls         int64
	pending       int
	startsThisRun int
	// The loop's wake-up timer, kept across passes while its time does not change.
	timer       workflow.Future
	timerAt     time.Time
	timerCancel workflow.CancelFunc
	// What was last published and when, and when held-back progress is due (zero: nothing held back).
	publishedAt  time.Time
	publishedKey string
	publishDue   time.Time
}

var gitRepoName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateGitRepo checks a GitRepo without I/O; the CLI runs the same checks before starting anything.
func ValidateGitRepo(g fleet.GitRepo) error {
	return validateGitRepo(g, true)
}

// validateGitRepo checks a GitRepo; strictURL adds the credential checks of fleet.CheckRepoURL, which
// runs started before them did not make (see strictRepoURL).
func validateGitRepo(g fleet.GitRepo, strictURL bool) error {
	name := g.Metadata.Name
	if !gitRepoName.MatchString(name) || len(name) > 63 {
		return fmt.Errorf("metadata.name %q: must be a DNS label (lowercase letters, digits, '-'; at most 63 characters)", name)
	}
	if g.Spec.Repo == "" {
		return fmt.Errorf("gitrepo %q: spec.repo is required", name)
	}
	if err := fleet.CheckRepoURL(g.Spec.Repo); err != nil && strictURL {
		return fmt.Errorf("gitrepo %q: spec.repo: %w", name, err)
	}
	if g.Spec.PollingInterval != "" {
		if d, err := time.ParseDuration(g.Spec.PollingInterval); err != nil || d < 0 {
			return fmt.Errorf("gitrepo %q: spec.pollingInterval %q: not a duration like 15s or 1m", name, g.Spec.PollingInterval)
		}
	}
	return nil
}

// GitRepoWorkflow keeps one GitRepo deployed: it polls the repository, plans bundles and targets against the
// inventory, and hands each targeted cluster its desired state through a child ClusterWorkflow. Clusters
// fail alone: the parent never waits on one cluster to serve another.
func GitRepoWorkflow(ctx workflow.Context, in GitRepoInput) error {
	strict := workflow.GetVersion(ctx, strictRepoURL, workflow.DefaultVersion, 1) == 1
	if err := validateGitRepo(in.GitRepo, strict); err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), api.ErrTypeInvalidGitRepo, nil)
	}
	g := &gitRepoRun{spec: in.GitRepo, paused: in.Spec.Paused}
	if in.Flotilla != nil {
		g.opts = *in.Flotilla
	}
	if in.Carry != nil {
		g.carry = *in.Carry
	}
	if len(in.CarryZ) > 0 {
		c, err := unpackCarry(in.CarryZ)
		if err != nil {
			return temporal.NewNonRetryableApplicationError("gitrepo "+in.Metadata.Name+": carried state: "+err.Error(), api.ErrTypeInvalidCarry, nil)
		}
		g.carry = c
	}
	g.initMaps()
	g.events = workflow.NewBufferedChannel(ctx, 10000)
	if err := workflow.SetQueryHandler(ctx, api.QueryStatus, func() (api.GitRepoStatus, error) { return g.view(), nil }); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(ctx, api.QuerySpec, func() (fleet.GitRepo, error) { return g.specView(), nil }); err != nil {
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
	_ = workflow.UpsertTypedSearchAttributes(ctx, searchGitRepo.ValueSet(g.spec.Metadata.Name), searchRepo.ValueSet(g.spec.Spec.Repo))
	return g.loop(ctx)
}

// strictRepoURL is the version from which a run refuses every credential form in spec.repo (query strings,
// fragments, scp-style passwords). A run started before, with such a URL, replays as it ran and meets the
// check when it continues as new, where it stops with InvalidGitRepo naming the part to remove.
const strictRepoURL = "strict-repo-url"

func (g *gitRepoRun) specView() fleet.GitRepo {
	s := g.spec
	s.Spec.Paused = g.paused
	return s
}

// MinPollingInterval keeps a typo from turning polling into a busy loop.
const MinPollingInterval = time.Second

func validatePollingInterval(_ workflow.Context, in api.SetPollingIntervalInput) error {
	d, err := time.ParseDuration(in.PollingInterval)
	if err != nil {
		return fmt.Errorf("pollingInterval %q: not a duration (e.g. \"30s\", \"5m\")", in.PollingInterval)
	}
	if d < MinPollingInterval {
		return fmt.Errorf("pollingInterval %q: must be at least %s", in.PollingInterval, MinPollingInterval)
	}
	return nil
}

// setPollingInterval reschedules the next poll from the last one, so a shorter interval takes effect at once.
func (g *gitRepoRun) setPollingInterval(ctx workflow.Context, in api.SetPollingIntervalInput) (api.SetPollingIntervalResult, error) {
	g.spec.Spec.PollingInterval = in.PollingInterval
	if !g.carry.LastPolled.IsZero() {
		g.nextPoll = g.carry.LastPolled.Add(g.pollingInterval() + g.jitter(g.pollingInterval(), g.polls))
	}
	g.wake.SendAsync(true)
	return api.SetPollingIntervalResult{PollingInterval: in.PollingInterval, NextPoll: g.nextPoll}, nil
}

func (g *gitRepoRun) initMaps() {
	if g.carry.Delivered == nil {
		g.carry.Delivered = map[string]delivery{}
	}
	if g.carry.Clusters == nil {
		g.carry.Clusters = map[string]api.ClusterStatus{}
	}
	if g.carry.Known == nil {
		g.carry.Known = map[string]bool{}
	}
	if g.carry.Removing == nil {
		g.carry.Removing = map[string]bool{}
	}
}

func (g *gitRepoRun) name() string { return g.spec.Metadata.Name }

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
	if g.opts.RolloutWindow > 0 {
		return g.opts.RolloutWindow
	}
	return DefaultRolloutWindow
}

// jitter spreads polls of many GitRepos by up to 10% of the interval, deterministically.
func (g *gitRepoRun) jitter(d time.Duration, n int64) time.Duration {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", g.name(), n)))
	return time.Duration(float64(d) * 0.1 * float64(binary.BigEndian.Uint16(sum[:2])) / 65535.0)
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

		wake := g.nextPoll
		if g.spec.Spec.DisablePolling || wake.IsZero() {
			wake = workflow.Now(ctx).Add(g.resyncInterval())
		}
		if r := g.carry.LastResync.Add(g.resyncInterval()); r.Before(wake) {
			wake = r
		}
		for _, c := range workflow.DeterministicKeys(g.carry.Delivered) {
			if d := g.carry.Delivered[c]; !d.Acked && d.Hash != "" && d.At.Add(AckTimeout).Before(wake) {
				wake = d.At.Add(AckTimeout)
			}
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
			g.handleEvent(ev)
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
		info := workflow.GetInfo(ctx)
		wantCAN := info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > MaxHistoryEvents ||
			g.startsThisRun >= MaxChildStartsPerRun
		if wantCAN && g.pending == 0 {
			for sel.HasPending() {
				sel.Select(ctx)
			}
			if g.pending == 0 && !g.carry.Deleting {
				return g.continueAsNew(ctx)
			}
		}
	}
}

// gitRepoLoop2 is the version from which the loop keeps its timer while the wake-up time stays the same
// and paces what it publishes. Before, every pass (every batch of cluster reports) started a timer and
// cancelled it, and upserted the memo and search attributes when the ready count moved: four commands and
// as many history events a pass, a third of the GitRepo's history in a 1,000-cluster rollout.
const gitRepoLoop2 = "gitrepo-loop-2"

// publishEvery paces the Web UI's view of a rollout in progress: the ready count moves at most this often.
// The status query is always live, and a change of state, commit or error, or the last cluster becoming
// Ready, is published at once.
const publishEvery = 2 * time.Second

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

func (g *gitRepoRun) addSignalHandlers(ctx workflow.Context, sel workflow.Selector, syncCh, specCh, pauseCh, resumeCh, deleteCh, reportCh workflow.ReceiveChannel) {
	sel.AddReceive(syncCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		g.carry.ForceSync = true
	})
	sel.AddReceive(specCh, func(c workflow.ReceiveChannel, _ bool) {
		var spec fleet.GitRepo
		c.Receive(ctx, &spec)
		if spec.Metadata.Name == "" {
			spec.Metadata.Name = g.name()
		}
		if err := ValidateGitRepo(spec); err != nil || spec.Metadata.Name != g.name() {
			workflow.GetLogger(ctx).Warn("spec update refused", "gitRepo", g.name(), "error", err)
			return
		}
		repoChanged := spec.Spec.Repo != g.spec.Spec.Repo
		g.spec = spec
		g.paused = spec.Spec.Paused
		g.carry.ForceSync = true
		if repoChanged && workflow.GetVersion(ctx, "repo-search-attribute-follows-spec", workflow.DefaultVersion, 1) == 1 {
			_ = workflow.UpsertTypedSearchAttributes(ctx, searchRepo.ValueSet(spec.Spec.Repo))
		}
	})
	sel.AddReceive(pauseCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		g.paused = true
	})
	sel.AddReceive(resumeCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		g.paused = false
		g.carry.ForceSync = true
	})
	sel.AddReceive(deleteCh, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		g.carry.Deleting = true
	})
	sel.AddReceive(reportCh, func(c workflow.ReceiveChannel, _ bool) {
		var rep ClusterReport
		c.Receive(ctx, &rep)
		g.handleReport(rep)
	})
}

func (g *gitRepoRun) handleReport(rep ClusterReport) {
	if rep.Removed {
		delete(g.carry.Clusters, rep.Cluster)
		delete(g.carry.Removing, rep.Cluster)
		delete(g.carry.Known, rep.Cluster)
		return
	}
	if g.carry.Removing[rep.Cluster] {
		return
	}
	g.carry.Known[rep.Cluster] = true
	g.carry.Clusters[rep.Cluster] = rep.Status
	if d, ok := g.carry.Delivered[rep.Cluster]; ok && rep.Status.Generation >= d.Generation {
		d.Acked = true
		g.carry.Delivered[rep.Cluster] = d
	}
}

func (g *gitRepoRun) handleEvent(ev deliveryEvent) {
	switch ev.kind {
	case eventEnded:
		// A child of this run ended without being asked to: re-deliver, which starts it again.
		if !g.carry.Removing[ev.cluster] {
			delete(g.carry.Known, ev.cluster)
			delete(g.carry.Delivered, ev.cluster)
		}
	case eventRemoveSent:
		g.pending--
	case eventRemoveGone:
		g.pending--
		g.handleReport(ClusterReport{Cluster: ev.cluster, Removed: true})
	case eventDelivered:
		g.pending--
		if ev.err != nil {
			delete(g.carry.Delivered, ev.cluster)
			return
		}
		g.carry.Known[ev.cluster] = true
	}
}

// planKey covers everything planning depends on besides the commit and the inventory.
func (g *gitRepoRun) planKey() string {
	s := g.spec.Spec
	return hashOf([]any{s.Repo, s.Paths, s.Targets, s.ClientSecretName})
}

// poll resolves the commit and re-plans when the commit, the inventory or the spec changed.
// A failure keeps the previous plan: nothing is removed because a listing failed.
func (g *gitRepoRun) poll(ctx workflow.Context, resync bool) {
	g.carry.ForceSync = false
	s := g.spec.Spec
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: pollTimeout,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             "ls-remote " + s.Repo,
	})
	var res api.PollResult
	err := workflow.ExecuteActivity(actx, api.ActivityPoll, api.PollInput{
		GitRepo: g.name(), Repo: s.Repo, Branch: s.Branch, Revision: s.Revision, ClientSecretName: s.ClientSecretName,
	}).Get(ctx, &res)
	g.carry.LastPolled = workflow.Now(ctx)
	if err != nil {
		g.carry.Error = "repository: " + errorMessage(err)
		return
	}
	key := g.planKey()
	if g.carry.Plan != nil && res.Commit == g.carry.Commit && res.InventoryGeneration == g.carry.InventoryGeneration &&
		key == g.carry.PlanKey && !resync {
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
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
		Summary:             "plan " + short(res.Commit),
	})
	var plan api.Plan
	err = workflow.ExecuteActivity(pctx, api.ActivityPlan, api.PlanInput{
		GitRepo: g.name(), Repo: s.Repo, Commit: res.Commit, ClientSecretName: s.ClientSecretName,
		Paths: s.Paths, Targets: s.Targets,
	}).Get(ctx, &plan)
	if err != nil {
		g.carry.Error = fmt.Sprintf("commit %s: %s", short(res.Commit), errorMessage(err))
		return
	}
	g.carry.Error = ""
	keepUnloaded(g.carry.Plan, &plan)
	holdKey := hashOf([]any{plan.Commit, plan.InventoryGeneration, key})
	if msg := removalHold(g.name(), g.carry.Plan, &plan); msg != "" && g.carry.Approved != holdKey {
		g.carry.Held = &HeldPlan{Key: holdKey, Commit: plan.Commit, InventoryGeneration: plan.InventoryGeneration, PlanKey: key, Message: msg}
		workflow.GetLogger(ctx).Warn("plan held for approval", "gitRepo", g.name(), "commit", plan.Commit)
		return
	}
	g.carry.Held, g.carry.Approved = nil, ""
	g.carry.Plan, g.carry.Commit, g.carry.InventoryGeneration, g.carry.PlanKey = &plan, plan.Commit, plan.InventoryGeneration, key
	g.removeUntargeted(ctx)
}

// removeUntargeted tells clusters that a successful plan no longer targets to uninstall this GitRepo.
func (g *gitRepoRun) removeUntargeted(ctx workflow.Context) {
	planned := map[string]bool{}
	for _, c := range g.carry.Plan.Clusters {
		planned[c.Name] = true
		delete(g.carry.Removing, c.Name)
	}
	var gone []string // sorted, as DeterministicKeys is
	for _, c := range workflow.DeterministicKeys(g.carry.Known) {
		if !planned[c] && !g.carry.Removing[c] {
			gone = append(gone, c)
		}
	}
	for _, c := range workflow.DeterministicKeys(g.carry.Clusters) {
		if !planned[c] && !g.carry.Known[c] && !g.carry.Removing[c] {
			delete(g.carry.Clusters, c) // nothing runs there for us
		}
	}
	for _, c := range gone {
		g.carry.Removing[c] = true
		delete(g.carry.Delivered, c)
		g.signalRemove(ctx, c)
	}
}

func (g *gitRepoRun) signalRemove(ctx workflow.Context, cluster string) {
	req := RemoveRequest{KeepResources: g.spec.Spec.KeepResources}
	f := workflow.SignalExternalWorkflow(ctx, api.ClusterWorkflowID(g.name(), cluster), "", api.SignalRemove, req)
	g.pending++
	workflow.Go(ctx, func(gctx workflow.Context) {
		kind := eventRemoveSent
		if err := f.Get(gctx, nil); err != nil {
			kind = eventRemoveGone
		}
		g.events.Send(gctx, deliveryEvent{cluster: cluster, kind: kind})
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
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2},
		Summary:             "list cluster workflows",
	})
	var res api.ListClusterWorkflowsResult
	if err := workflow.ExecuteActivity(actx, api.ActivityListClusterWorkflows,
		api.ListClusterWorkflowsInput{GitRepo: g.name()}).Get(ctx, &res); err != nil {
		workflow.GetLogger(ctx).Warn("listing cluster workflows failed", "gitRepo", g.name(), "error", err)
		return
	}
	running := map[string]bool{}
	for _, c := range res.Clusters {
		running[c] = true
	}
	for _, pc := range g.carry.Plan.Clusters {
		d, delivered := g.carry.Delivered[pc.Name]
		// Visibility lags a fresh start by a moment: only trust its absence for deliveries it has had time to see.
		if delivered && d.Acked && !running[pc.Name] {
			workflow.GetLogger(ctx).Info("cluster workflow not running; starting it again", "gitRepo", g.name(), "cluster", pc.Name)
			delete(g.carry.Delivered, pc.Name)
			delete(g.carry.Known, pc.Name)
		}
	}
}

func (g *gitRepoRun) target(pc api.PlannedCluster) api.ClusterTarget {
	s := g.spec.Spec
	t := api.ClusterTarget{
		GitRepo: g.name(), Cluster: pc.Name, ClusterDigest: pc.Digest, Repo: s.Repo, Commit: g.carry.Commit,
		ClientSecretName: s.ClientSecretName,
		Options: api.DeployOptions{
			TargetNamespace: s.TargetNamespace, KeepResources: s.KeepResources,
			CorrectDrift: s.CorrectDrift, ForceSyncGeneration: s.ForceSyncGeneration,
		},
	}
	for _, i := range pc.Bundles {
		t.Bundles = append(t.Bundles, g.carry.Plan.Bundles[i])
	}
	return t
}

// deliver hands changed desired states to cluster workflows, at most window of them in flight at a time.
func (g *gitRepoRun) deliver(ctx workflow.Context) {
	if g.carry.Plan == nil || g.paused {
		return
	}
	now := workflow.Now(ctx)
	inflight := 0
	for _, c := range workflow.DeterministicKeys(g.carry.Delivered) {
		if d := g.carry.Delivered[c]; !d.Acked && now.Sub(d.At) < AckTimeout {
			inflight++
		}
	}
	for _, pc := range g.carry.Plan.Clusters {
		if inflight >= g.window() {
			return
		}
		if pc.Paused || g.carry.Removing[pc.Name] {
			continue
		}
		up := DesiredUpdate{Target: g.target(pc), CheckInterval: g.checkInterval()}
		hash := hashOf(up)
		if g.carry.Delivered[pc.Name].Hash == hash {
			continue
		}
		g.carry.Generation++
		up.Generation = g.carry.Generation
		g.carry.Delivered[pc.Name] = delivery{Hash: hash, Generation: up.Generation, At: now}
		inflight++
		g.pending++
		g.send(ctx, pc.Name, up)
	}
}

// send signals the cluster workflow, starting it as a child when it does not run.
func (g *gitRepoRun) send(ctx workflow.Context, cluster string, up DesiredUpdate) {
	id := api.ClusterWorkflowID(g.name(), cluster)
	known := g.carry.Known[cluster]
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
			StaticSummary:         fmt.Sprintf("GitRepo %s on cluster %s", g.name(), cluster),
			TypedSearchAttributes: temporal.NewSearchAttributes(
				searchGitRepo.ValueSet(g.name()), searchCluster.ValueSet(cluster), searchRepo.ValueSet(g.spec.Spec.Repo)),
		})
		child := workflow.ExecuteChildWorkflow(cctx, ClusterWorkflow, ClusterWorkflowInput{
			Target: up.Target, Generation: up.Generation, Paused: up.Paused, CheckInterval: up.CheckInterval,
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
	for _, c := range workflow.DeterministicKeys(g.carry.Known) {
		if !g.carry.Removing[c] {
			g.carry.Removing[c] = true
			g.signalRemove(ctx, c)
		}
	}
	g.publish(ctx, false)
	deadline := workflow.Now(ctx).Add(30 * time.Minute)
	for len(g.carry.Removing) > 0 && workflow.Now(ctx).Before(deadline) {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(reportCh, func(c workflow.ReceiveChannel, _ bool) {
			var rep ClusterReport
			c.Receive(ctx, &rep)
			if rep.Removed {
				g.handleReport(rep)
			}
		})
		sel.AddReceive(g.wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(g.events, func(c workflow.ReceiveChannel, _ bool) {
			var ev deliveryEvent
			c.Receive(ctx, &ev)
			g.handleEvent(ev)
		})
		sel.AddFuture(workflow.NewTimer(ctx, time.Minute), func(workflow.Future) {})
		sel.Select(ctx)
	}
	if len(g.carry.Removing) > 0 {
		left := workflow.DeterministicKeys(g.carry.Removing)
		return temporal.NewApplicationError("gitrepo "+g.name()+": not removed from clusters "+strings.Join(left, ", "), api.ErrTypeRemoveIncomplete)
	}
	return nil
}

func (g *gitRepoRun) continueAsNew(ctx workflow.Context) error {
	in, trimmed := g.nextRunInput()
	if trimmed {
		workflow.GetLogger(ctx).Warn("carried cluster statuses trimmed to fit the payload limit; they fill in again as clusters report",
			"gitRepo", g.name(), "clusters", len(g.carry.Clusters))
	}
	return workflow.NewContinueAsNewError(ctx, GitRepoWorkflow, in)
}

// nextRunInput is the input of the run that continues this one, its carried state packed.
func (g *gitRepoRun) nextRunInput() (GitRepoInput, bool) {
	in := GitRepoInput{GitRepo: g.spec}
	in.Spec.Paused = g.paused
	if g.opts != (RunOptions{}) {
		opts := g.opts
		in.Flotilla = &opts
	}
	var trimmed bool
	in.CarryZ, trimmed = packCarry(g.carry)
	return in, trimmed
}

// view is the GitRepo status: every planned cluster, reported or not, never a stale Ready.
func (g *gitRepoRun) view() api.GitRepoStatus {
	s := g.spec.Spec
	st := api.GitRepoStatus{
		Name: g.name(), Repo: s.Repo, Branch: s.Branch, Revision: s.Revision, Commit: g.carry.Commit, Paused: g.paused,
		Error: g.carry.Error, LastPolled: g.carry.LastPolled, Clusters: []api.ClusterStatus{}, Bundles: []string{},
		PollingInterval: g.pollingInterval().String(), NextPoll: g.nextPoll,
	}
	if s.DisablePolling {
		st.PollingInterval, st.NextPoll = "disabled", time.Time{}
	}
	if g.carry.Held != nil {
		st.Held = g.carry.Held.Message
	}
	if g.carry.Plan != nil {
		for _, b := range g.carry.Plan.Bundles {
			st.Bundles = append(st.Bundles, b.Name)
		}
		st.Warnings = g.carry.Plan.Warnings
		for _, pc := range g.carry.Plan.Clusters {
			st.Clusters = append(st.Clusters, g.clusterView(pc))
		}
	}
	aggregate(&st)
	return st
}

func (g *gitRepoRun) clusterView(pc api.PlannedCluster) api.ClusterStatus {
	cs, reported := g.carry.Clusters[pc.Name]
	if !reported {
		cs = api.ClusterStatus{Name: pc.Name, State: api.StatePending, Message: "waiting for its cluster workflow", Reachable: true}
		for _, i := range pc.Bundles {
			cs.Bundles = append(cs.Bundles, api.BundleStatus{Name: g.carry.Plan.Bundles[i].Name, State: api.StatePending})
		}
		if g.paused || pc.Paused {
			cs.State, cs.Message = api.StateOutOfSync, "paused"
		}
		return cs
	}
	cs.Bundles = append([]api.BundleStatus(nil), cs.Bundles...)
	d, delivered := g.carry.Delivered[pc.Name]
	switch {
	case (g.paused || pc.Paused) && cs.Commit != g.carry.Commit:
		if !api.Worse(cs.State, api.StateOutOfSync) {
			cs.State = api.StateOutOfSync
		}
		cs.Message = fmt.Sprintf("paused at commit %s; %s is waiting", short(cs.Commit), short(g.carry.Commit))
	case delivered && d.Generation > cs.Generation && cs.Reachable:
		cs.State = api.StateWaitApplied
		cs.Message = fmt.Sprintf("applying commit %s", short(g.carry.Commit))
	case cs.Commit != g.carry.Commit && cs.Reachable && !api.Worse(cs.State, api.StateOutOfSync):
		// Not delivered yet (the rollout window is full): what it runs is not what the GitRepo wants.
		cs.State = api.StateOutOfSync
		cs.Message = fmt.Sprintf("at commit %s; %s waits for the rollout window", short(cs.Commit), short(g.carry.Commit))
	}
	return cs
}

// publish mirrors the status in the memo, search attributes and current details, only when it changed.
// Paced, a change of state, commit or error goes out at once and a rollout's progress at most every
// publishEvery; the loop wakes at publishDue for what is held back.
func (g *gitRepoRun) publish(ctx workflow.Context, paced bool) {
	st := g.view()
	ready := fmt.Sprintf("%d/%d", st.ReadyClusters, st.DesiredReadyClusters)
	hasError := st.Summary.ErrApplied > 0 || st.Error != ""
	fp := strings.Join([]string{st.State, ready, st.Commit, st.Message, fmt.Sprint(hasError)}, "|")
	if fp == g.carry.Published {
		g.publishDue = time.Time{}
		return
	}
	now := workflow.Now(ctx)
	key := strings.Join([]string{st.State, st.Commit, fmt.Sprint(hasError)}, "|")
	urgent := key != g.publishedKey || st.ReadyClusters == st.DesiredReadyClusters
	if paced && !urgent && now.Before(g.publishedAt.Add(publishEvery)) {
		g.publishDue = g.publishedAt.Add(publishEvery)
		return
	}
	g.publishDue, g.publishedAt, g.publishedKey = time.Time{}, now, key
	g.carry.Published = fp
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		searchState.ValueSet(st.State), searchReady.ValueSet(ready), searchCommit.ValueSet(st.Commit),
		searchHasError.ValueSet(hasError))
	_ = workflow.UpsertMemo(ctx, map[string]any{
		"state": st.State, "ready": ready, "commit": st.Commit, "message": st.Message, "summary": st.Summary,
	})
	workflow.SetCurrentDetails(ctx, gitRepoDetails(st))
}

func gitRepoDetails(st api.GitRepoStatus) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s**: %d/%d clusters ready at commit `%s`\n\n", st.State, st.ReadyClusters, st.DesiredReadyClusters, short(st.Commit)))
	if st.Error != "" {
		b.WriteString(fmt.Sprintf("Error: %s\n\n", st.Error))
	}
	if !st.NextPoll.IsZero() {
		b.WriteString(fmt.Sprintf("Polls every %s (next %s UTC; change it with the `%s` update)\n\n",
			st.PollingInterval, st.NextPoll.UTC().Format("15:04:05"), api.UpdateSetPollingInterval))
	}
	b.WriteString("| cluster | state | ready | message |\n|---|---|---|---|\n")
	for i, c := range st.Clusters {
		if i == 50 {
			b.WriteString(fmt.Sprintf("| … | %d more | | |\n", len(st.Clusters)-50))
			break
		}
		msg := strings.ReplaceAll(c.Message, "|", "\\|")
		b.WriteString(fmt.Sprintf("| %s | %s | %d/%d | %s |\n", c.Name, c.State, c.ResourceCounts.Ready, c.ResourceCounts.DesiredReady, msg))
	}
	return b.String()
}
