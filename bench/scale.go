package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	querypb "go.temporal.io/api/query/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/proto"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/parallel"
	"github.com/flotilla-gitops/flotilla/tests/env/devenv"
)

// fanout-10000 (`make bench-scale`, not part of `make bench`): one GitRepo of one bundle deployed to
// thousands of simulated clusters on real Temporal and API servers, at the product's own check interval,
// then left idle for a few check intervals, then rolled out to a new commit. It measures what a GitRepo of
// that size costs and how close it comes to Temporal's limits: time to all Ready, the worker's peak memory
// per cluster, Temporal actions per cluster per rollout and per idle interval, the longest history and the
// largest payload, and how long `flotilla status` takes to answer.
const (
	experimentFanout10000 = "fanout-10000"
	// scaleIdleIntervals of the product's default check interval (one minute) are measured idle.
	scaleIdleIntervals = 3
	scaleDeployTimeout = 2 * time.Hour
	// Temporal's limits (the server's defaults), printed beside the largest figures.
	temporalPayloadLimitBytes = 2 << 20
	temporalHistoryEventLimit = 51200
	temporalHistoryBytesLimit = 50 << 20
)

// ScaleExperiments are `make bench-scale`'s, run only when selected (or with --scale).
var ScaleExperiments = []string{experimentFanout10000}

// ScaleClustersEnv sets fanout-10000's cluster count, for a contributor's smaller run.
const ScaleClustersEnv = "BENCH_SCALE_CLUSTERS"

// ScaleCheckIntervalEnv sets fanout-10000's check interval (a Go duration; empty: the product's default of
// one minute). Every simulated cluster's check costs the machine about 36 ms of CPU, most of it Temporal's
// and the simulated API servers' (docs/performance.md): at 10,000 clusters checked each minute that is six
// cores of harness, so a 2-core machine runs the experiment at 5m.
const ScaleCheckIntervalEnv = "BENCH_SCALE_CHECK_INTERVAL"

func scaleCheckInterval() (time.Duration, error) {
	v := os.Getenv(ScaleCheckIntervalEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("%s=%q: not a check interval of a second or more (a Go duration: 5m)", ScaleCheckIntervalEnv, v)
	}
	return d, nil
}

func (e *env) fanoutScale(ctx context.Context, name string) (Result, error) {
	n := e.scale(10000, 30)
	if v := os.Getenv(ScaleClustersEnv); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			return Result{}, fmt.Errorf("%s=%q: not a number of clusters", ScaleClustersEnv, v)
		}
	}
	interval, err := scaleCheckInterval()
	if err != nil {
		return Result{}, err
	}
	idleInterval, intervals := interval, scaleIdleIntervals
	if interval == 0 {
		idleInterval = time.Minute // the product's default
	}
	// A quick run keeps the harness working in minutes: a short check interval and two idle windows of it.
	if e.cfg.Quick {
		interval, idleInterval, intervals = 2*time.Second, 2*time.Second, 2
	}
	dc := deployCase{experiment: name, tag: "scale", clusters: n, bundles: 1, cms: 1, simulate: true,
		checkInterval: interval, keep: true, timeout: scaleDeployTimeout}
	res, r, err := e.deploy(ctx, dc)
	if err != nil {
		return res, err
	}
	defer r.stop()
	res.WorkerRSSMBPerCluster = ptr(round(res.WorkerPeakRSSMB/float64(n), 3))

	if res.StatusSeconds, res.StatusBytes, err = r.timeStatusCommand(ctx, dc.tag); err != nil {
		return res, err
	}
	e.logf("  %s: flotilla status answered in %.2fs (%d bytes)", dc.tag, *res.StatusSeconds, *res.StatusBytes)

	e.logf("  %s: all in sync; measuring %d check intervals of %s", dc.tag, intervals, idleInterval)
	if err := r.idleWindow(ctx, &res, n, idleInterval, intervals); err != nil {
		return res, err
	}

	// The rollout: a new commit, fetched at once (the sync signal a webhook sends), to every cluster again.
	repoDir := filepath.Join(e.dir, "repos", dc.tag)
	if err := os.WriteFile(filepath.Join(repoDir, bundlePath(0), "rollout.yaml"),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rollout\ndata:\n  round: \"2\"\n"), 0o644); err != nil {
		return res, err
	}
	commit, err := devenv.Commit(repoDir, "the rollout's commit")
	if err != nil {
		return res, err
	}
	before, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := r.client.SignalWorkflow(ctx, api.GitRepoWorkflowID(dc.tag), "", api.SignalSync, nil); err != nil {
		return res, fmt.Errorf("%s: sync signal: %w", dc.tag, err)
	}
	t1, err := r.waitAllReady(ctx, dc.tag, n, dc.bundles, commit, scaleDeployTimeout, nil)
	if err != nil {
		return res, fmt.Errorf("%s: rollout: %w", dc.tag, err)
	}
	after, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	d := diff(before, after)
	res.RolloutSeconds = ptr(round(t1.Sub(t0).Seconds(), 2))
	res.TemporalActionsPerClusterRollout = ptr(round(d.actions/float64(n), 2))
	res.WorkerPeakRSSMB = after.workerPeakMB
	res.WorkerRSSMBPerCluster = ptr(round(after.workerPeakMB/float64(n), 3))
	e.logf("  %s: rolled out to %d clusters in %.2fs, %.2f actions per cluster", dc.tag, n, *res.RolloutSeconds, *res.TemporalActionsPerClusterRollout)

	if err := r.largest(ctx, &res, dc.tag); err != nil {
		return res, err
	}
	return res, nil
}

