package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// The rollout updates: approve, pause, resume, abort (api.UpdateRollout*). Each validator refuses, with
// the reason, what would change nothing or act on something other than what the person saw; each handler
// records who did what and when, and wakes the loop to decide again.

type rolloutAction struct {
	name     string
	validate func(workflow.Context, api.RolloutActionInput) error
	apply    func(workflow.Context, api.RolloutActionInput) string
}

func (g *gitRepoRun) setRolloutHandlers(ctx workflow.Context) error {
	for _, a := range []rolloutAction{
		{api.UpdateRolloutApprove, g.validateRolloutApprove, g.rolloutApprove},
		{api.UpdateRolloutPause, g.validateRolloutPause, g.rolloutPause},
		{api.UpdateRolloutResume, g.validateRolloutResume, g.rolloutResume},
		{api.UpdateRolloutAbort, g.validateRolloutAbort, g.rolloutAbort},
	} {
		a := a
		// The validator has accepted the request in this same workflow task: nothing changed since.
		handler := func(ctx workflow.Context, in api.RolloutActionInput) (api.RolloutActionResult, error) {
			msg := a.apply(ctx, in)
			g.wake.SendAsync(true)
			sg, _ := g.rolloutNow(ctx)
			return api.RolloutActionResult{Message: msg, Rollout: sg.status}, nil
		}
		if err := workflow.SetUpdateHandlerWithOptions(ctx, a.name, handler, workflow.UpdateHandlerOptions{Validator: a.validate}); err != nil {
			return err
		}
	}
	return nil
}

// rolloutNow is the rollout as the next decision sees it.
func (g *gitRepoRun) rolloutNow(ctx workflow.Context) (staging, error) {
	p := g.carry.Plan
	if p == nil || p.Rollout == nil {
		return staging{}, fmt.Errorf("gitrepo %q has no rolloutStrategy, so no partitions to steer (flotilla pause stops every change)", g.key)
	}
	return g.r.stage(p, hashesOf(p, g.desiredHash()), workflow.Now(ctx)), nil
}

// steerable is the rollout as the next decision sees it, when the GitRepo has one and the action is on
// the commit being rolled out.
func (g *gitRepoRun) steerable(ctx workflow.Context, in api.RolloutActionInput) (staging, error) {
	sg, err := g.rolloutNow(ctx)
	if err != nil {
		return staging{}, err
	}
	return sg, g.sameCommit(in)
}

// mark records who acts, now, on the planned commit.
func (g *gitRepoRun) mark(ctx workflow.Context, in api.RolloutActionInput) api.RolloutMark {
	by := in.By
	if by == "" {
		by = "someone who did not say (no by)"
	}
	return api.RolloutMark{By: by, At: workflow.Now(ctx), Commit: g.carry.Plan.Commit, Reason: in.Reason}
}

// sameCommit refuses an action on a commit other than the one being rolled out.
func (g *gitRepoRun) sameCommit(in api.RolloutActionInput) error {
	if c := g.carry.Plan.Commit; in.Commit != "" && !strings.HasPrefix(c, in.Commit) {
		return fmt.Errorf("gitrepo %q rolls out commit %s, not %s", g.key, api.ShortCommit(c), in.Commit)
	}
	return nil
}

func (g *gitRepoRun) validateRolloutApprove(ctx workflow.Context, in api.RolloutActionInput) error {
	sg, err := g.steerable(ctx, in)
	if err != nil {
		return err
	}
	st := sg.status
	if st.Aborted != nil {
		return fmt.Errorf("gitrepo %q: the rollout of commit %s was aborted by %s; a new commit starts a new one", g.key, api.ShortCommit(st.Aborted.Commit), st.Aborted.By)
	}
	waiting := ""
	for _, p := range st.Partitions {
		if p.State == api.PartitionAwaitingApproval {
			waiting = p.Name
		}
	}
	switch {
	case waiting == "":
		return fmt.Errorf("gitrepo %q: no partition waits for approval: %s", g.key, st.Message)
	case in.Partition != "" && in.Partition != waiting:
		return fmt.Errorf("gitrepo %q: partition %q does not wait for approval; %q does", g.key, in.Partition, waiting)
	}
	return nil
}

