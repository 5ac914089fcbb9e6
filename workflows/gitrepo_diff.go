package workflows

import (
	"fmt"
	"sort"

	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
)

// What the next apply would change (api.UpdateDiff): the GitRepo workflow says what each cluster gets next
// (its pinned commit if a rollback holds it), or plans another commit as a rollback to it would, and
// `flotilla diff` has DiffWorkflow compare that with each cluster. The update changes nothing here.

func (g *gitRepoRun) validateDiff(_ workflow.Context, in api.DiffInput) error {
	switch {
	case g.carry.Plan == nil:
		return fmt.Errorf("gitrepo %q has not planned a commit yet", g.key)
	case in.Commit != "" && g.spec.IsHelmOp():
		return fmt.Errorf("helmop %q has no commits: diff what it deploys next without --commit", g.key)
	case in.Commit != "" && !fullCommit.MatchString(in.Commit):
		return fmt.Errorf("gitrepo %q: %q is not a full commit (40 hex digits; flotilla diff --commit resolves a prefix)", g.key, in.Commit)
	case in.Commit == "" && in.Cluster != "" && plannedIn(g.carry.Plan, in.Cluster) == nil:
		return fmt.Errorf("gitrepo %q does not deploy to cluster %q", g.key, in.Cluster)
	}
	return nil
}

// diff returns one page of targets, in cluster name order. Its validator has accepted the request.
func (g *gitRepoRun) diff(ctx workflow.Context, in api.DiffInput) (api.DiffTargets, error) {
	out := api.DiffTargets{Commit: g.carry.Commit, TaskQueue: workflow.GetInfo(ctx).TaskQueueName, Paused: g.paused}
	plan, target := g.carry.Plan, func(pc api.PlannedCluster) api.DiffTarget {
		up := g.desired(pc)
		return api.DiffTarget{Target: up.Target, Generation: up.Generation}
	}
	if in.Commit != "" && in.Commit != g.carry.Commit {
		p, err := g.diffPlanOf(ctx, in.Commit)
		if err != nil {
			return api.DiffTargets{}, fmt.Errorf("gitrepo %q: planning commit %s: %s", g.key, api.ShortCommit(in.Commit), errorMessage(err))
		}
		out.Commit, plan = in.Commit, p
		target = func(pc api.PlannedCluster) api.DiffTarget {
			return api.DiffTarget{Target: api.TargetOf(g.key, g.spec.Spec, in.Commit, pc, p.Bundles)}
		}
	}
	clusters := append([]api.PlannedCluster(nil), plan.Clusters...)
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Name < clusters[j].Name })
	for _, pc := range clusters {
		if in.Cluster != "" && pc.Name != in.Cluster || in.Cluster == "" && pc.Name <= in.After {
			continue
		}
		if len(out.Targets) == api.DiffPageSize {
			out.Next = out.Targets[len(out.Targets)-1].Target.Cluster
			break
		}
		out.Targets = append(out.Targets, target(pc))
	}
	if in.Cluster != "" && len(out.Targets) == 0 {
		return api.DiffTargets{}, fmt.Errorf("gitrepo %q: commit %s does not deploy to cluster %q", g.key, api.ShortCommit(out.Commit), in.Cluster)
	}
	return out, nil
}

// diffTarget answers api.QueryDiffTarget from the last diff of another commit.
func (g *gitRepoRun) diffTarget(in api.DiffTargetInput) (api.ClusterTarget, error) {
	if g.diffPlan != nil {
		if pc := plannedIn(g.diffPlan, in.Cluster); pc != nil {
			return api.TargetOf(g.key, g.spec.Spec, g.diffPlan.Commit, *pc, g.diffPlan.Bundles), nil
		}
	}
	return api.ClusterTarget{}, fmt.Errorf("gitrepo %q has diffed no other commit on cluster %q in this run", g.key, in.Cluster)
}

// diffPlanOf plans commit once for a run of diff pages: the plan stays in memory (every replay makes it
// again from the same recorded activity result), never in the carried state.
func (g *gitRepoRun) diffPlanOf(ctx workflow.Context, commit string) (*api.Plan, error) {
	if g.diffPlan != nil && g.diffPlan.Commit == commit {
		return g.diffPlan, nil
	}
	plan, err := g.planCommit(ctx, commit)
	if err != nil {
		return nil, err
	}
	g.diffPlan = &plan
	g.wake.SendAsync(true) // a run waiting to continue as new waits for this handler
	return g.diffPlan, nil
}