// timeStatusCommand runs `flotilla status` on the GitRepo as a user would, and returns how long it took
// and how much it printed.
func (r *run) timeStatusCommand(ctx context.Context, gitRepo string) (*float64, *int, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(r.e.cfg.BinDir, "flotilla"), "--address", r.temporal.Address(), "--temporal-namespace", "default",
		"status", gitRepo)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("flotilla status %s: %v: %s", gitRepo, err, truncate(stderr.String(), 400))
	}
	return ptr(round(time.Since(t0).Seconds(), 2)), ptr(out.Len()), nil
}

// largest fills the longest history of every workflow of the run, and the largest payload the GitRepo
// handed to Temporal: an event of its histories (the continue-as-new input, a plan, a signal), its status
// query's answer or its memo.
func (r *run) largest(ctx context.Context, res *Result, gitRepo string) error {
	var token []byte
	var maxEvents, maxBytes int64
	var running []*commonpb.WorkflowExecution
	for {
		resp, err := r.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: 1000, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("listing workflows: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			if ex.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				// Visibility records a history's length when the run closes; a running one's is described.
				running = append(running, ex.GetExecution())
				continue
			}
			maxEvents = max(maxEvents, ex.GetHistoryLength())
			maxBytes = max(maxBytes, ex.GetHistorySizeBytes())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var mu sync.Mutex
	err := parallel.ForEach(len(running), 8, func(i int) error {
		d, err := r.client.DescribeWorkflowExecution(ctx, running[i].GetWorkflowId(), running[i].GetRunId())
		if err != nil {
			return fmt.Errorf("describing %s: %w", running[i].GetWorkflowId(), err)
		}
		mu.Lock()
		defer mu.Unlock()
		maxEvents = max(maxEvents, d.GetWorkflowExecutionInfo().GetHistoryLength())
		maxBytes = max(maxBytes, d.GetWorkflowExecutionInfo().GetHistorySizeBytes())
		return nil
	})
	if err != nil {
		return err
	}
	res.LargestHistoryEvents, res.LargestHistoryBytes = ptr(maxEvents), ptr(maxBytes)

	id := api.GitRepoWorkflowID(gitRepo)
	size, what := 0, ""
	consider := func(n int, where string) {
		if n > size {
			size, what = n, where
		}
	}
	runs, err := r.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id), PageSize: 1000})
	if err != nil {
		return fmt.Errorf("listing the runs of %s: %w", id, err)
	}
	for _, ex := range runs.GetExecutions() {
		it := r.client.GetWorkflowHistory(ctx, id, ex.GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return fmt.Errorf("history of %s: %w", id, err)
			}
			consider(proto.Size(ev), ev.GetEventType().String()) // as the Web UI names it: WorkflowExecutionContinuedAsNew
		}
	}
	q, err := r.client.WorkflowService().QueryWorkflow(ctx, &workflowservice.QueryWorkflowRequest{Namespace: "default",
		Execution: &commonpb.WorkflowExecution{WorkflowId: id}, Query: &querypb.WorkflowQuery{QueryType: api.QueryStatus}})
	r.queries.Add(1)
	if err != nil {
		return fmt.Errorf("status query of %s: %w", id, err)
	}
	consider(proto.Size(q.GetQueryResult()), "status query answer")
	desc, err := r.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return err
	}
	consider(proto.Size(desc.GetWorkflowExecutionInfo().GetMemo()), "memo")
	res.LargestPayloadBytes, res.LargestPayload = ptr(int64(size)), what
	return nil
}
