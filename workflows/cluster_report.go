package workflows

import (
	"fmt"
	"time"

	"github.com/flotilla-gitops/flotilla/api"
	"go.temporal.io/sdk/workflow"
)

// report signals the GitRepo workflow when the status changed, and mirrors it in search attributes and
// the Web UI's current details.
func (r *clusterRun) report(ctx workflow.Context, removed bool) {
	st := r.carry.Status
	fp := fingerprint(st, removed)
	if fp == r.carry.LastReported {
		return
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx,
		searchState.ValueSet(st.State), searchCommit.ValueSet(st.Commit),
		searchHasError.ValueSet(st.State == api.StateErrApplied))
	workflow.SetCurrentDetails(ctx, clusterDetails(st))
	parent := r.in.Target.Key().WorkflowID()
	err := workflow.SignalExternalWorkflow(ctx, parent, "", api.SignalClusterReport,
		api.ClusterReport{Cluster: r.in.Target.Cluster, Status: st, Removed: removed}).Get(ctx, nil)
	if err != nil {
		// The GitRepo may be continuing as new or gone; the next change reports again.
		workflow.GetLogger(ctx).Warn("status report not delivered", "gitRepo", r.in.Target.Key().String(), "error", err)
		return
	}
	r.carry.LastReported = fp
}

// fingerprint ignores timestamps so an unchanged status is never re-sent.
func fingerprint(st api.ClusterStatus, removed bool) string {
	st.LastChecked, st.LastSeen = time.Time{}, time.Time{}
	return hashOf(struct {
		S api.ClusterStatus
		R bool
	}{st, removed})
}

func clusterDetails(st api.ClusterStatus) string {
	d := fmt.Sprintf("**%s** on cluster `%s` at commit `%s`", st.State, st.Name, api.ShortCommit(st.Commit))
	if st.Message != "" {
		d += "\n\n" + st.Message
	}
	return d
}
