package workflows

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/fleet"
)

// Sync windows (fleet.SyncWindow, ADR 32): while a cluster's windows are closed, the GitRepo hands it
// nothing new, and its cluster workflow, which gets the windows with its desired state, applies nothing,
// drift correction included unless a window allows it. `flotilla sync --override-window` lets the
// planned commit through for an emergency, recorded.

// windowsOf are the GitRepo's sync windows that apply to a planned cluster.
func (g *gitRepoRun) windowsOf(pc api.PlannedCluster) []fleet.SyncWindow {
	var out []fleet.SyncWindow
	for i, w := range g.spec.Spec.SyncWindows {
		if w.AllClusters() || slices.Contains(pc.Windows, i) {
			out = append(out, w)
		}
	}
	return out
}

// windowOverridden says `flotilla sync --override-window` holds for the planned commit.
func (g *gitRepoRun) windowOverridden() bool {
	o := g.carry.WindowOverride
	return o != nil && g.carry.Plan != nil && o.Commit == g.carry.Plan.Commit
}

// closedWindows are the planned clusters whose windows are closed at now, with what each waits for, and
// the next moment any planned cluster's windows open or close.
func (g *gitRepoRun) closedWindows(now time.Time) (map[string]string, time.Time) {
	var next time.Time
	if len(g.spec.Spec.SyncWindows) == 0 || g.carry.Plan == nil {
		return nil, next
	}
	closed := map[string]string{}
	// Clusters chosen by the same windows share one answer: thousands of clusters, a few window sets.
	bySet := map[string]fleet.WindowState{}
	for _, pc := range g.carry.Plan.Clusters {
		set := fmt.Sprint(pc.Windows)
		st, ok := bySet[set]
		if !ok {
			st = fleet.WindowsAt(g.windowsOf(pc), now)
			bySet[set] = st
		}
		if !st.Change.IsZero() && (next.IsZero() || st.Change.Before(next)) {
			next = st.Change
		}
		if !st.Open && !g.windowOverridden() {
			closed[pc.Name] = "waits for its sync window" + opensAt(st.Change)
		}
	}
	return closed, next
}

func opensAt(t time.Time) string {
	if t.IsZero() {
		return " (it does not open within a year)"
	}
	return fmt.Sprintf(" (opens at %s)", t.UTC().Format("2006-01-02 "+time.TimeOnly+" UTC"))
}

// heldByWindows are the clusters r holds for their windows and has not handed the desired state: those
// wait, and status says for what.
func (g *gitRepoRun) heldByWindows(r *rollout) map[string]string {
	held := map[string]string{}
	hash := g.desiredHash()
	for _, pc := range g.carry.Plan.Clusters {
		if !r.heldByWindow(pc.Name) {
			continue
		}
		if e := r.Clusters[pc.Name]; e != nil && e.Delivered != nil && e.Delivered.Hash == hash(pc) {
			continue
		}
		held[pc.Name] = r.closed[pc.Name]
	}
	return held
}

// windowView says, for status, where the GitRepo's windows stand.
func (g *gitRepoRun) windowView(closed map[string]string, next time.Time) string {
	if len(g.spec.Spec.SyncWindows) == 0 || g.carry.Plan == nil {
		return ""
	}
	when := ""
	if !next.IsZero() {
		when = fmt.Sprintf("; the next window opens or closes at %s", next.UTC().Format("2006-01-02 "+time.TimeOnly+" UTC"))
	}
	switch {
	case g.windowOverridden():
		o := g.carry.WindowOverride
		return fmt.Sprintf("overridden for commit %s by %s at %s%s", api.ShortCommit(o.Commit), o.By, clock(o.At), because(o.Reason))
	case len(closed) == 0:
		return "open" + when
	}
	return fmt.Sprintf("closed on %d of %d clusters%s", len(closed), len(g.carry.Plan.Clusters), when)
}

func (g *gitRepoRun) validateOverrideWindow(_ workflow.Context, in api.RolloutActionInput) error {
	switch {
	case len(g.spec.Spec.SyncWindows) == 0:
		return fmt.Errorf("gitrepo %q has no sync windows to override", g.key)
	case g.carry.Plan == nil:
		return fmt.Errorf("gitrepo %q has not planned a commit yet", g.key)
	case g.windowOverridden():
		return fmt.Errorf("gitrepo %q: the windows are already overridden for commit %s, by %s", g.key, api.ShortCommit(g.carry.Plan.Commit), g.carry.WindowOverride.By)
	}
	return g.sameCommit(in)
}

// overrideWindow lets the planned commit through every window, until a new commit is planned. Its
// validator has accepted the request.
func (g *gitRepoRun) overrideWindow(ctx workflow.Context, in api.RolloutActionInput) (api.RolloutActionResult, error) {
	m := g.mark(ctx, in)
	g.carry.WindowOverride = &m
	g.r.gatesFor(m.Commit).record(api.RolloutEvent{RolloutMark: m, Action: "override window"})
	g.wake.SendAsync(true)
	return api.RolloutActionResult{Message: fmt.Sprintf("windows overridden: commit %s goes to every cluster now", api.ShortCommit(m.Commit))}, nil
}
