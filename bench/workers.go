package bench

import (
	"context"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// deploy-50x50-2workers: deploy-50x50's shape deployed by two flotilla-worker processes polling the same
// Temporal and task queue, against one worker in the same benchmark run. It shows that workers scale out
// by sharing a queue (nothing else divides the work between them), and what a second process buys on
// this machine.

const (
	experimentTwoWorkers = "deploy-50x50-2workers"
	// targetTwoWorkersRatio: two workers take no longer than one. On a 2-core machine running Temporal and
	// the API servers too, a second process has little CPU to add, so the gain may be small.
	targetTwoWorkersRatio = 1.0
)

// twoWorkers deploys deploy-50x50's shape with two workers and returns its row, its ratio taken against
// the one-worker deploy-50x50 row of this run, or, when that experiment was not run, against a one-worker
// rollout of the same shape made here first.
func (e *env) twoWorkers(ctx context.Context, name string) ([]Result, error) {
	n := e.scale(50, 10)
	shape := deployCase{experiment: name, clusters: n, bundles: n, cms: 1, simulate: true}
	baseline, source := e.oneWorkerBaseline(n)
	if baseline == nil {
		one := shape
		one.tag = "d50x50w1"
		res, _, err := e.deploy(ctx, one)
		if err != nil {
			return nil, fmt.Errorf("one-worker baseline: %w", err)
		}
		baseline, source = &res, "a one-worker rollout of this experiment"
	}

	two := shape
	two.tag, two.workers, two.keep = "d50x50w2", 2, true
	res, r, err := e.deploy(ctx, two)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	activities, workflowTasks, err := r.workerTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: counting each worker's tasks: %w", two.tag, err)
	}
	res.WorkerActivities, res.WorkerWorkflowTasks = activities, workflowTasks
	// A worker that did nothing means the queue was not shared: the row would time one worker twice.
	if err := everyWorkerWorked(activities); err != nil {
		return nil, fmt.Errorf("%s: %w", two.tag, err)
	}
	res.OneWorkerSeconds = ptr(baseline.FlotillaSeconds)
	res.Ratio = ptr(round(res.FlotillaSeconds/baseline.FlotillaSeconds, 2))
	res.Notes = "1 worker: " + source
	e.logf("  %s: 2 workers Ready in %.2fs against %.2fs for 1 (ratio %.2f); activities per worker %s, workflow tasks %s",
		name, res.FlotillaSeconds, baseline.FlotillaSeconds, *res.Ratio, joinCounts(activities), joinCounts(workflowTasks))
	return []Result{res}, nil
}

// oneWorkerBaseline is this run's deploy-50x50 row of n clusters, if that experiment ran and succeeded.
func (e *env) oneWorkerBaseline(n int) (*Result, string) {
	for _, r := range e.results["deploy-50x50"] {
		if r.Clusters == n && !r.Failed && r.FlotillaSeconds > 0 {
			return &r, "deploy-50x50 of this run"
		}
	}
	return nil, ""
}

// everyWorkerWorked fails unless each worker completed at least one activity.
func everyWorkerWorked(activities []int64) error {
	for i, n := range activities {
		if n == 0 {
			return fmt.Errorf("worker %d of %d completed no activity (activities per worker %s): the task queue was not shared",
				i+1, len(activities), joinCounts(activities))
		}
	}
	return nil
}

func joinCounts(counts []int64) string {
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprint(c)
	}
	return strings.Join(parts, "/")
}

// workerTasks counts, from the history of every workflow execution on the run's Temporal, the activities
// and workflow tasks each current worker completed, in the order of r.workers. A local activity (Observe
// is one) has no task of its own: it counts for the worker whose workflow task recorded its marker.
// Reading histories costs the workers nothing, unlike turning on their metrics for one row only.
func (r *run) workerTasks(ctx context.Context) (activities, workflowTasks []int64, err error) {
	acts, wfts := map[string]int64{}, map[string]int64{}
	var token []byte
	for {
		resp, err := r.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			return nil, nil, err
		}
		for _, ex := range resp.GetExecutions() {
			if err := r.countTasks(ctx, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId(), acts, wfts); err != nil {
				return nil, nil, err
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	pids := make([]int, len(r.workers))
	for i, w := range r.workers {
		pids[i] = w.PID()
	}
	return byWorker(acts, pids), byWorker(wfts, pids), nil
}

// countTasks adds one execution's completed activities and workflow tasks to the counts by identity.
func (r *run) countTasks(ctx context.Context, workflowID, runID string, acts, wfts map[string]int64) error {
	it := r.client.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	completedBy := map[int64]string{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return fmt.Errorf("history of %s: %w", workflowID, err)
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			completedBy[ev.GetEventId()] = a.GetIdentity()
			wfts[a.GetIdentity()]++
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
			acts[a.GetIdentity()]++
		}
		if m := ev.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "LocalActivity" && m.GetFailure() == nil {
			acts[completedBy[m.GetWorkflowTaskCompletedEventId()]]++
		}
	}
	return nil
}

// byWorker folds counts by identity into counts by worker: the SDK's default identity starts with the
// process ID ("<pid>@<host>@"). Identities of no listed process (a killed generation) are left out.
func byWorker(counts map[string]int64, pids []int) []int64 {
	out := make([]int64, len(pids))
	for identity, n := range counts {
		for i, pid := range pids {
			if strings.HasPrefix(identity, fmt.Sprintf("%d@", pid)) {
				out[i] += n
			}
		}
	}
	return out
}
