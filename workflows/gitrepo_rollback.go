package workflows

import (
	"fmt"
	"regexp"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// Rollback without git (api.UpdateRollback): a pin holds clusters on an earlier commit, planned as that
// commit was, until cleared. The cluster workflows get the pinned desired state like any other, so drift
// correction restores what is pinned; a pin is handed over at once, past partitions and gates, since it is
// what a person does when the new commit hurts.

// pin is one rollback in force, with the plan of its commit (only its bundles and pinned clusters).
type pin struct {
	api.Pin
	Plan *api.Plan `json:"plan"`
}

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// pinFor is the pin holding a cluster, the latest one that names it; nil when none does.
func (g *gitRepoRun) pinFor(cluster string) *pin {
	for i := len(g.carry.Pins) - 1; i >= 0; i-- {
		p := &g.carry.Pins[i]
		if len(p.Clusters) == 0 || slices.Contains(p.Clusters, cluster) {
			if plannedIn(p.Plan, cluster) != nil {
				return p
			}
		}
	}
	return nil
}

func plannedIn(plan *api.Plan, cluster string) *api.PlannedCluster {
	for i := range plan.Clusters {
		if plan.Clusters[i].Name == cluster {
			return &plan.Clusters[i]
		}
	}
	return nil
}

// pinned are the planned clusters a pin holds, by name, with why they show OutOfSync.
func (g *gitRepoRun) pinned() map[string]string {
	if len(g.carry.Pins) == 0 || g.carry.Plan == nil {
		return nil
	}
	out := map[string]string{}
	for _, pc := range g.carry.Plan.Clusters {
		if p := g.pinFor(pc.Name); p != nil {
			out[pc.Name] = fmt.Sprintf("pinned at commit %s by %s at %s%s (flotilla rollback --clear)", api.ShortCommit(p.Commit), p.By, clock(p.At), because(p.Reason))
		}
	}
	return out
}

func (g *gitRepoRun) pinsView() []api.Pin {
	var out []api.Pin
	for _, p := range g.carry.Pins {
		out = append(out, p.Pin)
	}
	return out
}

func (g *gitRepoRun) validateRollback(_ workflow.Context, in api.RollbackInput) error {
	if g.spec.IsHelmOp() {
		return fmt.Errorf("helmop %q has no earlier commits to go back to: set spec.helm.version to the chart version to run", g.key)
	}
	if g.carry.Plan == nil {
		return fmt.Errorf("gitrepo %q has not planned a commit yet", g.key)
	}
	if in.Cluster != "" && plannedIn(g.carry.Plan, in.Cluster) == nil {
		return fmt.Errorf("gitrepo %q does not deploy to cluster %q", g.key, in.Cluster)
	}
	if in.Clear {
		if in.Commit != "" {
			return fmt.Errorf("gitrepo %q: a rollback clears its pins or pins a commit, not both", g.key)
		}
		if in.Cluster != "" && g.pinFor(in.Cluster) == nil || in.Cluster == "" && len(g.carry.Pins) == 0 {
			return fmt.Errorf("gitrepo %q: nothing is pinned%s", g.key, onCluster(in.Cluster))
		}
		return nil
	}
	switch {
	case !fullCommit.MatchString(in.Commit):
		return fmt.Errorf("gitrepo %q: %q is not a full commit (40 hex digits; flotilla rollback --to resolves a prefix)", g.key, in.Commit)
	case in.Commit == g.carry.Commit && len(g.carry.Pins) == 0:
		return fmt.Errorf("gitrepo %q is at commit %s already: nothing to roll back", g.key, api.ShortCommit(in.Commit))
	}
	return nil
}

// rollback pins (after planning the commit) or clears, and wakes the loop to hand the change over. Its
// validator has accepted the request.
func (g *gitRepoRun) rollback(ctx workflow.Context, in api.RollbackInput) (api.RollbackResult, error) {
	by := in.By
	if by == "" {
		by = "someone who did not say (no by)"
	}
	mark := api.RolloutMark{By: by, At: workflow.Now(ctx), Commit: in.Commit, Reason: in.Reason}
	var msg string
	if in.Clear {
		g.unpin(in.Cluster)
		msg = fmt.Sprintf("cleared: %s back to commit %s", clustersOf(in.Cluster), api.ShortCommit(g.carry.Commit))
		mark.Commit = g.carry.Commit
	} else {
		plan, err := g.planCommit(ctx, in.Commit)
		if err != nil {
			return api.RollbackResult{}, fmt.Errorf("gitrepo %q: planning commit %s: %s", g.key, api.ShortCommit(in.Commit), errorMessage(err))
		}
		if in.Cluster != "" && plannedIn(&plan, in.Cluster) == nil {
			return api.RollbackResult{}, fmt.Errorf("gitrepo %q: commit %s does not deploy to cluster %q; pinning it would uninstall it there",
				g.key, api.ShortCommit(in.Commit), in.Cluster)
		}
		g.unpin(in.Cluster)
		p := pin{Pin: api.Pin{RolloutMark: mark}, Plan: &api.Plan{Commit: plan.Commit, Bundles: plan.Bundles}}
		for _, pc := range plan.Clusters {
			if in.Cluster == "" || pc.Name == in.Cluster {
				p.Plan.Clusters = append(p.Plan.Clusters, pc)
			}
		}
		if in.Cluster != "" {
			p.Clusters = []string{in.Cluster}
		}
		g.carry.Pins = append(g.carry.Pins, p)
		msg = fmt.Sprintf("pinned: %s on commit %s until 'flotilla rollback --clear'", clustersOf(in.Cluster), api.ShortCommit(in.Commit))
	}
	action := "rollback"
	if in.Clear {
		action = "clear rollback"
	}
	g.r.gatesFor(g.carry.Plan.Commit).record(api.RolloutEvent{RolloutMark: mark, Action: action, Cluster: in.Cluster})
	g.wake.SendAsync(true)
	return api.RollbackResult{Message: msg, Pins: g.pinsView()}, nil
}

// unpin takes a cluster (empty: every cluster) out of every pin; a pin left holding nothing goes.
func (g *gitRepoRun) unpin(cluster string) {
	if cluster == "" {
		g.carry.Pins = nil
		return
	}
	var kept []pin
	for _, p := range g.carry.Pins {
		if len(p.Clusters) == 0 {
			for _, pc := range p.Plan.Clusters {
				if pc.Name != cluster {
					p.Clusters = append(p.Clusters, pc.Name)
				}
			}
		} else {
			p.Clusters = slices.DeleteFunc(slices.Clone(p.Clusters), func(c string) bool { return c == cluster })
		}
		if len(p.Clusters) > 0 {
			kept = append(kept, p)
		}
	}
	g.carry.Pins = kept
}

// planCommit plans an earlier commit as a poll plans the newest.
func (g *gitRepoRun) planCommit(ctx workflow.Context, commit string) (api.Plan, error) {
	s := g.spec.Spec
	pctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: planTimeout, HeartbeatTimeout: heartbeat, RetryPolicy: retries(3),
		Summary: "plan " + api.ShortCommit(commit) + " for a rollback",
	})
	var plan api.Plan
	err := workflow.ExecuteActivity(pctx, api.ActivityPlan, api.PlanInput{
		GitRepo: g.name(), Repo: s.Repo, Commit: commit, ClientSecretName: s.ClientSecretName,
		Paths: s.Paths, Targets: s.Targets, Namespace: g.key.PayloadNamespace(),
		CABundle: s.CABundle, InsecureSkipTLSVerify: s.InsecureSkipTLSVerify, ChartAccess: api.ChartAccessOf(s), HelmOp: s.HelmOp,
		SyncWindows: s.SyncWindows, Pack: true,
	}).Get(ctx, &plan)
	if err == nil {
		err = unpackPlan(&plan)
	}
	return plan, err
}

func onCluster(cluster string) string {
	if cluster == "" {
		return ""
	}
	return fmt.Sprintf(" on cluster %q", cluster)
}

func clustersOf(cluster string) string {
	if cluster == "" {
		return "every cluster"
	}
	return fmt.Sprintf("cluster %q", cluster)
}
