package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/flotilla-gitops/flotilla/api"
	"github.com/flotilla-gitops/flotilla/internal/workeropts"
	"github.com/flotilla-gitops/flotilla/tests/env/tempdev"
)

// The orchestration floor: Flotilla's workflow shape with nothing inside. A parent starts one child per
// cluster, at most a rollout window of them unreported at a time; each child runs one local activity
// (Observe's place), one activity (Apply's place), signals the parent (the status report) and waits on
// a timer (the next check). The activities do nothing, there is no Kubernetes and no Helm: what it
// costs is what Temporal and the SDK cost for this shape on this machine, the part of a deployment's
// time no change to Flotilla's own code can remove while it keeps one workflow per cluster.

const (
	floorTaskQueue = "bench-floor"
	floorReport    = "report"
)

// FloorInput is the floor parent's input.
type FloorInput struct {
	Clusters int
	Window   int
}

// FloorChildInput is a floor child's input.
type FloorChildInput struct {
	Parent string
	Index  int
}

// FloorParent starts the children and returns once every one has reported.
func FloorParent(ctx workflow.Context, in FloorInput) error {
	reports := workflow.GetSignalChannel(ctx, floorReport)
	parent := workflow.GetInfo(ctx).WorkflowExecution.ID
	started, reported := 0, 0
	for reported < in.Clusters {
		for started < in.Clusters && started-reported < in.Window {
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID:        fmt.Sprintf("%s/cluster-%d", parent, started),
				ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
			})
			workflow.ExecuteChildWorkflow(cctx, FloorChild, FloorChildInput{Parent: parent, Index: started})
			started++
		}
		var index int
		reports.Receive(ctx, &index)
		reported++
		for reports.ReceiveAsync(&index) {
			reported++
		}
	}
	return nil
}

// FloorChild is a cluster workflow with no work in its activities.
func FloorChild(ctx workflow.Context, in FloorChildInput) error {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
	if err := workflow.ExecuteLocalActivity(lctx, floorObserve, in.Index).Get(ctx, nil); err != nil {
		return err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	if err := workflow.ExecuteActivity(actx, floorApply, in.Index).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.SignalExternalWorkflow(ctx, in.Parent, "", floorReport, in.Index).Get(ctx, nil); err != nil {
		return err
	}
	return workflow.Sleep(ctx, time.Hour)
}

func floorObserve(_ context.Context, index int) (int, error) { return index, nil }

func floorApply(_ context.Context, index int) (int, error) { return index, nil }

// floorAt is the orchestration floor at n clusters, measured once per run.
func (e *env) floorAt(ctx context.Context, n int) (Result, error) {
	if r, ok := e.floors[n]; ok {
		return r, nil
	}
	r, err := e.orchestrationFloor(ctx, n)
	if err == nil {
		e.floors[n] = r
	}
	return r, err
}

// againstFloor records on a deployment row the orchestration floor at its number of clusters, measured in
// this run, and what the deployment took above the slower of its direct loop and that floor. A floor that
// could not be measured is said in the row's notes; the deployment's own figures stand.
func (e *env) againstFloor(ctx context.Context, r *Result) {
	if e.cfg.NoFloor {
		return
	}
	floor, err := e.floorAt(ctx, r.Clusters)
	if err != nil {
		e.logf("orchestration floor at %d clusters: %v", r.Clusters, err)
		r.Notes = strings.TrimPrefix(r.Notes+"; orchestration floor not measured: "+truncate(err.Error(), 200), "; ")
		return
	}
	withOverhead(r, floor)
}

// withOverhead records on a deployment row the floor at its size, with its CPU, and what the deployment
// took above the slower of its direct loop and that floor: no code with this workflow shape takes less.
func withOverhead(r *Result, floor Result) {
	r.FloorSeconds = floor.FloorSeconds
	r.FloorCPUSeconds = ptr(round(floor.WorkerCPUSeconds+floor.TemporalCPUSeconds, 2))
	bound := *floor.FloorSeconds
	if r.DirectSeconds != nil && *r.DirectSeconds > bound {
		bound = *r.DirectSeconds
	}
	r.OverheadSeconds = ptr(round(r.FlotillaSeconds-bound, 2))
}

// orchestrationFloor times the empty shape for n clusters on a fresh Temporal dev server configured as
// for every other experiment, with an in-process worker sized as flotilla-worker is.
func (e *env) orchestrationFloor(ctx context.Context, n int) (Result, error) {
	res := Result{Experiment: "orchestration-floor", Clusters: n}
	dir := filepath.Join(e.dir, "runs", fmt.Sprintf("floor%d", n))
	tmp, err := tempdev.Start(ctx, tempdev.Options{Bin: filepath.Join(e.cfg.BinDir, "temporal"), Dir: filepath.Join(dir, "temporal"),
		Headless: true, SearchAttributes: api.SearchAttributes, LogFile: filepath.Join(dir, "temporal.log"),
		DynamicConfig: e.cfg.TemporalDynamicConfig})
	if err != nil {
		return res, err
	}
	defer func() { _ = tmp.Stop() }()
	c, err := client.Dial(client.Options{HostPort: tmp.Address(), Logger: sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return res, err
	}
	defer c.Close()
	w := worker.New(c, floorTaskQueue, workeropts.Options(workeropts.DefaultMaxConcurrentActivities))
	w.RegisterWorkflow(FloorParent)
	w.RegisterWorkflow(FloorChild)
	w.RegisterActivity(floorObserve)
	w.RegisterActivity(floorApply)
	if err := w.Start(); err != nil {
		return res, err
	}
	defer w.Stop()

	// The first workflow on a fresh server waits for its task queue to be made and the worker's pollers to
	// reach it; a deployment's server has served the clusters' registrations by the time it is measured.
	// The floor's is warmed the same way, or at a few clusters it would measure the server's start.
	warm, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "floor-warm", TaskQueue: floorTaskQueue},
		FloorParent, FloorInput{Clusters: 1, Window: api.DefaultRolloutWindow})
	if err != nil {
		return res, err
	}
	wctx, cancelWarm := context.WithTimeout(ctx, time.Minute)
	defer cancelWarm()
	if err := warm.Get(wctx, nil); err != nil {
		return res, fmt.Errorf("warming the floor's server: %w", err)
	}

	r := &run{e: e, temporal: tmp}
	before, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	// Timed on its own clock: a snapshot reads every API server's metrics, which takes longer than the
	// whole shape at a few clusters.
	start := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("floor-%d", n), TaskQueue: floorTaskQueue},
		FloorParent, FloorInput{Clusters: n, Window: api.DefaultRolloutWindow})
	if err != nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	if err := run.Get(wctx, nil); err != nil {
		return res, fmt.Errorf("floor parent for %d clusters: %w", n, err)
	}
	took := time.Since(start)
	after, err := r.snapshot(ctx)
	if err != nil {
		return res, err
	}
	d := diff(before, after)
	res.FloorSeconds = ptr(round(took.Seconds(), 2))
	res.TemporalCPUSeconds = round(d.temporal, 2)
	// The worker runs in this process, which does nothing else meanwhile.
	res.WorkerCPUSeconds = round(d.bench, 2)
	res.Notes = fmt.Sprintf("%.3f CPU s per cluster", (d.bench+d.temporal)/float64(n))
	return res, nil
}
