package workflows

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
)

// What people and time decided about a GitRepo's rollout: approvals of partition gates, soak times, a
// pause, an abort. Plain Go like the rest of the rollout; the update handlers (gitrepo_rollout.go) call it.

// rolloutEventsKept bounds the events a GitRepo carries.
const rolloutEventsKept = 50

// rolloutGates is carried in the rollout. Approved and ReadySince hold for Commit only: a new commit is a
// new rollout, and its gates start closed.
type rolloutGates struct {
	Commit     string                     `json:"commit,omitempty"`
	Approved   map[string]api.RolloutMark `json:"approved,omitempty"`
	ReadySince map[string]time.Time       `json:"readySince,omitempty"`
	Paused     *api.RolloutMark           `json:"paused,omitempty"`
	// Aborted holds while its commit is the planned one.
	Aborted *api.RolloutMark   `json:"aborted,omitempty"`
	Events  []api.RolloutEvent `json:"events,omitempty"`
}

// gatesFor returns the gates of commit, opening a new rollout (gates closed) when the commit changed.
func (r *rollout) gatesFor(commit string) *rolloutGates {
	if r.Gates == nil {
		r.Gates = &rolloutGates{}
	}
	g := r.Gates
	if g.Commit != commit {
		g.Commit, g.Approved, g.ReadySince = commit, nil, nil
		if g.Aborted != nil && g.Aborted.Commit != commit {
			g.Aborted = nil
		}
	}
	return g
}

// record keeps an event, dropping the oldest beyond rolloutEventsKept.
func (g *rolloutGates) record(ev api.RolloutEvent) {
	g.Events = append(g.Events, ev)
	if n := len(g.Events) - rolloutEventsKept; n > 0 {
		g.Events = append([]api.RolloutEvent(nil), g.Events[n:]...)
	}
}

// approval is who approved the partition's gate for commit, nil if no one did.
func (r *rollout) approval(commit, partition string) *api.RolloutMark {
	if r.Gates == nil || r.Gates.Commit != commit {
		return nil
	}
	if m, ok := r.Gates.Approved[partition]; ok {
		return &m
	}
	return nil
}

// stopped says why nothing is handed over, a pause or an abort of commit, and shows it in st.
func (r *rollout) stopped(commit string, st *api.RolloutStatus) string {
	g := r.Gates
	if g == nil {
		return ""
	}
	if a := g.Aborted; a != nil && a.Commit == commit {
		st.Aborted = a
		return fmt.Sprintf("the rollout of commit %s was aborted by %s at %s%s; a new commit starts a new one",
			api.ShortCommit(commit), a.By, clock(a.At), because(a.Reason))
	}
	if p := g.Paused; p != nil {
		st.Paused = p
		return fmt.Sprintf("the rollout is paused by %s since %s%s (flotilla rollout resume)", p.By, clock(p.At), because(p.Reason))
	}
	return ""
}

// gate decides whether a done partition lets the rollout on: it returns why the partitions after it wait,
// or "" when its gate is open, and marks the partition Soaking or AwaitingApproval.
func (r *rollout) gate(commit string, part api.PartitionPlan, ps *api.PartitionStatus, st *api.RolloutStatus, out *staging, now time.Time) string {
	if part.Soak > 0 {
		out.soaked = append(out.soaked, part.Name)
		since := now
		if r.Gates != nil && r.Gates.Commit == commit {
			if t, ok := r.Gates.ReadySince[part.Name]; ok {
				since = t
			}
		}
		if until := since.Add(part.Soak); now.Before(until) {
			ps.State, ps.SoakUntil, st.Gate = api.PartitionSoaking, until, part.Name
			if out.soakDue.IsZero() || until.Before(out.soakDue) {
				out.soakDue = until
			}
			return fmt.Sprintf("waits for partition %q to soak until %s", part.Name, clock(until))
		}
	}
	if part.Approval && ps.ApprovedBy == nil {
		ps.State, st.Gate = api.PartitionAwaitingApproval, part.Name
		return fmt.Sprintf("waits for approval of partition %q", part.Name)
	}
	return ""
}

// observeSoaks records, for commit, since when each soaking partition has had all its clusters Ready, and
// forgets a partition that no longer has. It touches nothing for a plan without soak times, so runs
// without them carry what they carried before.
func (r *rollout) observeSoaks(plan *api.Plan, sg staging, now time.Time) {
	soaking := false
	for _, p := range plan.Rollout.Partitions {
		soaking = soaking || p.Soak > 0
	}
	if !soaking {
		return
	}
	g := r.gatesFor(plan.Commit)
	done := map[string]bool{}
	for _, name := range sg.soaked {
		done[name] = true
		if _, ok := g.ReadySince[name]; !ok {
			if g.ReadySince == nil {
				g.ReadySince = map[string]time.Time{}
			}
			g.ReadySince[name] = now
		}
	}
	for _, name := range sortedKeys(g.ReadySince) {
		if !done[name] {
			delete(g.ReadySince, name)
		}
	}
}

func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly + " UTC") }

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
