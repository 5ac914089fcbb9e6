package activities

import (
	"go.temporal.io/sdk/activity"

	"github.com/flotilla-gitops/flotilla/api"
)

// Registry is where activities are registered: a worker, or a workflow test environment.
type Registry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers every activity under its name in api, the name workflows call it by and recorded
// histories hold, whatever its method is called.
func (a *Activities) Register(r Registry) {
	for _, act := range []struct {
		name string
		fn   any
	}{
		{api.ActivityPoll, a.Poll},
		{api.ActivityPlan, a.Plan},
		{api.ActivityObserve, a.Observe},
		{api.ActivityApply, a.Apply},
		{api.ActivityUninstall, a.Uninstall},
		{api.ActivityListClusterWorkflows, a.ListClusterWorkflows},
		{api.ActivityNotifyGitRepos, a.NotifyGitRepos},
		{api.ActivityLeavingHolders, a.LeavingHolders},
		{api.ActivityPrepare, a.Prepare},
		{api.ActivityReadContent, a.ReadContent},
		{api.ActivityAgentDesired, a.AgentDesired},
		{api.ActivityGrantRemoval, a.GrantRemoval},
		{api.ActivityDiff, a.Diff},
	} {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}

// RegisterAgent registers what a flotilla-agent runs for its cluster: the activities that touch it.
func (a *Activities) RegisterAgent(r Registry) {
	for _, act := range []struct {
		name string
		fn   any
	}{
		{api.ActivityObserve, a.Observe},
		{api.ActivityApply, a.Apply},
		{api.ActivityUninstall, a.Uninstall},
		{api.ActivityKeepAgent, a.KeepAgent},
		{api.ActivityDiff, a.Diff},
	} {
		r.RegisterActivityWithOptions(act.fn, activity.RegisterOptions{Name: act.name})
	}
}