func (g *gitRepoRun) rolloutApprove(ctx workflow.Context, in api.RolloutActionInput) string {
	sg, _ := g.rolloutNow(ctx)
	partition := sg.status.Gate
	m := g.mark(ctx, in)
	gates := g.r.gatesFor(m.Commit)
	if gates.Approved == nil {
		gates.Approved = map[string]api.RolloutMark{}
	}
	gates.Approved[partition] = m
	gates.record(api.RolloutEvent{RolloutMark: m, Action: "approve", Partition: partition})
	return fmt.Sprintf("approved: commit %s goes on past partition %q", api.ShortCommit(m.Commit), partition)
}

func (g *gitRepoRun) validateRolloutPause(ctx workflow.Context, in api.RolloutActionInput) error {
	if _, err := g.steerable(ctx, in); err != nil {
		return err
	}
	if p := g.r.Gates; p != nil && p.Paused != nil {
		return fmt.Errorf("gitrepo %q: the rollout is already paused, by %s since %s", g.key, p.Paused.By, clock(p.Paused.At))
	}
	return nil
}

func (g *gitRepoRun) rolloutPause(ctx workflow.Context, in api.RolloutActionInput) string {
	m := g.mark(ctx, in)
	gates := g.r.gatesFor(m.Commit)
	gates.Paused = &m
	gates.record(api.RolloutEvent{RolloutMark: m, Action: "pause"})
	return fmt.Sprintf("paused: no cluster is handed commit %s or any other change until the rollout is resumed", api.ShortCommit(m.Commit))
}

func (g *gitRepoRun) validateRolloutResume(ctx workflow.Context, in api.RolloutActionInput) error {
	sg, err := g.steerable(ctx, in)
	if err != nil {
		return err
	}
	if sg.status.Paused == nil && sg.status.Aborted == nil {
		return fmt.Errorf("gitrepo %q: the rollout is neither paused nor aborted: %s", g.key, sg.status.Message)
	}
	return nil
}

func (g *gitRepoRun) rolloutResume(ctx workflow.Context, in api.RolloutActionInput) string {
	m := g.mark(ctx, in)
	gates := g.r.gatesFor(m.Commit)
	gates.Paused, gates.Aborted = nil, nil
	gates.record(api.RolloutEvent{RolloutMark: m, Action: "resume"})
	return fmt.Sprintf("resumed: commit %s goes on", api.ShortCommit(m.Commit))
}

func (g *gitRepoRun) validateRolloutAbort(ctx workflow.Context, in api.RolloutActionInput) error {
	sg, err := g.steerable(ctx, in)
	if err != nil {
		return err
	}
	st := sg.status
	if st.Aborted != nil {
		return fmt.Errorf("gitrepo %q: the rollout of commit %s is already aborted, by %s", g.key, api.ShortCommit(st.Aborted.Commit), st.Aborted.By)
	}
	for _, p := range st.Partitions {
		if p.State != api.PartitionDone {
			return nil
		}
	}
	return fmt.Errorf("gitrepo %q: commit %s is rolled out through every partition: nothing to abort", g.key, api.ShortCommit(g.carry.Plan.Commit))
}

func (g *gitRepoRun) rolloutAbort(ctx workflow.Context, in api.RolloutActionInput) string {
	m := g.mark(ctx, in)
	gates := g.r.gatesFor(m.Commit)
	gates.Aborted = &m
	gates.record(api.RolloutEvent{RolloutMark: m, Action: "abort"})
	return fmt.Sprintf("aborted: clusters that run commit %s keep it, the others keep what they run, until a new commit", api.ShortCommit(m.Commit))
}
