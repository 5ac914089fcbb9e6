package workflows

import (
	"fmt"
	"strings"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
	"go.temporal.io/sdk/workflow"
)

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

func (g *gitRepoRun) specView() fleet.GitRepo {
	s := g.spec
	s.Spec.Paused = g.paused
	return s
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

func (g *gitRepoRun) addSignalHandlers(ctx workflow.Context, sel workflow.Selector, syncCh, specCh, pauseCh, resumeCh, deleteCh, reportCh workflow.ReceiveChannel) {
	sel.AddReceive(syncCh, func(c workflow.ReceiveChannel, _ bool) {
		var req api.SyncRequest
		c.Receive(ctx, &req)
		// An inventory change this GitRepo has read already (it started after it) is nothing new.
		if req.InventoryGeneration == 0 || req.InventoryGeneration > g.carry.InventorySeen {
			g.carry.ForceSync = true
		}
	})
	sel.AddReceive(specCh, func(c workflow.ReceiveChannel, _ bool) {
		var spec fleet.GitRepo
		c.Receive(ctx, &spec)
		if spec.Metadata.Name == "" {
			spec.Metadata.Name = g.name()
		}
		if err := fleet.ValidateGitRepo(spec); err != nil || spec.Metadata.Name != g.name() {
			workflow.GetLogger(ctx).Warn("spec update refused", "gitRepo", g.key.String(), "error", err)
			return
		}
		// A spec of another workspace is another GitRepo's. fleet-default runs take any namespace, as
		// every run did before workspaces (their recorded specs may name one).
		if err := validateWorkspace(spec, g.key.PayloadNamespace()); err != nil {
			workflow.GetLogger(ctx).Warn("spec update refused", "gitRepo", g.key.String(), "error", err)
			return
		}
		repoChanged := spec.Spec.Repo != g.spec.Spec.Repo
		g.spec = withWorkspace(spec, g.key)
		g.paused = spec.Spec.Paused
		g.carry.ForceSync = true
		if repoChanged && workflow.GetVersion(ctx, repoSearchAttributeFollowsSpec, workflow.DefaultVersion, 1) == 1 {
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
		var rep api.ClusterReport
		c.Receive(ctx, &rep)
		g.r.onReport(rep)
	})
}

func (g *gitRepoRun) handleEvent(ctx workflow.Context, ev deliveryEvent) {
	switch ev.kind {
	case eventEnded:
		g.r.onEnded(ev.cluster)
	case eventRemoveSent:
		g.pending--
	case eventRemoveGone:
		g.pending--
		g.r.onRemoveGone(ev.cluster)
	case eventDelivered:
		g.pending--
		g.r.onDelivered(ev.cluster, ev.err)
		if l, ok := g.leavingCluster(ev.cluster); ok {
			// Started before the cluster began leaving: it is removed as soon as it runs.
			g.removeLeaving(ctx, []api.LeavingCluster{l})
		}
	}
}

func (g *gitRepoRun) validateApproval(_ workflow.Context, in api.ApproveRemovalInput) error {
	h := g.carry.Held
	if h == nil {
		return fmt.Errorf("gitrepo %q: no plan is held for approval", g.key)
	}
	if in.Commit != "" && !strings.HasPrefix(h.Commit, in.Commit) {
		return fmt.Errorf("gitrepo %q: the held plan is for commit %s, not %s", g.key, api.ShortCommit(h.Commit), in.Commit)
	}
	return nil
}

// approveRemoval lets the held plan through at the next pass.
func (g *gitRepoRun) approveRemoval(_ workflow.Context, _ api.ApproveRemovalInput) (api.ApproveRemovalResult, error) {
	h := g.carry.Held
	if h == nil {
		return api.ApproveRemovalResult{}, fmt.Errorf("gitrepo %q: no plan is held for approval", g.key)
	}
	g.carry.Approved = h.Key
	g.carry.ForceSync = true
	g.wake.SendAsync(true)
	return api.ApproveRemovalResult{Commit: h.Commit, Message: h.Message}, nil
}
