package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"go.temporal.io/sdk/workflow"
)

// view is the GitRepo status: every planned cluster, reported or not, never a stale Ready.
func (g *gitRepoRun) view(now time.Time) api.GitRepoStatus {
	s := g.spec.Spec
	st := api.GitRepoStatus{
		Name: g.name(), Repo: s.Repo, Branch: s.Branch, Revision: s.Revision, Commit: g.carry.Commit, Paused: g.paused,
		Error: g.carry.Error, LastPolled: g.carry.LastPolled, Clusters: []api.ClusterStatus{}, Bundles: []string{},
		PollingInterval: g.pollingInterval().String(), NextPoll: g.nextPoll, Namespace: g.key.Namespace,
		InventoryGeneration: g.carry.InventorySeen,
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
		closed, next := g.closedWindows(now)
		st.SyncWindow = g.windowView(closed, next)
		// The view decides on a copy of the rollout: a query changes nothing of the workflow.
		r := *g.r
		r.ungated, r.closed = g.pinned(), closed
		r.markWindowOnly(g.carry.Plan, g.desired)
		held := g.heldByWindows(&r)
		st.Pins = g.pinsView()
		if r.Gates != nil {
			st.Events = r.Gates.Events
		}
		if g.carry.Plan.Rollout != nil {
			sg := r.stage(g.carry.Plan, hashesOf(g.carry.Plan, g.desiredHash()), now)
			held, st.Rollout = sg.held, &sg.status
		}
		// Sized once: at 10,000 clusters, growing it by appends was half the cost of a view.
		st.Clusters = make([]api.ClusterStatus, 0, len(g.carry.Plan.Clusters))
		for _, pc := range g.carry.Plan.Clusters {
			st.Clusters = append(st.Clusters, r.clusterView(g.carry.Plan, pc, g.carry.Commit, g.paused, held))
		}
	}
	for _, name := range g.r.removing() {
		st.Removing = append(st.Removing, g.r.removalView(name))
	}
	aggregate(&st)
	return st
}

// publish mirrors the status in the memo, search attributes and current details, only when it changed.
// Paced, a change of state, commit or error goes out at once and a rollout's progress at most every
// publishEvery; the loop wakes at publishDue for what is held back.
func (g *gitRepoRun) publish(ctx workflow.Context, paced bool) {
	st := g.view(workflow.Now(ctx))
	ready := fmt.Sprintf("%d/%d", st.ReadyClusters, st.DesiredReadyClusters)
	hasError := st.Summary.ErrApplied > 0 || st.Error != ""
	fp := strings.Join([]string{st.State, ready, st.Commit, st.Message, fmt.Sprint(hasError), rolloutMessage(st)}, "|")
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
	memo := map[string]any{"state": st.State, "ready": ready, "commit": st.Commit, "message": st.Message, "summary": st.Summary}
	if st.Rollout != nil {
		memo["rollout"] = st.Rollout.Message
	}
	_ = workflow.UpsertMemo(ctx, memo)
	workflow.SetCurrentDetails(ctx, gitRepoDetails(st))
}

func gitRepoDetails(st api.GitRepoStatus) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("**%s**: %d/%d clusters ready at commit `%s`\n\n", st.State, st.ReadyClusters, st.DesiredReadyClusters, api.ShortCommit(st.Commit)))
	if st.Error != "" {
		b.WriteString(fmt.Sprintf("Error: %s\n\n", st.Error))
	}
	if !st.NextPoll.IsZero() {
		b.WriteString(fmt.Sprintf("Polls every %s (next %s UTC; change it with the `%s` update)\n\n",
			st.PollingInterval, st.NextPoll.UTC().Format("15:04:05"), api.UpdateSetPollingInterval))
	}
	for _, p := range st.Pins {
		b.WriteString(fmt.Sprintf("Pinned by a rollback: commit `%s` on %s, by %s (`flotilla rollback --clear`)\n\n",
			api.ShortCommit(p.Commit), pinnedWhere(p), p.By))
	}
	if r := st.Rollout; r != nil {
		b.WriteString(fmt.Sprintf("Rollout: %s\n\n| partition | state | unavailable | clusters |\n|---|---|---|---|\n", r.Message))
		for _, p := range r.Partitions {
			b.WriteString(fmt.Sprintf("| %s | %s | %d/%d (%d allowed) | %s |\n", p.Name, p.State, p.Unavailable, p.Count, p.MaxUnavailable, clusterList(p.Clusters)))
		}
		b.WriteString("\n")
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

func rolloutMessage(st api.GitRepoStatus) string {
	if st.Rollout == nil {
		return ""
	}
	return st.Rollout.Message
}

// clusterList names up to ten clusters.
func clusterList(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

func pinnedWhere(p api.Pin) string {
	if len(p.Clusters) == 0 {
		return "every cluster"
	}
	return clusterList(p.Clusters)
}
